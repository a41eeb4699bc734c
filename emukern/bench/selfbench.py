"""Emulator self-benchmark (issues 2 and 19): emukern against its baselines, alternated, in one run.

Every figure is a table entry in :data:`MEASUREMENTS` — a function that returns figure records
(:func:`emukern.bench.stats.figure`).  Inside a figure each contender (emukern, raw Unicorn,
qemu-user, Qiling ...) runs once per round and the rounds repeat ``reps`` times (>= 5 unless told
otherwise), so a ratio is taken between two samples that ran side by side; the table prints
min / median / max of each contender and the median of the pairwise ratios, and marks each of
issue 19's targets met or MISSED.

Figures (issue 19, "Speed" parts 1–3):
- guest MIPS with exact counting vs raw Unicorn with no hooks, on the same loops (both arches):
  spin.S (2-instruction blocks, the worst case) and cksum.S (7-/9-instruction blocks, typical code);
- a null syscall (getppid) through emukern's kernel vs a raw Unicorn in-hook round trip (an INTR
  hook that reads the number and writes a return value), both arches;
- µs of host time per getpid of guest_asm/arm64/fp_pidbench.S and, when built, of the kernel's own
  tools/testing/selftests/arm64/fp/fp-pidbench.S (emukern/selftests), each beside its floor: the
  same ELF on raw Unicorn whose ctypes hook answers the svc and the SVE access trap and nothing
  more (emukern/bench/raw_pidbench.py); and the newest of them under Linux 6.1's model, where every
  "SVE used per syscall" iteration is a getpid + SVE trap pair, beside the floor taking the same traps;
- µs per RVV LMUL=1 instruction through the illegal-instruction trap path (vec_loop.S);
- the 100 k-iteration vsetvli + getppid loop (null_syscall.S) at VLEN 512, emukern vs
  qemu-riscv64, both as whole processes, with two raw-Unicorn floors on the same ELF (a hook that
  only sets vl and answers the ecalls, through the binding and as a bare ctypes callback:
  emukern/bench/raw_vsetvli.py);
- wall time of the 1–64-CPU MRS contention sweep of ``emukern reproduce`` (arm64_mrs);
- and, with ``--profile``, cProfile's top entries of the null-syscall path on both arches.
"""
from __future__ import annotations

import cProfile
import json
import pstats
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from emukern.bench import peers
from emukern.bench import startup as bench_startup
from emukern.bench import switch as bench_switch
from emukern.bench import pywork as bench_pywork
from emukern.bench.stats import Target, Unavailable, alternate, figure, pairwise_ratios, summary
from emukern.resources import guest_asm_dir

TITLE = "Emulator self-benchmark: emukern vs raw Unicorn, qemu-user (and Qiling), alternated"
GUEST = guest_asm_dir()
ARCHES = ("riscv64", "arm64")
TARGET_MIPS_RATIO = 0.6         # issue 19: exact counting >= 0.6 x raw Unicorn MIPS
TARGET_SYSCALL_RATIO = 1.5      # issue 30 (was 2 x in issue 19): null syscall <= 1.5 x a raw in-hook round trip
TARGET_PIDBENCH_US = 2.0        # issue 30 (was 5 us in issue 19): fp-pidbench <= 2 us of host time per getpid
TARGET_RVV_M1_US = 3.0          # issue 19: an RVV m1 instruction through the trap path <= 3 us
TARGET_VSETVLI_QEMU = 5.0       # issue 30 (was 10x in issue 19): vsetvli+getppid loop within 5x of qemu-riscv64
TARGET_MRS_SWEEP_S = 30.0       # issue 19: the 1-64-CPU MRS sweep under 30 s
DEFAULT_REPS = 5
QEMU = {a: peers.qemu_cmd(a) for a in ARCHES}
RAW, EK, QEMU_PEER, QILING = "raw Unicorn", "emukern", "qemu-user", "Qiling"
FLOOR = "raw Unicorn + empty block hook"      # MIPS: the per-block hook call alone, no counting
FLOOR_ADD = "raw Unicorn + adding block hook"  # MIPS: a hook that only adds size/4 to a counter
RAW_NULL = "raw Unicorn null syscall"          # signal: the raw floor's own denominator
RAW_SIG_CT = "raw Unicorn, ctypes hook"        # signal: the same floor with emukern's kind of hook
RAW_NULL_CT = "raw Unicorn null syscall, ctypes hook"
RAW_DIRECT = "raw Unicorn (ctypes hook)"      # the vsetvli figure's second floor
RAW_NATIVE = "raw Unicorn (C vsetvli + ctypes ecall hook)"   # third: vsetvli in C, as emukern's
RAW_PID = "raw Unicorn (ctypes svc + SVE trap hook)"        # fp-pidbench's floor (emukern/bench/raw_pidbench.py)


@dataclass(frozen=True)
class Sizes:
    """Iteration counts of each figure's guest."""
    spin_n: int = 25_000_000           # spin.S iterations (2 instructions each)
    sys_n: int = 100_000               # syscall_loop.S getppid calls
    pid_iters: int = 1000              # fp_pidbench.S: ITERS x BLOCKS getpid per loop, 4 loops
    pid_blocks: int = 4
    rvv_iters: int = 2000              # vec_loop.S iterations (16 vector instructions each)
    vset_n: int = 100_000              # null_syscall.S iterations, vsetvli in every one
    mrs_k: int = 10_000                # arm64_mrs.K_FULL
    mrs_threads: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    profile_n: int = 20_000            # getppid calls under cProfile
    sig_n: int = 20_000                # sig_loop.S signal round trips


