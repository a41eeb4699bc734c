"""The floor under emukern's vsetvli + getppid figure (issue 19): raw Unicorn, no emukern kernel.

Run as a whole process, like ``emukern run`` and ``qemu-riscv64`` in that figure::

    python -m emukern.bench.raw_vsetvli [--vlen 512] ELF [ARGS...]

It maps the static ELF's PT_LOAD segments and a stack with argc/argv into a bare Unicorn RV64
hart at U-mode and runs it with one UC_HOOK_INTR hook doing the least any emulator of this guest
must do on Unicorn 2.1.4, which has no vector unit:

* illegal instruction (intno 2): the word at the trapping PC must be a vsetvli/vsetivli; set
  rd = vl = min(AVL, VLMAX) for its vtype (VLMAX when rs1 = x0) and step over it.
  The decoded action is cached per PC (the guest never rewrites its code).  Anything else stops
  the run with status 132 (the SIGILL a kernel would give).
* ecall (intno 8): getppid returns 1, write copies the guest's bytes to stdout, exit/exit_group
  stop the run with the guest's status; any other number returns -ENOSYS.

``--direct`` installs the hook as a bare ctypes callback and reads/writes registers through
libunicorn's C functions without the binding's argument conversion, the two ways emukern's own
CPUs cut the binding's cost (emukern.machine.cpu_base): the floor for a Python hook at all.

``--native`` (implies ``--direct``) goes one step further, as emukern does since vsetvli is
executed by its machine's vector unit in C: the INTR hook is counter.c's ``ek_rvv_intr``, which
executes the vsetvli itself (the same C function emukern's RISC-V CPU installs, with VS Dirty
and no instruction counter) and calls the Python hook only for the ecalls: the floor for a
Python syscall path beside a C vsetvli.  It imports ``emukern.machine.counter`` (to load the
compiled library), nothing else.

Nothing else of emukern is imported (the package ``__init__`` files are empty), so its start-up
is Python's plus Unicorn's: the same that ``emukern run`` pays before its own.
"""
from __future__ import annotations

import struct
import sys
from typing import Any

PT_LOAD = 1
PAGE = 0x1000
STACK_TOP = 0x7FFF_0000_0000
STACK_SIZE = 0x10_0000
ENOSYS = 38


def _load(uc: Any, data: bytes) -> int:
    """Map the PT_LOAD segments of an ELF64 little-endian RISC-V executable; its entry point."""
    from unicorn import UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("raw_vsetvli: not an ELF64 little-endian file")
    entry, phoff = struct.unpack_from("<QQ", data, 24)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _pa, p_filesz, p_memsz, _al = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type != PT_LOAD or not p_memsz:
            continue
        start = p_vaddr & ~(PAGE - 1)
        end = (p_vaddr + p_memsz + PAGE - 1) & ~(PAGE - 1)
        prot = ((UC_PROT_READ if p_flags & 4 else 0) | (UC_PROT_WRITE if p_flags & 2 else 0)
                | (UC_PROT_EXEC if p_flags & 1 else 0))
        uc.mem_map(start, end - start, prot)
        uc.mem_write(p_vaddr, data[p_offset:p_offset + p_filesz])
    return entry


def _stack(uc: Any, argv: list[str]) -> int:
    """The initial stack: argc, argv[], NULL, envp NULL, auxv AT_NULL, then the strings."""
    uc.mem_map(STACK_TOP - STACK_SIZE, STACK_SIZE)
    return write_argv(uc, argv)


def write_argv(uc: Any, argv: list[str]) -> int:
    """Into the mapped stack below STACK_TOP: the strings, then argc, argv[], NULL, envp NULL,
    auxv AT_NULL; returns sp (also used by emukern.bench.raw_signal)."""
    strings = b""
    ptrs = []
    base = STACK_TOP - 0x1000
    for a in argv:
        ptrs.append(base + len(strings))
        strings += a.encode() + b"\0"
    uc.mem_write(base, strings)
    words = [len(argv), *ptrs, 0, 0, 0, 0]
    sp = (base - 8 * len(words)) & ~15
    uc.mem_write(sp, struct.pack(f"<{len(words)}Q", *words))
    return sp


