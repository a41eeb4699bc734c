"""Raw Unicorn's floor for fp-pidbench (guest_asm/arm64/fp_pidbench.S, issue 19): what a getpid
costs when the trap hook does only the minimum, with no kernel model around it.

The guest's four loops run unchanged (SVE never used / used once / before every syscall / no SVE
after SVE) on a bare AArch64 ``max`` Unicorn at EL1 with SVE enabled (so nothing traps but svc and
brk).  The INTR hook answers getpid (x0 = a pid) and, from the guest's first ``rdvl`` on -- where
the kernel sets TIF_SVE -- does what each syscall of a TIF_SVE task needs at the least: it sends
the PC through the real ``sve_flush_live`` words (32 ``mov v``, 16 ``pfalse``, ``wrffr``) ending
in a ``brk``, whose hook puts the user PC back, optionally followed by the TLB flush emukern needs
so that EL0 cannot read the execute-only stub page afterwards.  Mode ``native`` is emukern's own
way since issue 19's native flush return (emukern/machine/native/a64_stub.c): the Python hook only
answers getpid and arms the flush; a C INTR hook after it enters the words, and a C code hook on
their closing ``brk`` returns to the user PC (no second Python callback), on Unicorn's virtual TLB
with the fill hook that keeps the stub page unreadable to EL0 without a TLB flush.

    python tools/raw_pidbench_floor.py [ITERS] [--reps N]

prints µs per getpid (averaged over all four loops, as the bench does) for each mode and hook
style: ``binding`` (the unicorn package's hook_add/reg_read, what the bench's raw syscall uses)
and ``ctypes`` (libunicorn called directly, as emukern's CPU does): the median of N runs.
"""
from __future__ import annotations

import ctypes
import statistics
import sys
import time

from unicorn import UC_HOOK_CODE, UC_HOOK_INTR, UC_HOOK_TLB_FILL, UC_PROT_ALL, UC_PROT_EXEC, Uc
from unicorn import arm64_const as A
from unicorn.unicorn_const import UC_CTL_IO_WRITE, UC_CTL_TLB_FLUSH, UC_TLB_VIRTUAL
from unicorn.unicorn_py3.unicorn import uclib

from emukern.bench.selfbench import _elf, _raw_uc
from emukern.kernel.arch.arm64.entry_fpsimd import STUB_WORDS

STUB = 0x3F_FFFF_0000
SP = 0x7000_0000
RDVL_X0_8 = 0x04BF5100            # rdvl x0, #8: the guest's first SVE instruction
TLB_FLUSH = UC_CTL_TLB_FLUSH | (UC_CTL_IO_WRITE << 30)
MODES = ("null", "flush", "flush+tlb", "native")


def _native_hooks(uc: Uc, words: list[int]) -> tuple[object, object]:
    """native/a64_stub.c's hooks on this Unicorn, on a stand-in for the instruction counter's
    fields they update (nothing here reads them): the INTR entry after the Python hook, the
    return on the flush's closing brk, and the virtual TLB's fill hook that keeps the stub page
    unreadable without a TLB flush (as emukern's arm64 CPU runs)."""
    from emukern.machine.cpu_arm64 import _native_stub_ret, _StubRet
    fns = _native_stub_ret()
    if fns is None:
        raise SystemExit("the native flush return could not be built (no C compiler?)")
    counter = (ctypes.c_uint64 * 8)()
    base = ctypes.addressof(counter)
    ret = _StubRet(*[base + 8 * i for i in range(8)], A.UC_ARM64_REG_PC, STUB, STUB + 0x10000)
    ud = ctypes.cast(ctypes.pointer(ret), ctypes.c_void_p)
    brk = STUB + 4 * (len(words) - 1)
    for kind, fn, lo, hi in ((UC_HOOK_INTR, fns[0], 1, 0), (UC_HOOK_CODE, fns[1], brk, brk),
                             (UC_HOOK_TLB_FILL, fns[2], 1, 0)):
        hh = ctypes.c_size_t()
        if uclib.uc_hook_add(uc._uch, ctypes.byref(hh), kind, fn, ud, ctypes.c_uint64(lo), ctypes.c_uint64(hi)):
            raise RuntimeError("uc_hook_add failed")
    uc.ctl_set_tlb_mode(UC_TLB_VIRTUAL)
    return ret, counter


