"""The floor under emukern's signal round-trip figure (issue 12): raw Unicorn, no emukern kernel.

sig_loop.S (both arches) installs a SIGUSR1 handler, then loops kill(getpid(), SIGUSR1); the empty
handler returns through a sigreturn trampoline and rt_sigreturn resumes the loop.  Here the same
ELF runs in a bare Unicorn whose one INTR hook does the least any kernel on Unicorn must do for
that, with no bookkeeping of its own:

* kill: read the registers a frame saves in one libunicorn batch (riscv64: pc, x1-x31, f0-f31,
  fcsr; arm64: x0-x30, sp, pc, nzcv, v0-v31, fpsr, fpcr), pack them into a frame of the kernel's
  size (riscv64 ``struct rt_sigframe`` 1088 bytes; arm64 4688: siginfo, ucontext with the 4096
  bytes of ``__reserved``, the frame record), write it below sp in one copy and enter the handler
  with one batch write (pc, the return register, sp, the three arguments);
* rt_sigreturn: read the frame in one copy, unpack it and write the saved registers back in one
  batch (the scalar ones; riscv64 also reads the F registers back and writes none, as they did not
  change; arm64 writes v0-v31, fpsr, fpcr too, as restore_fpsimd_context's reload does);
* rt_sigaction records the handler, getpid answers 1, exit_group stops the run.

So ``raw signal / raw null syscall`` (the null syscall of selfbench.raw_syscall_us, measured in the
same rounds) is the ratio a kernel would reach whose every Python line beyond these Unicorn calls
were free: the floor of the ≤ 3× target.  Nothing of emukern runs inside the loop.
"""
from __future__ import annotations

import ctypes
import struct
import time
from pathlib import Path
from typing import Any, Callable

from emukern.bench.raw_vsetvli import STACK_SIZE, STACK_TOP      # (the same initial stack)
TRAMP = 0x7FFE_0000_0000          # a page with the sigreturn trampoline (Linux: the vDSO's)

# the same numbers on both (asm-generic unistd.h); _other_syscall handles 134, 172, 94
NR = {"kill": 129, "rt_sigreturn": 139}
TRAMP_WORDS = {"riscv64": (0x08B00893, 0x00000073),      # li a7, 139; ecall
               "arm64": (0xD2801168, 0xD4000001)}        # mov x8, #139; svc #0
FRAME_SIZE = {"riscv64": 1088, "arm64": 4688}


class _Regs:
    """Register batches as emukern's CPU does them (Cpu.make_batch*): one uc_reg_read_batch /
    uc_reg_write_batch call through ctypes on preallocated arrays.  (The Python binding's own
    reg_read_batch spends ~10 µs in Python per 65 registers.)"""

    def __init__(self, uc: Any) -> None:
        from emukern.machine.uc_internal import handle, raw_fn
        self.uch = handle(uc)
        self.rrb, self.rwb, self.rr = raw_fn("uc_reg_read_batch"), raw_fn("uc_reg_write_batch"), raw_fn("uc_reg_read")
        self.keep: list[Any] = []
        self._v = ctypes.c_uint64()

    def _arrays(self, ids: list[int], width: int) -> tuple[Any, Any, Any]:
        n = len(ids)
        buf = (ctypes.c_char * (n * width))()
        ptrs = (ctypes.c_void_p * n)(*[ctypes.addressof(buf) + width * i for i in range(n)])
        cids = (ctypes.c_int * n)(*ids)
        self.keep.append((buf, ptrs, cids))
        return buf, ptrs, cids

    def reader(self, ids: list[int], width: int = 8) -> Callable[[], bytes]:
        buf, ptrs, cids = self._arrays(ids, width)
        rrb, uch, n = self.rrb, self.uch, len(ids)

        def read() -> bytes:
            rrb(uch, cids, ptrs, n)
            return buf.raw
        return read

    def writer(self, ids: list[int], width: int = 8) -> Callable[[bytes], None]:
        buf, ptrs, cids = self._arrays(ids, width)
        rwb, uch, n = self.rwb, self.uch, len(ids)

        def write(data: bytes) -> None:
            ctypes.memmove(buf, data, len(data))
            rwb(uch, cids, ptrs, n)
        return write

    def read1(self, regid: int) -> int:
        self.rr(self.uch, regid, ctypes.byref(self._v))
        return self._v.value