def _vsetvl_action(word: int, vlen: int) -> tuple[int, int, int] | None:
    """(rd, rs1, vlmax) of a vsetvli/vsetivli word with a valid vtype (rs1 < 0: the vsetivli
    immediate AVL -rs1-1), else None."""
    if word & 0x7F != 0x57 or (word >> 12) & 7 != 7:
        return None
    if word >> 31 == 0:
        zimm, imm_avl = (word >> 20) & 0x7FF, False
    elif word >> 30 == 3:
        zimm, imm_avl = (word >> 20) & 0x3FF, True
    else:
        return None                   # vsetvl (vtype from a register): not in this guest
    sew, lmul = 8 << ((zimm >> 3) & 7), zimm & 7
    if sew > 64 or lmul == 4 or zimm >> 8 or (lmul > 4 and sew > 64 >> (8 - lmul)):
        return None                   # vill (ELEN 64: SEW <= LMUL * ELEN); not in this guest
    vlmax = (vlen // sew) << lmul if lmul < 4 else (vlen // sew) >> (8 - lmul)
    rd, rs1 = (word >> 7) & 0x1F, (word >> 15) & 0x1F
    return rd, (-rs1 - 1 if imm_avl else rs1), vlmax


def _direct_regs(uc: Any) -> tuple[Any, Any]:
    """reg_read/reg_write straight through libunicorn's C functions (no argtypes conversion,
    the GIL kept across the call), the way emukern's CPUs access registers
    (emukern.machine.cpu_base)."""
    import ctypes
    from emukern.machine.uc_internal import handle, raw_fn
    rr, rw = raw_fn("uc_reg_read", keep_gil=True), raw_fn("uc_reg_write", keep_gil=True)
    h, v = handle(uc), ctypes.c_uint64()
    pv = ctypes.byref(v)

    def rd(regid: int) -> int:
        rr(h, regid, pv)
        return v.value

    def wr(regid: int, value: int) -> None:
        v.value = value & 0xFFFF_FFFF_FFFF_FFFF
        rw(h, regid, pv)
    return rd, wr


def add_intr_hook(uc: Any, hook: Any) -> Any:
    """The INTR hook as a bare ctypes callback registered with uc_hook_add (the binding's
    dispatcher frames skipped), as emukern's CPUs install theirs.  ``hook(handle, intno, _)``
    gets the engine's handle, not the Uc object.  Returns the callback, which must stay alive
    while the hook is installed (also used by emukern.bench.raw_signal)."""
    from emukern.machine.uc_internal import add_intr_callback
    return add_intr_callback(uc, hook)


def add_native_intr_hook(uc: Any, hook: Any, vlen: int) -> Any:
    """counter.c's ek_rvv_intr as the only INTR hook: vsetvli/vsetivli/vsetvl in C, everything
    else to ``hook(handle, intno, _)`` (a bare ctypes callback, as :func:`add_intr_hook`).  Returns
    what must stay alive while the hook is installed."""
    import ctypes
    from unicorn import UC_HOOK_INTR
    from unicorn import riscv_const as R
    from emukern.machine.counter import RvvStruct, native_error, native_rvv_intr
    from emukern.machine.uc_internal import hook_add_native
    fn = native_rvv_intr()
    if fn is None:
        raise SystemExit(f"raw_vsetvli --native: the native library is unavailable ({native_error()})")
    cb = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)(hook)
    s = RvvStruct()
    s.on, s.vs, s.vlen, s.cost = 1, 3, vlen, 1          # VS Dirty: V is on from the start
    s.pc_reg, s.x0_reg = R.UC_RISCV_REG_PC, R.UC_RISCV_REG_X0
    s.py = ctypes.cast(cb, ctypes.c_void_p).value
    if hook_add_native(uc, UC_HOOK_INTR, fn, ctypes.cast(ctypes.pointer(s), ctypes.c_void_p))[0]:
        raise OSError("uc_hook_add failed")
    return cb, s


def main(args: list[str]) -> int:
    from unicorn import UC_ARCH_RISCV, UC_HOOK_INTR, UC_MODE_RISCV64, Uc
    from unicorn import riscv_const as R
    vlen = 256
    direct = native = False
    while args[:1] in (["--vlen"], ["--direct"], ["--native"]):
        if args[0] == "--direct":
            direct, args = True, args[1:]
        elif args[0] == "--native":
            direct = native = True
            args = args[1:]
        else:
            vlen, args = int(args[1]), args[2:]
    if not args:
        raise SystemExit("usage: python -m emukern.bench.raw_vsetvli [--vlen N] [--direct|--native] ELF [ARGS...]")
    with open(args[0], "rb") as f:
        data = f.read()
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
    entry = _load(uc, data)
    uc.reg_write(R.UC_RISCV_REG_SP, _stack(uc, args))
    uc.reg_write(R.UC_RISCV_REG_PRIV, 0)
    X = [R.UC_RISCV_REG_X0 + i for i in range(32)]
    PC, A0, A1, A2, A7 = R.UC_RISCV_REG_PC, X[10], X[11], X[12], X[17]
    rd_reg, wr_reg = uc.reg_read, uc.reg_write
    if direct:
        rd_reg, wr_reg = _direct_regs(uc)
    actions: dict[int, tuple[int, int, int] | None] = {}
    status = [0]
    out = sys.stdout.buffer

    def hook(_uc: Any, intno: int, _ud: Any) -> None:     # (_uc: the Uc, or its handle)
        if intno == 8:                          # ecall; the PC is already past it
            nr = rd_reg(A7)
            if nr == 173:                       # getppid
                wr_reg(A0, 1)
            elif nr == 64:                      # write
                buf = uc.mem_read(rd_reg(A1), rd_reg(A2))
                out.write(buf)
                wr_reg(A0, len(buf))
            elif nr in (93, 94):                # exit, exit_group
                status[0] = rd_reg(A0) & 0xFF
                uc.emu_stop()
            else:
                wr_reg(A0, -ENOSYS & 0xFFFF_FFFF_FFFF_FFFF)
            return
        pc = rd_reg(PC) - 4                     # the hook sees the trapping PC + 4
        act = actions.get(pc, False)
        if act is False:
            word = int.from_bytes(uc.mem_read(pc, 4), "little") if intno == 2 else 0
            act = actions[pc] = _vsetvl_action(word, vlen)
        if act is None:
            status[0] = 128 + 4                 # SIGILL
            uc.emu_stop()
            return
        rd, rs1, vlmax = act
        if rs1 < 0:
            vl = min(-rs1 - 1, vlmax)
        elif rs1:
            vl = min(rd_reg(X[rs1]), vlmax)
        else:
            vl = vlmax                          # (x0, x0 would keep vl: this guest never does it)
        if rd:
            wr_reg(X[rd], vl)
        # nothing to write back to the PC: Unicorn resumes after the trapping word (measured,
        # see emukern.machine.cpu_riscv), which is exactly stepping over the vsetvli

    if native:
        keep = add_native_intr_hook(uc, hook, vlen)
    else:
        keep = add_intr_hook(uc, hook) if direct else uc.hook_add(UC_HOOK_INTR, hook)
    uc.emu_start(entry, 0)
    del keep
    out.flush()
    return status[0]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