QUICK_SIZES = Sizes(spin_n=2_000_000, sys_n=5_000, pid_iters=100, pid_blocks=2, rvv_iters=100,
                    vset_n=5_000, mrs_k=200, mrs_threads=(1, 2, 4), profile_n=2_000, sig_n=1_000)


@dataclass
class Settings:
    reps: int = DEFAULT_REPS
    sizes: Sizes = field(default_factory=Sizes)
    quick: bool = False
    progress: Callable[[str], None] | None = None

    def say(self, what: str) -> None:
        if self.progress is not None:
            self.progress(what)


# ---------------------------------------------------------------------------------------------
# guests and single samples

def _elf(arch: str, name: str) -> Path:
    from emukern.loader.asm import assemble
    sub = "riscv" if arch == "riscv64" else "arm64"
    return assemble(GUEST / sub / f"{name}.S", arch)


def _raw_uc(arch: str, elf: Path, cpu_model: int | None = None) -> tuple[Any, Any, dict[str, int]]:
    """A bare Unicorn with the ELF's segments mapped and no hooks but the TLB fill emukern runs
    on (``cpu_model``: a UC_CPU_* model, set before anything initialises the engine).  The fill
    (counter.c's ek_tlb_fill on Unicorn's virtual TLB; called at a TLB miss only) gives data
    entries no fetch permission, without which Unicorn sends every store through its slow path
    (about 10x the cost): so a raw figure is the fastest this Unicorn runs the loop, not a
    figure emukern beats by running on a different TLB."""
    from unicorn import UC_ARCH_ARM64, UC_ARCH_RISCV, UC_MODE_ARM, UC_MODE_RISCV64, Uc
    from emukern.loader.elf import load_elf
    from emukern.machine import uc_internal
    from emukern.machine.counter import native_tlb_fill
    from emukern.machine.memory import uc_prot
    img = load_elf(elf)
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64) if arch == "riscv64" else Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    if cpu_model is not None:
        uc.ctl_set_cpu_model(cpu_model)
    fill = native_tlb_fill()
    if fill is not None:
        uc_internal.use_tlb_fill(uc, fill)
    for m in img.mappings():
        uc.mem_map(m.start, m.size, uc_prot(m.perms) | 1)
    for seg in img.segments:
        uc.mem_write(seg.vaddr, seg.data)
    return uc, img, img.symbols


def _counter_reg(arch: str, loop: str) -> int:
    from unicorn import arm64_const as A, riscv_const as R
    if arch == "riscv64":
        return R.UC_RISCV_REG_A0 if loop == "spin" else R.UC_RISCV_REG_S0    # cksum, syscall_loop: s0
    return A.UC_ARM64_REG_X0 if loop == "spin" else A.UC_ARM64_REG_X19


def _raw_loop_seconds(arch: str, loop: str, n: int, hook: str | None) -> float:
    """Host seconds of ``n`` iterations of <loop>.S's <loop>_loop in a bare Unicorn, with no hook
    or (``hook``) one of counter.c's floor block hooks: "empty" (the hook call alone) or "add"
    (a hook that only adds size/4 to a counter: the least any per-block counting does)."""
    uc, _img, sym = _raw_uc(arch, _elf(arch, loop))
    keep = None
    if hook == "empty":
        from emukern.machine.counter import add_empty_block_hook
        add_empty_block_hook(uc)
    elif hook == "add":
        from emukern.machine.counter import add_count_block_hook
        keep = add_count_block_hook(uc)
    elif hook is not None:
        raise ValueError(f"unknown floor hook {hook!r}")
    uc.reg_write(_counter_reg(arch, loop), n)
    t = time.perf_counter()
    uc.emu_start(sym[f"{loop}_loop"], sym[f"{loop}_loop_end"])
    dt = time.perf_counter() - t
    del keep
    return dt


def raw_mips(arch: str, n: int, hook: str | None = None) -> tuple[float, int]:
    """Raw Unicorn's MIPS on spin.S (``hook``: see _raw_loop_seconds), and the instructions it ran."""
    insns = 2 * n
    return insns / _raw_loop_seconds(arch, "spin", n, hook) / 1e6, insns


_CKSUM_INSNS: dict[str, tuple[int, int]] = {}


def cksum_insns(arch: str, n: int) -> int:
    """Instructions from cksum_loop to cksum_loop_end for ``n`` passes: a + b*n, with a and b
    counted once per arch by a raw Unicorn with a code hook (n = 1 and 2)."""
    from unicorn import UC_HOOK_CODE
    if arch not in _CKSUM_INSNS:
        got = []
        for k in (1, 2):
            uc, _img, sym = _raw_uc(arch, _elf(arch, "cksum"))
            uc.reg_write(_counter_reg(arch, "cksum"), k)
            c = [0]

            def hook(_uc: Any, _a: int, _s: int, _u: Any) -> None:
                c[0] += 1
            uc.hook_add(UC_HOOK_CODE, hook)
            uc.emu_start(sym["cksum_loop"], sym["cksum_loop_end"])
            got.append(c[0])
        _CKSUM_INSNS[arch] = (2 * got[0] - got[1], got[1] - got[0])
    a, b = _CKSUM_INSNS[arch]
    return a + b * n


def raw_cksum_mips(arch: str, n: int, hook: str | None = None) -> float:
    return cksum_insns(arch, n) / _raw_loop_seconds(arch, "cksum", n, hook) / 1e6