def run(iters: int, mode: str, api: str) -> tuple[float, int, int]:
    """(µs per getpid, getpid calls, flush runs) of one run."""
    uc, img, _sym = _raw_uc("arm64", _elf("arm64", "fp_pidbench"), A.UC_CPU_ARM64_MAX)
    uc.mem_map(STUB, 0x10000, UC_PROT_EXEC)
    words = STUB_WORDS["sve_flush_live"]          # ... ending in brk #0xe4e
    uc.mem_write(STUB, b"".join(w.to_bytes(4, "little") for w in words))
    uc.mem_map(SP - 0x10000, 0x20000, UC_PROT_ALL)
    strs, ptrs = SP + 0x1000, []
    for a in (b"fp_pidbench\0", str(iters).encode() + b"\0", b"4\0"):
        uc.mem_write(strs, a)
        ptrs.append(strs)
        strs += 16
    uc.mem_write(SP, b"".join(x.to_bytes(8, "little") for x in [3, *ptrs, 0, 0]))
    uc.reg_write(A.UC_ARM64_REG_SP, SP)
    # SVE usable: CPTR_EL3.EZ, CPACR_EL1.FPEN = ZEN = 11
    cp = (1, 1, 3, 6, 2)
    uc.reg_write(A.UC_ARM64_REG_CP_REG, (*cp, uc.reg_read(A.UC_ARM64_REG_CP_REG, cp) | (1 << 8)))
    uc.reg_write(A.UC_ARM64_REG_CP_REG, (1, 0, 3, 0, 2, (3 << 20) | (3 << 16)))
    st = {"sve": False, "ret": 0, "n": 0, "stubs": 0}
    flush, tlb, native = mode != "null", mode == "flush+tlb", mode == "native"
    uh = uc._uch
    keep = []
    if api == "ctypes":
        rr = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(uclib.uc_reg_read, ctypes.c_void_p).value)
        rw = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(uclib.uc_reg_write, ctypes.c_void_p).value)
        v = ctypes.c_uint64()
        pv = ctypes.byref(v)
        PC, X8, X0 = A.UC_ARM64_REG_PC, A.UC_ARM64_REG_X8, A.UC_ARM64_REG_X0

        def cb(_h: int, intno: int, _u: int) -> None:
            if intno == 2:
                rr(uh, X8, pv)
                if v.value != 172:
                    uc.emu_stop()           # write / exit_group: the end of the guest
                    return
                v.value = 42
                rw(uh, X0, pv)
                st["n"] += 1
                if st["sve"] and native:
                    ret.entry = STUB                # armed: ek_a64_stub_enter does the rest
                    ret.length = len(words)
                    st["stubs"] += 1
                elif st["sve"] and flush:
                    rr(uh, PC, pv)
                    st["ret"] = v.value
                    st["stubs"] += 1
                    v.value = STUB
                    rw(uh, PC, pv)
            else:
                v.value = st["ret"]
                rw(uh, PC, pv)
                if tlb:
                    uclib.uc_ctl(uh, TLB_FLUSH)
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)(cb)
        keep.append(fn)
        hh = ctypes.c_size_t()
        if uclib.uc_hook_add(uh, ctypes.byref(hh), UC_HOOK_INTR, ctypes.cast(fn, ctypes.c_void_p), None,
                             ctypes.c_uint64(1), ctypes.c_uint64(0)):
            raise RuntimeError("uc_hook_add failed")
        if native:
            ret, counter = _native_hooks(uc, words)
            keep.append((ret, counter))
    else:
        def hook(uc: Uc, intno: int, _ud: object) -> None:
            if intno == 2:
                if uc.reg_read(A.UC_ARM64_REG_X8) != 172:
                    uc.emu_stop()
                    return
                uc.reg_write(A.UC_ARM64_REG_X0, 42)
                st["n"] += 1
                if st["sve"] and flush:
                    st["ret"] = uc.reg_read(A.UC_ARM64_REG_PC)
                    st["stubs"] += 1
                    uc.reg_write(A.UC_ARM64_REG_PC, STUB)
            else:
                uc.reg_write(A.UC_ARM64_REG_PC, st["ret"])
                if tlb:
                    uclib.uc_ctl(uh, TLB_FLUSH)
        uc.hook_add(UC_HOOK_INTR, hook)
    text = next(m for m in img.mappings() if "x" in m.perms)
    data = bytes(uc.mem_read(text.start, text.size))
    rdvl = next(text.start + o for o in range(0, len(data), 4)
                if int.from_bytes(data[o:o + 4], "little") == RDVL_X0_8)

    def on_rdvl(_uc: Uc, _addr: int, _size: int, _ud: object) -> None:
        st["sve"] = True                    # where do_sve_acc sets TIF_SVE
    uc.hook_add(UC_HOOK_CODE, on_rdvl, begin=rdvl, end=rdvl)
    t = time.perf_counter()
    uc.emu_start(img.entry, 0)
    dt = time.perf_counter() - t
    return dt / st["n"] * 1e6, st["n"], st["stubs"]


def main(argv: list[str]) -> None:
    iters = int(argv[0]) if argv and not argv[0].startswith("-") else 1000
    reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else 5
    for api in ("ctypes", "binding"):
        for mode in MODES if api == "ctypes" else MODES[:-1]:
            samples = []
            for _ in range(reps):
                us, n, stubs = run(iters, mode, api)
                samples.append(us)
            print(f"{api:8s} {mode:10s} {statistics.median(samples):6.2f} us/getpid "
                  f"[{min(samples):.2f}-{max(samples):.2f}] ({n} getpid, {stubs} flush runs, {reps} runs)")


if __name__ == "__main__":
    main(sys.argv[1:])