def _stack(uc: Any, argv: list[str]) -> tuple[int, memoryview, Any]:
    """argc, argv[], NULL, envp NULL, auxv AT_NULL, then the strings; the stack is host memory
    mapped into Unicorn (as emukern's address spaces are), written by slicing."""
    host = (ctypes.c_char * STACK_SIZE)()
    uc.mem_map_ptr(STACK_TOP - STACK_SIZE, STACK_SIZE, 3, ctypes.addressof(host))
    from emukern.bench.raw_vsetvli import write_argv
    return write_argv(uc, argv), memoryview(host).cast("B"), host




def _other_syscall(uc: Any, regs: _Regs, n: int, st: dict[str, int], a0: int, a1: int) -> None:
    """The loop's set-up and end: rt_sigaction records the handler, getpid answers 1,
    exit_group stops the run; anything else is -ENOSYS."""
    if n == 134:                                    # rt_sigaction
        st["handler"] = struct.unpack("<Q", uc.mem_read(regs.read1(a1), 8))[0]
        uc.reg_write(a0, 0)
    elif n == 172:                                  # getpid
        uc.reg_write(a0, 1)
    elif n == 94:                                   # exit_group
        st["exit_status"] = regs.read1(a0)
        uc.emu_stop()
    else:
        uc.reg_write(a0, -38 & (2**64 - 1))


def _riscv(uc: Any, sp0: int, mem: memoryview, st: dict[str, int]) -> Any:
    from unicorn import riscv_const as R
    regs = _Regs(uc)
    frame_ids = [R.UC_RISCV_REG_PC] + [R.UC_RISCV_REG_X0 + i for i in range(1, 32)] \
        + [R.UC_RISCV_REG_F0 + i for i in range(32)] + [R.UC_RISCV_REG_FCSR]
    read_frame = regs.reader(frame_ids)
    write_gprs = regs.writer(frame_ids[:32])
    read_fp = regs.reader(frame_ids[32:])
    write_fp = regs.writer(frame_ids[32:])
    entry = struct.Struct("<6Q")
    write_entry = regs.writer([R.UC_RISCV_REG_PC, R.UC_RISCV_REG_X1, R.UC_RISCV_REG_X2,
                               R.UC_RISCV_REG_X10, R.UC_RISCV_REG_X11, R.UC_RISCV_REG_X12])
    size = FRAME_SIZE["riscv64"]
    mc = 128 + 176                      # offsetof(rt_sigframe, uc.uc_mcontext)
    base = STACK_TOP - STACK_SIZE
    nr = NR
    a7, a0, a1, sp_reg = R.UC_RISCV_REG_A7, R.UC_RISCV_REG_A0, R.UC_RISCV_REG_A1, R.UC_RISCV_REG_SP

    def hook(_uc: Any, intno: int, _ud: Any) -> None:     # (_uc: the Uc, or its handle)
        n = regs.read1(a7)
        if n == nr["kill"]:
            raw = read_frame()          # pc, x1-x31, f0-f31, fcsr (8 bytes each)
            sp = int.from_bytes(raw[16:24], "little")
            frame = (sp - size) & ~15
            o = frame - base + mc
            mem[frame - base:frame - base + size] = bytes(size)
            mem[o:o + 256] = raw[:256]
            mem[o + 80:o + 88] = bytes(8)       # a0 = kill's return value, as the frame saves it
            mem[o + 256:o + 512] = raw[256:512]
            mem[o + 512:o + 516] = raw[512:516]
            write_entry(entry.pack(st["handler"], TRAMP, frame, 10, frame, frame + 128))
            st["delivered"] += 1
        elif n == nr["rt_sigreturn"]:
            st["returned"] += 1
            frame = regs.read1(sp_reg)
            o = frame - base + mc
            saved = bytes(mem[o:o + 516])
            write_gprs(saved[:256])
            fp = saved[256:516] + bytes(4)
            if read_fp() != fp:
                write_fp(fp)
        else:
            _other_syscall(uc, regs, n, st, a0, a1)
    uc.reg_write(sp_reg, sp0)
    return hook