def raw_syscall_us(arch: str, n: int, direct: bool = False) -> float:
    """µs per getppid of syscall_loop.S in a bare Unicorn whose INTR hook reads a7|x8 and writes
    a0|x0: through the binding's hook_add and register calls, or (``direct``) as a bare ctypes
    callback with libunicorn's register calls, emukern's kind of hook (raw_signal._add_intr_hook)."""
    from unicorn import arm64_const as A, riscv_const as R
    from emukern.bench.raw_signal import _Regs, _add_intr_hook
    uc, _img, sym = _raw_uc(arch, _elf(arch, "syscall_loop"))
    nr_reg, ret_reg = ((R.UC_RISCV_REG_A7, R.UC_RISCV_REG_A0) if arch == "riscv64"
                       else (A.UC_ARM64_REG_X8, A.UC_ARM64_REG_X0))
    if direct:
        regs = _Regs(uc)
        write_ret, read1 = regs.writer([ret_reg]), regs.read1

        def hook(_h: Any, intno: int, _ud: Any) -> None:
            write_ret(read1(nr_reg).to_bytes(8, "little"))
    else:
        def hook(uc: Any, intno: int, _ud: Any) -> None:   # the minimal in-hook syscall
            uc.reg_write(ret_reg, uc.reg_read(nr_reg))
    keep = _add_intr_hook(uc, hook, direct)
    uc.reg_write(_counter_reg(arch, "syscall"), n)
    t = time.perf_counter()
    uc.emu_start(sym["sys_loop"], sym["sys_loop_end"])
    dt = time.perf_counter() - t
    del keep
    return dt / n * 1e6


def emukern_run(arch: str, name: str, n: int | list[str], **opts: Any) -> tuple[float, Any]:
    """(wall seconds of Machine.run, its result); the guest must exit 0 or there is no figure."""
    from emukern.api import Machine
    m = Machine(arch=arch, **opts)
    m.explicit_arch = arch
    m.load(_elf(arch, name), [str(n)] if isinstance(n, int) else n)
    t = time.perf_counter()
    r = m.run()
    dt = time.perf_counter() - t
    if r.exit_status != 0:
        raise RuntimeError(f"{arch} {name} exited with {r.exit_status} under emukern: {r.message}")
    return dt, r


def qemu_wall(arch: str, name: str, n: int) -> tuple[float | None, str]:
    """(whole-process wall seconds, note): None when qemu-user is absent or the guest failed under it."""
    try:
        return peers.qemu_wall(arch, _elf(arch, name), [str(n)], QEMU[arch]), "ok"
    except Unavailable as exc:
        return None, str(exc)


def _qemu_sample(arch: str, name: str, n: int) -> float:
    t, note = qemu_wall(arch, name, n)
    if t is None:
        raise Unavailable(note)
    return t


# ---------------------------------------------------------------------------------------------
# the measurements: each returns a list of figure records

