"""The floor under emukern's fp-pidbench figures: raw Unicorn, no emukern kernel.

What a getpid and an SVE access trap cost before any kernel work: the fp-pidbench ELF (the
upstream selftest or guest_asm/arm64/fp_pidbench.S) on a bare AArch64 ``max`` Unicorn, run in
this process like emukern's sample beside it, with one UC_HOOK_INTR hook installed as a bare
ctypes callback (libunicorn's register functions called directly: the cheapest Python hook, the
kind emukern's CPU uses) that does only what any emulator of this guest must:

* ``svc`` (intno 2): getpid returns 1, write returns its count (the bytes are kept, to check the
  run), exit / exit_group stop the run; any other number returns -ENOSYS.
* the SVE access trap (intno 1 while CPACR_EL1.ZEN traps): ZEN is opened (one system-register
  write) and the instruction re-executes; an undefined instruction with ZEN open stops the run.

The guest runs at EL1 (Unicorn's default exception level) with CPACR_EL1.ZEN = 00, which traps
SVE at EL1 as ZEN = 01 traps it at EL0 under emukern, so the first SVE instruction takes the trap
where emukern's do_sve_acc runs.  ``discard``: every svc that finds ZEN open closes it again (a
second register write), so the next SVE instruction traps again -- Linux 6.1's
sve_user_discard(), the model under which fp-pidbench's "SVE used per syscall" loop is one
getpid + SVE trap pair per iteration; the figure beside it runs emukern with ``--kernel
debian-12-arm64``, whose traps fall on the same instructions.  Without ``discard`` the one trap
is taken once, as under emukern's default policy (which then flushes on every syscall: kernel
work this floor leaves out).

Returns µs of host time (perf_counter around emu_start, as emukern's sample times Machine.run)
per getpid, with the getpid and trap counts.
"""
from __future__ import annotations

import ctypes
import time

from emukern.bench.stats import Unavailable

SP_TOP = 0x7000_0000
STACK = 0x10000
# system registers as the binding's CP_REG tuple wants them: (crn, crm, op0, op1, op2)
CPACR_EL1 = (1, 0, 3, 0, 2)
CPTR_EL3 = (1, 1, 3, 6, 2)
ZCR_EL1, ZCR_EL2, ZCR_EL3 = (1, 2, 3, 0, 0), (1, 2, 3, 4, 0), (1, 2, 3, 6, 0)
FPEN = 3 << 20                  # CPACR_EL1.FPEN = 11: FP/SIMD not trapped
ZEN = 3 << 16                   # CPACR_EL1.ZEN = 11: SVE not trapped (00: trapped at EL0 and EL1)
NR_WRITE, NR_EXIT, NR_EXIT_GROUP, NR_GETPID = 64, 93, 94, 172
ENOSYS = 38


def raw_pidbench_us(elf: object, argv: list[str] | None = None, discard: bool = False,
                    vl: int = 512) -> tuple[float, int, int, bytes]:
    """(µs per getpid, getpid calls, SVE traps taken, what the guest wrote) of one run."""
    try:
        from unicorn import UC_HOOK_INTR, UC_PROT_ALL
        from unicorn import arm64_const as A
        from unicorn.unicorn_py3.unicorn import uclib
    except ImportError as exc:          # (unicorn is a dependency: only a broken install)
        raise Unavailable(f"unicorn: {exc}") from exc
    from emukern.bench.selfbench import _raw_uc
    from emukern.machine.uc_internal import cp_reg_writer

    uc, img, _sym = _raw_uc("arm64", elf, A.UC_CPU_ARM64_MAX)     # type: ignore[arg-type]
    # the stack: argc, argv[], NULL, envp NULL, auxv AT_NULL, the strings above them
    uc.mem_map(SP_TOP - STACK, STACK, UC_PROT_ALL)
    args = [b"fp-pidbench"] + [a.encode() for a in (argv or [])]
    strs, ptrs = SP_TOP - 0x1000, []
    for a in args:
        uc.mem_write(strs, a + b"\0")
        ptrs.append(strs)
        strs += len(a) + 1
    sp = SP_TOP - 0x2000
    uc.mem_write(sp, b"".join(x.to_bytes(8, "little") for x in [len(args), *ptrs, 0, 0, 0, 0]))
    uc.reg_write(A.UC_ARM64_REG_SP, sp)
    uc.reg_write(A.UC_ARM64_REG_CP_REG, (*CPTR_EL3, uc.reg_read(A.UC_ARM64_REG_CP_REG, CPTR_EL3) | (1 << 8)))
    for z in (ZCR_EL2, ZCR_EL3):
        uc.reg_write(A.UC_ARM64_REG_CP_REG, (*z, 0xF))
    uc.reg_write(A.UC_ARM64_REG_CP_REG, (*ZCR_EL1, vl // 128 - 1))
    cpacr = cp_reg_writer(uc, (3, 0, 1, 0, 2))      # (op0, op1, crn, crm, op2)
    cpacr(FPEN)                                       # SVE trapped until the first use

    uh = uc._uch
    rr = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(uclib.uc_reg_read, ctypes.c_void_p).value)
    rw = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(uclib.uc_reg_write, ctypes.c_void_p).value)
    v = ctypes.c_uint64()
    pv = ctypes.byref(v)
    X = [getattr(A, f"UC_ARM64_REG_X{i}") for i in range(3)]
    X8 = A.UC_ARM64_REG_X8
    st = {"zen": False, "n": 0, "traps": 0}
    out = bytearray()

    def cb(_h: int, intno: int, _u: int) -> None:
        if intno == 2:
            rr(uh, X8, pv)
            nr = v.value
            if nr == NR_GETPID:
                v.value = 1
                st["n"] += 1
            elif nr == NR_WRITE:
                rr(uh, X[1], pv)
                buf = v.value
                rr(uh, X[2], pv)
                out.extend(uc.mem_read(buf, v.value))
            elif nr in (NR_EXIT, NR_EXIT_GROUP):
                uc.emu_stop()
                return
            else:
                v.value = -ENOSYS & (2**64 - 1)
            rw(uh, X[0], pv)
            if discard and st["zen"]:
                cpacr(FPEN)                  # sve_user_discard: the next SVE instruction traps
                st["zen"] = False
        elif intno == 1 and not st["zen"]:
            cpacr(FPEN | ZEN)                # the SVE access trap: open SVE, re-execute
            st["zen"] = True
            st["traps"] += 1
        else:
            uc.emu_stop()                    # anything else: not this guest
            st["bad"] = intno

    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)(cb)
    hh = ctypes.c_size_t()
    if uclib.uc_hook_add(uh, ctypes.byref(hh), UC_HOOK_INTR, ctypes.cast(fn, ctypes.c_void_p), None,
                         ctypes.c_uint64(1), ctypes.c_uint64(0)):
        raise RuntimeError("uc_hook_add failed")
    t = time.perf_counter()
    uc.emu_start(img.entry, 0)
    dt = time.perf_counter() - t
    if "bad" in st or not st["n"]:
        raise RuntimeError(f"raw fp-pidbench floor: the run stopped on exception {st.get('bad')} "
                           f"after {st['n']} getpid calls")
    return dt / st["n"] * 1e6, st["n"], st["traps"], bytes(out)