def _arm64(uc: Any, sp0: int, mem: memoryview, st: dict[str, int]) -> Any:
    from unicorn import arm64_const as A
    regs = _Regs(uc)
    xs = [A.UC_ARM64_REG_X0 + i for i in range(29)] + [A.UC_ARM64_REG_X29, A.UC_ARM64_REG_X30]
    scalar = xs + [A.UC_ARM64_REG_SP, A.UC_ARM64_REG_PC, A.UC_ARM64_REG_NZCV]
    read_scalar, write_scalar = regs.reader(scalar), regs.writer(scalar)
    vids = [A.UC_ARM64_REG_Q0 + i for i in range(32)]
    read_v, write_v = regs.reader(vids, 16), regs.writer(vids, 16)
    ff = [A.UC_ARM64_REG_FPSR, A.UC_ARM64_REG_FPCR]
    read_ff, write_ff = regs.reader(ff), regs.writer(ff)
    entry = struct.Struct("<6Q")
    write_entry = regs.writer([A.UC_ARM64_REG_PC, A.UC_ARM64_REG_X30, A.UC_ARM64_REG_SP,
                               A.UC_ARM64_REG_X0, A.UC_ARM64_REG_X1, A.UC_ARM64_REG_X2])
    size = FRAME_SIZE["arm64"]
    sc = 128 + 176 + 8                          # sigcontext.regs (after fault_address)
    res = 128 + 176 + 288                       # sigcontext.__reserved: the fpsimd_context first
    base = STACK_TOP - STACK_SIZE
    nr = NR
    x8, x0, x1, sp_reg = A.UC_ARM64_REG_X8, A.UC_ARM64_REG_X0, A.UC_ARM64_REG_X1, A.UC_ARM64_REG_SP

    def hook(_uc: Any, intno: int, _ud: Any) -> None:     # (_uc: the Uc, or its handle)
        n = regs.read1(x8)
        if n == nr["kill"]:
            r = read_scalar()                   # x0-x30, sp, pc, nzcv (8 bytes each)
            sp = int.from_bytes(r[248:256], "little")
            frame = (sp - size) & ~15
            f = frame - base
            mem[f:f + size] = bytes(size)
            mem[f + sc:f + sc + 272] = r
            mem[f + sc:f + sc + 8] = bytes(8)    # x0 = kill's return value
            ffr = read_ff()
            mem[f + res + 8:f + res + 12] = ffr[0:4]
            mem[f + res + 12:f + res + 16] = ffr[8:12]
            mem[f + res + 16:f + res + 528] = read_v()
            write_entry(entry.pack(st["handler"], TRAMP, frame, 10, frame, frame + 128))
            st["delivered"] += 1
        elif n == nr["rt_sigreturn"]:
            st["returned"] += 1
            f = regs.read1(sp_reg) - base
            write_scalar(bytes(mem[f + sc:f + sc + 272]))
            write_ff(bytes(mem[f + res + 8:f + res + 12]) + bytes(4) + bytes(mem[f + res + 12:f + res + 16]) + bytes(4))
            write_v(bytes(mem[f + res + 16:f + res + 528]))
        else:
            _other_syscall(uc, regs, n, st, x0, x1)
    uc.reg_write(sp_reg, sp0)
    return hook


def _add_intr_hook(uc: Any, hook: Callable[[Any, int, Any], None], direct: bool) -> Any:
    """The INTR hook through the binding's hook_add, or (``direct``) as a bare ctypes callback
    (raw_vsetvli.add_intr_hook), the way emukern's CPU installs its own (Cpu.hook_intr): the
    binding's wrapper around every callback is part of a trap's cost, and emukern does not pay it.
    Returns what must stay alive while the hook is installed."""
    if not direct:
        from unicorn import UC_HOOK_INTR
        return uc.hook_add(UC_HOOK_INTR, hook)
    from emukern.bench.raw_vsetvli import add_intr_hook
    return add_intr_hook(uc, hook)


def raw_signal_us(arch: str, elf: Path, n: int, stats: dict[str, int] | None = None,
                  direct: bool = False) -> float:
    """µs of host time per signal round trip of sig_loop.S (``n`` of them) in the bare Unicorn;
    ``stats`` (when given) gets the deliveries, rt_sigreturns and the exit status it saw;
    ``direct``: the hook is a bare ctypes callback (see _add_intr_hook)."""
    from unicorn import UC_PROT_EXEC, UC_PROT_READ
    from emukern.bench.selfbench import _raw_uc
    uc, img, _sym = _raw_uc(arch, elf)
    sp, mem, host = _stack(uc, ["sig_loop", str(n)])     # (host: the stack's memory, kept alive)
    uc.mem_map(TRAMP, 0x1000, UC_PROT_READ | UC_PROT_EXEC)
    uc.mem_write(TRAMP, b"".join(w.to_bytes(4, "little") for w in TRAMP_WORDS[arch]))
    st = stats if stats is not None else {}
    st.update(handler=0, delivered=0, returned=0, exit_status=-1)
    hook = (_riscv if arch == "riscv64" else _arm64)(uc, sp, mem, st)
    keep = _add_intr_hook(uc, hook, direct)
    t = time.perf_counter()
    uc.emu_start(img.entry, 0)
    dt = time.perf_counter() - t
    del mem, host, keep
    return dt / n * 1e6