def m_mips(cfg: Settings) -> list[dict[str, Any]]:
    """Guest MIPS: emukern's exact counting vs raw Unicorn (no hooks) on spin.S and cksum.S; peers alongside.

    spin.S's 2-instruction blocks are the worst case for the per-block counting hook; cksum.S's
    7-/9-instruction blocks with a load and a store each are typical code."""
    n = cfg.sizes.spin_n
    passes = max(1, n // 1800)           # about as many cksum instructions as spin's 2n
    loops = [("spin", "", n, lambda arch: 2 * n, lambda arch, hook=None: raw_mips(arch, n, hook)[0]),
             ("cksum", "_cksum", passes, lambda arch: cksum_insns(arch, passes),
              lambda arch, hook=None: raw_cksum_mips(arch, passes, hook))]
    out = []
    for name, suffix, iters, insns_of, raw in loops:
        for arch in ARCHES:
            cfg.say(f"{arch} MIPS ({name})")
            counted: list[int] = []
            insns = insns_of(arch)

            def ek(arch: str = arch, name: str = name, iters: int = iters) -> float:
                wall, r = emukern_run(arch, name, iters, max_insns=None)
                counted.append(r.user_insns)
                return r.user_insns / wall / 1e6
            runners = {EK: ek, RAW: lambda arch=arch, raw=raw: raw(arch),
                       FLOOR: lambda arch=arch, raw=raw: _floor_sample(raw, arch, "empty"),
                       FLOOR_ADD: lambda arch=arch, raw=raw: _floor_sample(raw, arch, "add"),
                       QEMU_PEER: lambda arch=arch, name=name, iters=iters, insns=insns:
                           insns / _qemu_sample(arch, name, iters) / 1e6,
                       QILING: lambda arch=arch, name=name, iters=iters, insns=insns:
                           insns / peers.qiling_run_seconds(arch, _elf(arch, name), [str(iters)]) / 1e6}
            samples, notes = alternate(runners, cfg.reps)
            # the ceiling under the target: the adding hook's MIPS over raw Unicorn's, pairwise
            ceiling = (summary(pairwise_ratios(samples[FLOOR_ADD], samples[RAW]))
                       if samples.get(FLOOR_ADD) and samples.get(RAW) else None)
            out.append(figure(f"{arch} guest MIPS ({name}.S)", "MIPS", EK, samples, notes,
                              Target(">=", TARGET_MIPS_RATIO, "ratio", RAW), higher_is_better=True,
                              key=f"{arch}.mips{suffix}", arch=arch, iterations=iters,
                              emukern_user_insns=counted[-1:] or None, counting_ceiling=ceiling))
    return out


def _floor_sample(raw: Callable[..., float], arch: str, hook: str) -> float:
    try:
        return raw(arch, hook)
    except OSError as exc:              # no C compiler / native counter: the row says why
        raise Unavailable(str(exc)) from exc


def m_syscall(cfg: Settings) -> list[dict[str, Any]]:
    """Null syscall (getppid) round trip: emukern's kernel vs a raw Unicorn INTR hook; peers alongside."""
    out = []
    n = cfg.sizes.sys_n
    for arch in ARCHES:
        cfg.say(f"{arch} null syscall")
        cycles: list[float] = []

        def ek() -> float:
            wall, r = emukern_run(arch, "syscall_loop", n, max_insns=None)
            cycles.append(r.cycles / n)
            return wall / n * 1e6
        runners = {EK: ek, RAW: lambda: raw_syscall_us(arch, n),
                   QEMU_PEER: lambda: _qemu_sample(arch, "syscall_loop", n) / n * 1e6,
                   QILING: lambda: peers.qiling_run_seconds(arch, _elf(arch, "syscall_loop"), [str(n)]) / n * 1e6}
        samples, notes = alternate(runners, cfg.reps)
        out.append(figure(f"{arch} null syscall (getppid)", "µs", EK, samples, notes,
                          Target("<=", TARGET_SYSCALL_RATIO, "ratio", RAW), key=f"{arch}.syscall", arch=arch,
                          iterations=n, emukern_cycles_per_syscall=cycles[-1] if cycles else None))
    return out


def m_signal(cfg: Settings) -> list[dict[str, Any]]:
    """A signal round trip (kill -> do_signal/setup_rt_frame -> handler -> rt_sigreturn, sig_loop.S)
    against emukern's own null syscall in the same rounds (issue 12's target: <= 3x)."""
    out = []
    n = cfg.sizes.sig_n
    for arch in ARCHES:
        cfg.say(f"{arch} signal round trip")
        delivered: list[int] = []

        def sig() -> float:
            wall, r = emukern_run(arch, "sig_loop", n, max_insns=None)
            delivered.append(r.syscalls.get("rt_sigreturn", 0))
            return wall / n * 1e6

        def null() -> float:
            wall, _ = emukern_run(arch, "syscall_loop", n, max_insns=None)
            return wall / n * 1e6
        from emukern.bench.raw_signal import raw_signal_us
        runners = {EK: sig, "emukern null syscall": null,
                   RAW: lambda arch=arch: raw_signal_us(arch, _elf(arch, "sig_loop"), n),
                   RAW_NULL: lambda arch=arch: raw_syscall_us(arch, n),
                   RAW_SIG_CT: lambda arch=arch: raw_signal_us(arch, _elf(arch, "sig_loop"), n, direct=True),
                   RAW_NULL_CT: lambda arch=arch: raw_syscall_us(arch, n, direct=True)}
        samples, notes = alternate(runners, cfg.reps)
        floors = {RAW: summary(pairwise_ratios(samples.get(RAW, []), samples.get(RAW_NULL, []))),
                  RAW_SIG_CT: summary(pairwise_ratios(samples.get(RAW_SIG_CT, []), samples.get(RAW_NULL_CT, [])))}
        out.append(figure(f"{arch} signal round trip", "µs", EK, samples, notes,
                          Target("<=", 3.0, "ratio", "emukern null syscall"), key=f"{arch}.signal",
                          arch=arch, iterations=n, signals_delivered=delivered[-1] if delivered else None,
                          raw_floor_ratio=floors))
    return out


def _pidbench_sample(elf: Path, argv: list[str], getpids: list[int], kernel: str | None = None,
                     traps: list[int] | None = None) -> float:
    """µs of host time (Machine.run) per getpid the guest made, the default arm64-sve policy
    (``kernel``: that release's model instead of the newest; ``traps`` gets the SVE traps)."""
    from emukern.api import Machine
    m = Machine(arch="arm64", max_insns=None, **({"kernel": kernel} if kernel else {}))
    m.explicit_arch = "arm64"
    m.load(elf, argv)
    t = time.perf_counter()
    r = m.run()
    dt = time.perf_counter() - t
    if r.exit_status != 0:
        raise RuntimeError(f"{elf.name} exited with {r.exit_status} under emukern: {r.message}")
    n = r.syscalls.get("getpid", 0)
    if not n:
        raise RuntimeError(f"{elf.name} made no getpid call under emukern")
    getpids.append(n)
    if traps is not None:
        traps.append(r.traps.get("sve-access", 0))
    return dt / n * 1e6


def _raw_pidbench_sample(elf: Path, argv: list[str], discard: bool, traps: list[int] | None = None) -> float:
    """The floor beside an fp-pidbench figure (emukern.bench.raw_pidbench): µs per getpid."""
    from emukern.bench.raw_pidbench import raw_pidbench_us
    us, _n, ntraps, _out = raw_pidbench_us(elf, argv, discard=discard)
    if traps is not None:
        traps.append(ntraps)
    return us


# the release whose model takes an SVE access trap after every syscall of an SVE user (Linux 6.1's
# sve_user_discard): the fp-pidbench figure of getpid + SVE trap pairs runs under it
TRAP_PAIR_KERNEL = "debian-12-arm64"


def m_pidbench(cfg: Settings) -> list[dict[str, Any]]:
    """fp-pidbench, all loops (no SVE / SVE once / SVE before every syscall [/ after]), µs per getpid:
    emukern's guest_asm version and, when it is built, the kernel's own selftest."""
    out = []
    s = cfg.sizes
    own = _elf("arm64", "fp_pidbench")
    own_argv = [str(s.pid_iters), str(s.pid_blocks)]
    own_calls = 4 * s.pid_iters * s.pid_blocks
    progs: list[tuple[str, Path, list[str], int, str]] = [
        ("arm64 fp-pidbench (guest_asm/arm64/fp_pidbench.S)", own, own_argv, own_calls, "guest_asm")]
    from emukern.selftests.pidbench import build
    up, what, per_loop = build(full=False, fetch=False)
    if up is not None and not cfg.quick:
        progs.append(("arm64 fp-pidbench (upstream selftest)", up, [], 3 * per_loop, what))
    for name, elf, argv, calls, origin in progs:
        cfg.say(name)
        getpids: list[int] = []
        # the floor: the same ELF on raw Unicorn whose ctypes hook answers the svc and the one SVE
        # access trap (the trap emukern's do_sve_acc takes) and does nothing else
        runners = {EK: lambda: _pidbench_sample(elf, argv, getpids),
                   RAW_PID: lambda: _raw_pidbench_sample(elf, argv, False),
                   QEMU_PEER: lambda: peers.qemu_wall("arm64", elf, argv, QEMU["arm64"]) / calls * 1e6}
        samples, notes = alternate(runners, cfg.reps)
        out.append(figure(name, "µs/getpid", EK, samples, notes, Target("<=", TARGET_PIDBENCH_US, "value"),
                          key="arm64.pidbench" + ("" if origin == "guest_asm" else ".upstream"), arch="arm64",
                          origin=origin, getpid_calls=getpids[-1] if getpids else None))
    if up is None:
        out.append({"figure": "arm64 fp-pidbench (upstream selftest)", "key": "arm64.pidbench.upstream",
                    "skipped": what, "contenders": {}, "target": None, "met": None})
    # getpid + SVE trap pairs: the newest fp-pidbench at hand under Linux 6.1's model, where every
    # syscall drops TIF_SVE, so each iteration of "SVE used per syscall" is a getpid and an SVE
    # access trap; beside the floor that takes the same traps (its hook closes SVE again at every
    # svc).  No target of its own: what the kernel work of the trap path costs over the floor.
    name, elf, argv = progs[-1][0], progs[-1][1], progs[-1][2]
    name = name.replace("arm64 fp-pidbench", f"arm64 fp-pidbench, an SVE trap per syscall ({TRAP_PAIR_KERNEL})")
    cfg.say(name)
    getpids, ek_traps, raw_traps = [], [], []
    runners = {EK: lambda: _pidbench_sample(elf, argv, getpids, TRAP_PAIR_KERNEL, ek_traps),
               RAW_PID: lambda: _raw_pidbench_sample(elf, argv, True, raw_traps)}
    samples, notes = alternate(runners, cfg.reps)
    out.append(figure(name, "µs/getpid", EK, samples, notes, None, key="arm64.pidbench.trap_pair", arch="arm64",
                      origin=progs[-1][4], kernel=TRAP_PAIR_KERNEL, getpid_calls=getpids[-1] if getpids else None,
                      sve_traps={EK: ek_traps[-1] if ek_traps else None, RAW_PID: raw_traps[-1] if raw_traps else None}))
    return out


def m_rvv(cfg: Settings) -> list[dict[str, Any]]:
    """µs per RVV e32 LMUL=1 instruction through the trap path (vec_loop.S, VLEN 256)."""
    from emukern.api import Machine
    from emukern.bench.rvv_unit import LOOP_KINDS, VLEN, VTYPES
    out = []
    elf = _elf("riscv64", "vec_loop")
    for kname, kind in LOOP_KINDS.items():
        cfg.say(f"RVV {kname} m1")

        def ek() -> float:
            m = Machine(vlen=VLEN, max_insns=None).load(elf, [str(cfg.sizes.rvv_iters), str(VTYPES["m1"]), str(kind)])
            t = time.perf_counter()
            r = m.run()
            dt = time.perf_counter() - t
            if r.exit_status != 0:
                raise RuntimeError(f"vec_loop {kname} m1 exited {r.exit_status}")
            return dt / m.cpu(0).vector_insns * 1e6
        samples, notes = alternate({EK: ek}, cfg.reps)
        out.append(figure(f"riscv64 RVV {kname} e32 m1 via trap path", "µs/insn", EK, samples, notes,
                          Target("<=", TARGET_RVV_M1_US, "value"), key=f"riscv64.rvv_m1.{kname}",
                          arch="riscv64", vlen=VLEN))
    return out


def m_vsetvli(cfg: Settings) -> list[dict[str, Any]]:
    """null_syscall.S with vsetvli in every iteration at VLEN 512: `emukern run` vs qemu-riscv64,
    both whole processes (interpreter start-up included, as a user would time them)."""
    n = cfg.sizes.vset_n
    elf = _elf("riscv64", "null_syscall")
    argv = [str(n), "1"]
    cfg.say(f"vsetvli+getppid x{n} VLEN 512")
    ek_cmd = [sys.executable, "-m", "emukern.cli", "run", "-q", "--vlen", "512", "--max-insns", str(50 * n + 10**6),
              str(elf), *argv]
    # the floor: the same ELF in a bare Unicorn whose INTR hook only sets vl and answers the
    # ecalls (emukern/bench/raw_vsetvli.py), also a whole process: through the binding's
    # hook_add/reg_read/reg_write, and (--direct) as a bare ctypes callback with libunicorn's
    # register calls, the way emukern's CPUs install theirs
    raw_cmd = [sys.executable, "-m", "emukern.bench.raw_vsetvli", "--vlen", "512", str(elf), *argv]
    raws = {RAW: raw_cmd, RAW_DIRECT: raw_cmd[:3] + ["--direct"] + raw_cmd[3:]}
    from emukern.machine.counter import native_available
    if native_available():      # (raw_vsetvli --native: counter.c's ek_rvv_intr executes vsetvli)
        raws[RAW_NATIVE] = raw_cmd[:3] + ["--native"] + raw_cmd[3:]
    runners = {EK: lambda: peers.run_wall(ek_cmd, "emukern run null_syscall"),
               **{who: (lambda cmd=cmd, who=who: peers.run_wall(cmd, f"{who} null_syscall"))
                  for who, cmd in raws.items()},
               QEMU_PEER: lambda: peers.qemu_wall("riscv64", elf, argv, peers.qemu_cmd("riscv64", 512))}
    samples, notes = alternate(runners, cfg.reps)
    qemu = samples.get(QEMU_PEER, [])
    floors = {who: summary(pairwise_ratios(samples[who], qemu)) for who in raws if samples.get(who) and qemu}
    return [figure(f"riscv64 vsetvli+getppid x{n:,} at VLEN 512 (whole process)", "s", EK, samples, notes,
                   Target("<=", TARGET_VSETVLI_QEMU, "ratio", QEMU_PEER), key="riscv64.vsetvli_getppid",
                   arch="riscv64", iterations=n, floor_vs_qemu=floors)]


def m_mrs_sweep(cfg: Settings) -> list[dict[str, Any]]:
    """Wall time of the MRS contention sweep `emukern reproduce` runs (1-64 CPUs x both policies)."""
    from emukern.bench import arm64_mrs
    s = cfg.sizes
    cfg.say(f"MRS sweep {s.mrs_threads[0]}-{s.mrs_threads[-1]} CPUs, K={s.mrs_k}")

    def ek() -> float:
        t = time.perf_counter()
        arm64_mrs.sweep(s.mrs_threads, s.mrs_k)
        return time.perf_counter() - t
    samples, notes = alternate({EK: ek}, cfg.reps)
    return [figure(f"arm64 MRS sweep {s.mrs_threads[0]}-{s.mrs_threads[-1]} CPUs, K={s.mrs_k:,}", "s", EK,
                   samples, notes, Target("<=", TARGET_MRS_SWEEP_S, "value"), key="arm64.mrs_sweep", arch="arm64",
                   threads=list(s.mrs_threads), k=s.mrs_k)]


def m_programs(cfg: Settings) -> list[dict[str, Any]]:
    """Real Debian programs under emukern and qemu-user (emukern/bench/programs.py), and the
    raw-Unicorn floor: raw Unicorn's MIPS on cksum.S, as the mips measurement takes it."""
    from emukern.bench import programs
    passes = max(1, cfg.sizes.spin_n // 1800)
    return programs.m_programs(cfg, ARCHES, lambda arch: raw_cksum_mips(arch, passes))


@dataclass(frozen=True)
class Measurement:
    name: str
    what: str
    fn: Callable[[Settings], list[dict[str, Any]]]


MEASUREMENTS: list[Measurement] = [
    Measurement("mips", "guest MIPS vs raw Unicorn (both arches)", m_mips),
    Measurement("syscall", "null syscall vs raw in-hook round trip (both arches)", m_syscall),
    Measurement("signal", "signal delivery + handler + rt_sigreturn vs a null syscall (both arches)", m_signal),
    Measurement("pidbench", "fp-pidbench µs per getpid (guest_asm and upstream)", m_pidbench),
    Measurement("rvv", "RVV m1 instruction through the trap path", m_rvv),
    Measurement("vsetvli", "100k vsetvli+getppid at VLEN 512 vs qemu-riscv64, whole processes", m_vsetvli),
    Measurement("mrs-sweep", "1-64-CPU MRS contention sweep wall time", m_mrs_sweep),
    Measurement("switch", "pipe round trips (processes, threads) and fork+exit+wait: CPU vs qemu-user",
                lambda cfg: bench_switch.m_switch(cfg, QEMU, ARCHES)),
    Measurement("programs", "Debian programs (shell, sort, python3, sqlite3, gzip, xz, bash forks, a pipeline): "
                "CPU vs qemu-user, with the raw-Unicorn MIPS floor", m_programs),
    Measurement("pywork", "Python bytecodes and calls per null syscall, signal, fp-pidbench getpid, pipe "
                "round trip and bash-pipeline line (counts, not times: they do not move with the host's load)",
                lambda cfg: bench_pywork.m_pywork(cfg, ARCHES)),
    Measurement("startup", "wall time of a whole `emukern run -q hello.S` (warm caches) vs a bare interpreter",
                lambda cfg: bench_startup.m_startup(cfg, ARCHES)),
]
# the figures `emukern reproduce` shows (it runs the MRS sweep and fp-pidbench as experiments itself)
REPRODUCE_SET = ("mips", "syscall")


# ---------------------------------------------------------------------------------------------
# profile of the null-syscall path

def profile_syscall(arch: str, n: int, top: int = 15) -> list[dict[str, Any]]:
    """cProfile of one syscall_loop.S run under emukern; the ``top`` functions by own time."""
    from emukern.api import Machine
    m = Machine(arch=arch, max_insns=None)
    m.explicit_arch = arch
    m.load(_elf(arch, "syscall_loop"), [str(n)])
    prof = cProfile.Profile()
    prof.enable()
    m.run()
    prof.disable()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values()) or 1.0   # type: ignore[attr-defined]
    rows = []
    for (fname, line, func), (cc, nc, tt, ct, _callers) in st.stats.items():   # type: ignore[attr-defined]
        rows.append({"function": func, "file": _short(fname), "line": line, "ncalls": nc,
                     "tottime_s": tt, "cumtime_s": ct, "tottime_pct": 100.0 * tt / total,
                     "us_per_syscall": tt / n * 1e6})
    rows.sort(key=lambda d: d["tottime_s"], reverse=True)
    return rows[:top]


def _short(fname: str) -> str:
    i = fname.rfind("emukern/")
    return fname[i:] if i >= 0 else fname


# ---------------------------------------------------------------------------------------------

def measure(quick: bool = False, reps: int | None = None, only: list[str] | tuple[str, ...] | None = None,
            profile: bool = False, sizes: Sizes | None = None,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    from emukern import __version__
    from emukern.errors import ConfigError
    from emukern.machine.counter import native_available
    names = [m.name for m in MEASUREMENTS]
    bad = [o for o in (only or []) if o not in names]
    if bad:
        raise ConfigError(f"unknown bench measurement {', '.join(bad)}", hint="choose from " + ", ".join(names))
    cfg = Settings(reps=DEFAULT_REPS if reps is None else reps, sizes=sizes or (QUICK_SIZES if quick else Sizes()), quick=quick,
                   progress=progress)
    if cfg.reps < 1:
        raise ConfigError(f"--reps {cfg.reps}: need at least one round", hint="the default is 5")
    t0 = time.perf_counter()
    figures: list[dict[str, Any]] = []
    for meas in MEASUREMENTS:
        if only and meas.name not in only:
            continue
        for f in meas.fn(cfg):
            f["measurement"] = meas.name
            figures.append(f)
    out: dict[str, Any] = {"emukern_version": __version__, "native_counter": native_available(), "quick": quick,
                           "reps": cfg.reps, "sizes": cfg.sizes.__dict__ | {"mrs_threads": list(cfg.sizes.mrs_threads)},
                           "qiling": peers.qiling_python(), "figures": figures, "arches": arches_view(figures)}
    if profile:
        out["profile"] = {}
        for arch in ARCHES:
            if progress:
                progress(f"profile {arch}")
            out["profile"][arch] = {"getppid_calls": cfg.sizes.profile_n,
                                    "top": profile_syscall(arch, cfg.sizes.profile_n)}
    out["targets"] = [{"figure": f["figure"], "target": f["target"]["text"], "value": f["target_value"],
                       "met": f["met"]} for f in figures if f.get("target")]
    out["missed"] = [t["figure"] for t in out["targets"] if t["met"] is False]
    out["wall_seconds"] = time.perf_counter() - t0
    return out


def _med(f: dict[str, Any] | None, who: str, what: str = "median") -> float | None:
    if f is None:
        return None
    c = f["contenders"].get(who)
    return None if c is None else c.get(what)


def _ratio(f: dict[str, Any] | None, who: str, what: str = "median") -> float | None:
    if f is None or who not in f["contenders"] or "ratio" not in f["contenders"][who]:
        return None
    return f["contenders"][who]["ratio"][what]


def arches_view(figures: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arch the headline figures (``mips_ratio``, ``syscall_ratio`` = medians of the pairwise
    ratios) under the keys `emukern reproduce` and earlier JSON readers use."""
    by = {f.get("key"): f for f in figures}
    out: dict[str, dict[str, Any]] = {}
    for arch in ARCHES:
        fm, fs = by.get(f"{arch}.mips"), by.get(f"{arch}.syscall")
        if fm is None and fs is None:
            continue
        d: dict[str, Any] = {}
        if fm is not None:
            d.update(raw_mips=_med(fm, RAW), emukern_mips=_med(fm, EK), mips_ratio=_ratio(fm, RAW),
                     mips_ratio_min=_ratio(fm, RAW, "min"), mips_ratio_max=_ratio(fm, RAW, "max"),
                     mips_target=TARGET_MIPS_RATIO, mips_target_met=fm["met"], qemu_mips=_med(fm, QEMU_PEER),
                     qiling_mips=_med(fm, QILING), qemu_spin=fm["contenders"].get(QEMU_PEER, {}).get("note", "not run"))
        if fs is not None:
            d.update(raw_syscall_us=_med(fs, RAW), emukern_syscall_us=_med(fs, EK), syscall_ratio=_ratio(fs, RAW),
                     syscall_ratio_min=_ratio(fs, RAW, "min"), syscall_ratio_max=_ratio(fs, RAW, "max"),
                     syscall_target=TARGET_SYSCALL_RATIO, syscall_target_met=fs["met"],
                     qemu_syscall_us=_med(fs, QEMU_PEER), qiling_syscall_us=_med(fs, QILING),
                     qemu_syscall=fs["contenders"].get(QEMU_PEER, {}).get("note", "not run"),
                     emukern_cycles_per_syscall=fs.get("emukern_cycles_per_syscall"))
        out[arch] = d
    return out


def mark(ok: bool | None) -> str:
    return {True: " met", False: " MISSED", None: ""}[ok]


def _num(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"


def print_table(res: dict[str, Any], console: Console) -> None:
    t = Table(title=f"emukern vs its baselines: {res['reps']} alternated rounds per figure"
              + (" (quick counts)" if res.get("quick") else ""))
    for c in ("figure", "who", "min", "median", "max", "emukern / who: median [min–max]", "target"):
        t.add_column(c, justify="left" if c in ("figure", "who", "target") else "right", overflow="fold")
    notes: list[str] = []
    for f in res["figures"]:
        if f.get("skipped"):
            notes.append(f"{f['figure']}: not run — {f['skipped']}")
            continue
        first = True
        tgt = f.get("target") or {}
        for who, c in f["contenders"].items():
            if c["note"] != "ok":
                notes.append(f"{f['figure']} — {who} n/a: {c['note']}")
                continue
            r = c.get("ratio")
            ratio = f"{r['median']:.2f}× [{r['min']:.2f}–{r['max']:.2f}]" if r else ""
            tcell = ""
            if (tgt.get("on") == "ratio" and tgt.get("against") == who) or (tgt.get("on") == "value" and who == f["subject"]):
                tcell = f"{tgt['text']}:{mark(f['met'])}"
            t.add_row(f"{f['figure']} [{f['unit']}]" if first else "", who, _num(c["min"]), _num(c["median"]),
                      _num(c["max"]), ratio, tcell)
            first = False
        ceil = f.get("counting_ceiling")
        if ceil and ceil.get("n"):
            notes.append(f"{f['figure']}: {FLOOR_ADD} / raw Unicorn = median {ceil['median']:.2f}× "
                         f"[{ceil['min']:.2f}–{ceil['max']:.2f}]: the most any per-block counting reached "
                         f"on this loop in these rounds (the target asks {TARGET_MIPS_RATIO:g}×)")
        for who, fl in (f.get("floor_vs_qemu") or {}).items():
            notes.append(f"{f['figure']}: {who} / qemu-user (a floor under emukern's ratio): median "
                         f"{fl['median']:.2f}× [{fl['min']:.2f}–{fl['max']:.2f}]")
        t.add_section()
    console.print(t)
    console.print("raw Unicorn = no hooks but the TLB fill emukern runs on, called at TLB misses only (MIPS) / an INTR hook that reads a7|x8 and writes a0|x0 (syscall) / "
                  "the same ELF with a hook that only sets vl and answers the ecalls (vsetvli; whole process); "
                  "raw Unicorn + empty block hook = a C block hook that does nothing (what Unicorn's "
                  "per-block hook call costs by itself); raw Unicorn + adding block hook = a C block hook "
                  "that only adds size/4 to a counter, the least any counting done per block can do; "
                  f"{RAW_PID} = the fp-pidbench ELF with a ctypes INTR hook that answers the syscalls and "
                  "opens SVE at its access trap (in the trap-pair figure it closes SVE again at every svc, "
                  "as Linux 6.1 does): a getpid and an SVE trap before any kernel work; "
                  "emukern = exact counts (block counting) and the full Python kernel path, host time of Machine.run(); "
                  "qemu-user = whole-process wall time (start-up included; syscalls on the host kernel), except "
                  "in the switch and program figures: the CPU time wait4 gives for the qemu process, run on one "
                  "host CPU as emukern runs all guest tasks in one host thread; "
                  "Qiling = time of ql.run(). A ratio is emukern's sample over the one taken beside it in the "
                  "same round; its median is the headline figure.")
    console.print(f"instruction counter: {'native C hook' if res['native_counter'] else 'pure-Python fallback'}")
    for f in res["figures"]:
        for who, fl in (f.get("raw_floor_ratio") or {}).items():
            if fl.get("n"):
                console.print(f"{f['figure']}: {who}: its round trip / its null syscall = "
                              f"{fl['median']:.2f}× [{fl['min']:.2f}–{fl['max']:.2f}] (emukern.bench.raw_signal: the "
                              "same guest with only the Unicorn calls a frame needs — the floor under the ratio target)")
    for f in res["figures"]:
        if f.get("bytecodes_40us_allows") is not None:
            ops = f["contenders"]["emukern"]["median"]
            console.print(f"{f['figure']}: {ops:,.0f} bytecodes in {f['calls']:,.0f} Python calls (counts, not "
                          f"times: the same at any load, to a few bytecodes); the untraced round trip took "
                          f"{f['thread_rt_us']:.0f} µs of CPU, {f['us_per_1000_bytecodes']:.1f} µs per 1,000 "
                          f"bytecodes (all its time, native included, over its bytecodes): at that rate the "
                          f"40 µs target buys {f['bytecodes_40us_allows']:,.0f} bytecodes per round trip, "
                          f"{f['bytecodes_40us_allows'] / ops:.0%} of what it executes now")
    for n in notes:
        console.print(f"[yellow]{n}[/]")
    if res.get("missed"):
        console.print(f"[bold red]MISSED target(s): {', '.join(res['missed'])}[/]")
    if res.get("profile"):
        print_profile(res["profile"], console)


def print_profile(prof: dict[str, Any], console: Console) -> None:
    for arch, p in prof.items():
        t = Table(title=f"cProfile: {arch} null-syscall path, {p['getppid_calls']:,} getppid (top by own time)")
        for c in ("function", "where", "calls", "own s", "own %", "own µs/syscall", "cum s"):
            t.add_column(c, justify="left" if c in ("function", "where") else "right", overflow="fold")
        for d in p["top"]:
            t.add_row(d["function"], f"{d['file']}:{d['line']}", str(d["ncalls"]), f"{d['tottime_s']:.3f}",
                      f"{d['tottime_pct']:.1f}", f"{d['us_per_syscall']:.2f}", f"{d['cumtime_s']:.3f}")
        console.print(t)
    console.print("cProfile adds its own cost to every Python call, so its µs are larger than the "
                  "bench's; compare the shares (own %), which say where the trap path's time goes.")


def write_json(res: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")


def run(ctx: Any) -> dict[str, Any]:
    """`emukern reproduce`'s self-benchmark: the MIPS and syscall figures (it runs the MRS sweep and
    fp-pidbench as experiments of their own)."""
    res = measure(ctx.quick, reps=3 if ctx.quick else DEFAULT_REPS, only=REPRODUCE_SET)
    print_table(res, ctx.console)
    return res


def main(quick: bool = False, reps: int | None = None, only: list[str] | None = None, profile: bool = False,
         json_path: str | None = None) -> int:
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
    err = Console(stderr=True, highlight=False)
    res = measure(quick, reps=reps, only=only, profile=profile,
                  progress=lambda what: err.print(f"[dim]bench: {what} ...[/]"))
    print_table(res, console)
    if json_path:
        write_json(res, Path(json_path))
        console.print(f"wrote {json_path}")
    return 0
