"""Which version of the vector-state patches is better for real software?  A policy study.

The motivating figure of Mark Brown's "arm64/sve: Performance improvements with SVE state saving"
(patch 1) came from a Debian boot: most tasks took another SVE access trap after more than half
of their FPSIMD-only state loads.  Under emukern every glibc process takes an SVE access trap
(glibc's SVE string routines), so the question can be asked of real programs: this experiment
runs a fixed mix of Debian trixie arm64 binaries (shell scripts that fork and exec, coreutils
pipelines, python3, perl, sqlite3, gzip/xz, openssl, a make-like loop of background jobs) on two
CPUs with full preemption, once under each ``arm64-sve`` value, and counts per program:

* SVE access traps (do_sve_acc);
* FPSIMD-only loads of a task that had TIF_SVE, and how many were followed by another trap
  (the cover letter's share) -- overall and as the number of tasks above 50 %;
* syscalls entered with TIF_SVE set, SVE flushes (syscall, trap, P-only), total cycles.

RISC-V's Debian userland hardly uses V, so its half runs programs built here with an RVV
auto-vectorising compiler (emukern.bench.rvv_programs: zlib's minigzip and bzip2 both ways, a memcpy/strlen
pipe between two processes) under ``riscv-discard`` eager, deferred and optimize-restore, with the
sysctl ``abi.riscv_v_vstate_discard`` at 0 and 1: vector saves, restores, discards, first-use
traps, executed vector instructions and cycles.

The policies change kernel work, never user work: each program's user instruction count is
the same under every value (checked, and reported if not).  Anything that cannot be had --
packages without a network, no vectorising compiler -- is skipped with the reason.
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import shutil
from pathlib import Path
from typing import Any, Callable

from rich.table import Table

from emukern.bench.stats import Unavailable

# host seconds of a full run on the 2-core development machine, roughly (orders reproduce's pool)
POOL_SECONDS = 300       # the default size under load; --quick about 40, --full about 540
TITLE = ("Policy study on real workloads: Debian programs under arm64-sve legacy / p1 / p1+p2, "
         "RVV-vectorised programs under riscv-discard eager / deferred / optimize-restore")
ARM64_POLICIES = ("legacy", "p1", "p1+p2")
RISCV_POLICIES = ("eager", "deferred", "optimize-restore")
DISCARD = (0, 1)
CPUS = 2
PREEMPT = "full"
RVV_VLEN = 256
RETRAP_MAJORITY = 50.0        # the cover letter's threshold (% of FPSIMD-only loads re-trapping)
EXTRA_PACKAGES = ("openssl", "perl-base", "libcrypt1")   # beyond the programs root (emukern.bench.programs)
FETCH = True          # False: run only from cached roots and builds (the tests)

L = "/tmp/bench/lines.txt"


def _bb(n: int) -> list[str]:
    return ["/usr/bin/busybox", "sh", "-c", f"i=0; while [ $i -lt {n} ]; do i=$((i+1)); /usr/bin/busybox expr $i \\* 3 "
            f">/dev/null; /usr/bin/head -c 64 {L} >/dev/null; done; echo $i"]


def _make(jobs: str, size: int) -> list[str]:
    return ["/usr/bin/bash", "-c", f"cd /tmp/bench; for f in {jobs}; do "
            f"(/usr/bin/head -c {size} {L} > job.$f && /usr/bin/gzip -f job.$f && /usr/bin/cksum job.$f.gz >/dev/null) & "
            "done; wait; /usr/bin/cat job.*.gz | /usr/bin/wc -c; /usr/bin/rm -f job.*"]


def _head(n: int | None) -> str:
    """The input of a pipeline: the whole lines file, or its first n bytes."""
    return f"/usr/bin/cat {L}" if n is None else f"/usr/bin/head -c {n} {L}"


def _programs(size: str) -> list[tuple[str, list[str]]]:
    """The arm64 mix at one size: "full" (reproduce --full: the whole 20,000-line file, 540 s
    on the 2-core development machine under load), "default" (a tenth of the input) or "quick"
    (three multi-process programs, smaller still)."""
    full = size == "full"
    nbytes = None if full else 60_000           # lines.txt is about 400 kB
    lines = 20_000 if full else 3_000
    sort_in = {"full": None, "default": nbytes, "quick": 12_000}[size]
    progs = [
        ("busybox sh script", _bb(40 if full else 12 if size == "default" else 6)),
        ("coreutils pipeline", ["/usr/bin/bash", "-c", f"{_head(sort_in)} | /usr/bin/cut -d' ' -f3 | /usr/bin/sort "
                                "| /usr/bin/uniq -c | /usr/bin/sort -rn | /usr/bin/head -3"]),
        ("python3", ["/usr/bin/python3.13", "-S", "-c",
                     f"import collections, itertools; c = collections.Counter(l.split()[2] for l in "
                     f"itertools.islice(open('{L}'), {lines})); print(len(c), sorted(c.values())[-1])"]),
        ("perl", ["/usr/bin/perl", "-e",
                  f"open my $f, '<', '{L}' or die; my %h; while (<$f>) {{ last if $. > {lines}; "
                  "$h{$1}++ if /line (\\d+)/ } print scalar(keys %h), qq(\\n);"]),
        ("sqlite3", ["/usr/bin/sqlite3", ":memory:",
                     f"with recursive c(x) as (select 1 union all select x + 1 from c limit {lines}) "
                     "select count(*), sum(x), max(length(printf('%08d', x))) from c;"]),
        ("gzip|xz round trip", ["/usr/bin/bash", "-c", f"{_head(nbytes)} | /usr/bin/gzip -c -6 | /usr/bin/gzip -dc "
                                "| /usr/bin/xz -c -1 | /usr/bin/xz -dc | /usr/bin/wc -l"]),
        ("openssl", ["/usr/bin/bash", "-c", f"{_head(nbytes)} | /usr/bin/openssl dgst -sha256; {_head(nbytes)} | "
                     f"/usr/bin/openssl enc -aes-128-cbc -pbkdf2 -iter {100 if full else 10} -pass pass:study "
                     "| /usr/bin/openssl dgst -sha256"]),
        ("make -j loop (bash &)", _make("a b c d e f g h", 20_000) if full else _make("a b c d", 8_000)
         if size == "default" else _make("a b c", 4_000)),
    ]
    if size == "quick":
        keep = ("busybox sh script", "coreutils pipeline", "make -j loop (bash &)")
        progs = [p for p in progs if p[0] in keep]
    return progs


ARM64_PROGRAMS = _programs("full")


def _size(ctx: Any) -> str:
    return "quick" if ctx.quick else "full" if getattr(ctx, "full", False) else "default"


# the SVE counters reported (emukern/kernel/arch/arm64/fpsimd.py)
SVE_KEYS = ("sve_trap", "load_fpsimd_tif_sve", "retrap_after_load", "flush_syscall", "drop_tif_sve_syscall",
            "drop_tif_sve_load", "flush_trap", "flush_p", "load_sve", "save_sve")


# ---- the arm64 root: the programs root (emukern.bench.programs) plus perl and openssl ------------
def arm64_root() -> Path:
    """The cached root: emukern.bench.programs' arm64 root, copied, with EXTRA_PACKAGES unpacked on
    top (built once)."""
    from emukern.bench import programs
    from emukern.debian import AptFetcher, FetchError, cache_root, extract
    if not FETCH and not any((cache_root() / "bench-roots").glob("policy-study-arm64-*/.complete")):
        raise Unavailable("the study's arm64 root is not cached (fetching is off)")
    base = programs.guest_root("arm64")
    key = hashlib.sha256(f"{base.name} {' '.join(EXTRA_PACKAGES)}".encode()).hexdigest()[:16]
    root = cache_root() / "bench-roots" / f"policy-study-arm64-{key}"
    if (root / ".complete").exists():
        return root
    if not FETCH:
        raise Unavailable(f"the study's arm64 root is not cached ({root.name}; fetching is off)")
    fetcher = AptFetcher("trixie", "arm64")
    try:
        # perl-base is left out of the programs' dependency walk (an Essential package): its
        # own Depends are walked here and the package added by name; libcrypt1 is its
        # Pre-Depends, which apt-cache depends does not list
        names = set(programs._closure(fetcher, ["openssl", "libcrypt1", *fetcher.depends("perl-base")])) | {"perl-base"}
        debs = [fetcher.download(p) for p in sorted(names)]
    except FetchError as exc:
        raise Unavailable(f"Debian trixie's openssl/perl for arm64 could not be had: {exc}") from None
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(base, tmp, symlinks=True)
    for deb in debs:
        programs._extract(extract, deb, tmp)
    (tmp / ".complete").touch()
    shutil.rmtree(root, ignore_errors=True)
    tmp.replace(root)
    return root


def _retrap_by_task(k: Any) -> tuple[int, int]:
    """(tasks with an FPSIMD-only load while TIF_SVE was set, those of them that re-trapped after
    more than RETRAP_MAJORITY % of such loads): the cover letter's per-task view."""
    with_loads = over = 0
    for t in k.tasks.values():
        st = getattr(t.thread, "stats", None)
        if not st or not st.get("load_fpsimd_tif_sve"):
            continue
        with_loads += 1
        if 100.0 * st.get("retrap_after_load", 0) / st["load_fpsimd_tif_sve"] > RETRAP_MAJORITY:
            over += 1
    return with_loads, over


def run_arm64(root: Path, name: str, argv: list[str], policy: str) -> dict[str, Any]:
    """One program under one arm64-sve value: its counters and counts."""
    from emukern.api import Machine
    m = Machine(arch="arm64", root=str(root), root_rw=True, max_insns=None, cpus=CPUS, preempt=PREEMPT,
                policies={"arm64-sve": policy})
    m.load(root / argv[0].lstrip("/"), argv[1:])
    r = m.run()
    if r.exit_status != 0:
        raise RuntimeError(f"{name} exited with {r.exit_status} under arm64-sve={policy}: {r.stderr[-300:]!r}")
    k = m.kernel
    assert k is not None                 # (run() has built it)
    s = k.sve_stats
    row: dict[str, Any] = {"program": name, "policy": policy, **{key: int(s.get(key, 0)) for key in SVE_KEYS}}
    row["syscalls_tif_sve"] = row["flush_syscall"] + row["drop_tif_sve_syscall"]
    row["flushes"] = row["flush_syscall"] + row["flush_trap"] + row["flush_p"]
    row["retrap_pct"] = _pct(row["retrap_after_load"], row["load_fpsimd_tif_sve"])
    row["tasks_with_loads"], row["tasks_retrap_majority"] = _retrap_by_task(k)
    row.update(user_insns=r.user_insns, user_work=r.user_insns - row["sve_trap"], cycles=r.cycles,
               kernel_cycles=r.kernel_cycles, syscalls=sum(r.syscalls.values()), tasks=len(r.tasks), wall_seconds=r.wall_seconds)
    return row


def run_riscv(elf: Path, name: str, argv: list[str], stdin: bytes, policy: str, discard: int) -> dict[str, Any]:
    """One RVV program under one riscv-discard value and one abi.riscv_v_vstate_discard value."""
    from emukern.api import Machine
    m = Machine(arch="riscv64", vlen=RVV_VLEN, max_insns=None, cpus=CPUS, preempt=PREEMPT, stdin=stdin,
                policies={"riscv-discard": policy}, sysctls={"abi.riscv_v_vstate_discard": discard})
    m.load(elf, argv)
    r = m.run()
    if r.exit_status != 0:
        raise RuntimeError(f"{name} exited with {r.exit_status} under riscv-discard={policy}, discard {discard}: "
                           f"{r.stderr[-300:]!r}")
    k = m.kernel
    assert k is not None                 # (run() has built it)
    v = {"saves": 0, "restores": 0, "discards": 0, "first_use": 0}
    for t in k.tasks.values():
        st = getattr(t.thread, "v", None)
        if st is not None:
            for key in v:
                v[key] += st.stats.get(key, 0)
    return {"program": name, "policy": policy, "discard": discard, **v,
            "vector_insns": sum(int(getattr(c, "vector_insns", 0)) for c in k.cpus),
            "user_insns": r.user_insns, "user_work": r.user_insns - v["first_use"], "cycles": r.cycles,
            "kernel_cycles": r.kernel_cycles, "syscalls": sum(r.syscalls.values()), "tasks": len(r.tasks),
            "stdout": r.stdout.decode(errors="replace")[:80],
            "wall_seconds": r.wall_seconds}


def _pct(a: int, b: int) -> float | None:
    return 100.0 * a / b if b else None


def _text(size: str) -> bytes:
    """The RVV programs' input: the same lines as the Debian root's lines.txt (fewer below full)."""
    x, out = 12345, []
    for _ in range({"quick": 3000, "default": 8000}.get(size, 20000)):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(f"{x:010d} line {x % 977}\n")
    return "".join(out).encode()


def riscv_programs(size: str) -> list[tuple[str, Path, list[str], bytes]]:
    from emukern.bench import rvv_programs
    rvv_programs.FETCH = rvv_programs.FETCH and FETCH
    bins = rvv_programs.build()
    text = _text(size)
    return [("minigzip -6", bins["minigzip"], ["-6"], text),
            ("minigzip -d", bins["minigzip"], ["-d"], gzip.compress(text, 6, mtime=0)),
            ("bzip2 -9", bins["bzip2"], ["-9c"], text),
            ("bzip2 -d", bins["bzip2"], ["-dc"], bz2.compress(text, 9)),
            ("vpipe", bins["vpipe"], [{"quick": "60", "default": "150"}.get(size, "400")], b"")]


# ---- the experiment -------------------------------------------------------------------------------
SPREAD_LIMIT = 1e-2        # a multi-process program's user work may differ this much (relative)


def _invariants(rows: list[dict[str, Any]], axes: tuple[str, ...]) -> tuple[list[str], dict[str, int]]:
    """Programs whose user work differs between policy values, and by how much.

    User work is the user instruction count less the instructions that trapped for first use
    (an SVE access trap, a first-use V trap): emukern counts the trapping instruction when it
    traps and again when it runs after the handler, so a policy that causes one more trap shows
    one more user instruction without doing more work (legacy's re-traps: +2 instructions for +2
    traps in the coreutils pipeline).

    A single process must do the same user work under every policy (else: broken).  Processes
    that run side by side may not: the policy moves kernel cycles, so the interleaving moves, and
    with it how a shell's ``wait`` or a pipe's reads fall (measured: 232 of 52.6 M instructions in
    the full make -j loop; 58,734 of 46 M, 0.13 %, in the default gzip|xz round trip, almost all
    of it in ``wc -l`` reading the pipe in other pieces).  Such a spread is reported, and broken
    only above SPREAD_LIMIT.
    Returns (broken, {program: spread in instructions})."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["program"], []).append(r)
    broken: list[str] = []
    spread: dict[str, int] = {}
    for prog, rs in by.items():
        work = [r["user_work"] for r in rs]
        lo, hi = min(work), max(work)
        if lo == hi:
            continue
        spread[prog] = hi - lo
        if max(r["tasks"] for r in rs) == 1 or hi - lo > hi * SPREAD_LIMIT:
            broken.append(f"{prog}: user work differs across {'/'.join(axes)}: {sorted(set(work))}")
    return broken, spread


def _totals(rows: list[dict[str, Any]], keys: tuple[str, ...], group: Callable[[dict[str, Any]], Any]
            ) -> dict[Any, dict[str, int]]:
    out: dict[Any, dict[str, int]] = {}
    for r in rows:
        t = out.setdefault(group(r), {key: 0 for key in keys})
        for key in keys:
            t[key] += r[key]
    return out


def run_arm64_half(ctx: Any) -> dict[str, Any]:
    con = ctx.console
    try:
        root = arm64_root()
    except Unavailable as exc:
        con.print(f"arm64 half not run: {exc}")
        return {"ran": False, "why": str(exc)}
    progs = _programs(_size(ctx))
    rows: list[dict[str, Any]] = []
    with ctx.progress() as progress:
        task = progress.add_task("arm64", total=len(progs) * len(ARM64_POLICIES))
        for name, argv in progs:
            for pol in ARM64_POLICIES:
                progress.update(task, description=f"arm64 {name} {pol}")
                rows.append(run_arm64(root, name, argv, pol))
                progress.advance(task)
    keys = ("sve_trap", "load_fpsimd_tif_sve", "retrap_after_load", "syscalls_tif_sve", "flushes", "cycles",
            "kernel_cycles", "user_insns", "syscalls", "tasks_with_loads", "tasks_retrap_majority")
    overall = _totals(rows, keys, lambda r: r["policy"])
    for t in overall.values():
        t["retrap_pct"] = _pct(t["retrap_after_load"], t["load_fpsimd_tif_sve"])  # type: ignore[assignment]
    t1 = Table(title=f"arm64: Debian trixie programs, {CPUS} CPUs, preempt={PREEMPT}, per program and arm64-sve value")
    for c in ("program", "arm64-sve", "SVE traps", "FPSIMD-only loads (TIF_SVE)", "re-trapped after",
              "tasks >50 %", "syscalls TIF_SVE", "flushes", "cycles", "vs legacy"):
        t1.add_column(c, justify="right", overflow="fold")
    base = {r["program"]: r["cycles"] for r in rows if r["policy"] == "legacy"}
    for r in rows + [{"program": "all programs", "policy": p, **t} for p, t in overall.items()]:
        b = base.get(r["program"]) or sum(x["cycles"] for x in rows if x["policy"] == "legacy")
        t1.add_row(r["program"], r["policy"], f"{r['sve_trap']:,}", f"{r['load_fpsimd_tif_sve']:,}",
                   _fmt_pct(r["retrap_after_load"], r["retrap_pct"]),
                   f"{r['tasks_retrap_majority']}/{r['tasks_with_loads']}", f"{r['syscalls_tif_sve']:,}",
                   f"{r['flushes']:,}", f"{r['cycles']:,}", f"{100 * (r['cycles'] / b - 1):+.3f} %")
    con.print(t1)
    bad, spread = _invariants(rows, ARM64_POLICIES)
    for line in bad:
        con.print(f"[bold red]invariant broken[/]: {line}")
    for prog, n in spread.items():
        con.print(f"{prog}: user work differs by {n:,} instructions across the policies (processes side by "
                  "side: the interleaving moved with the kernel's cycles)")
    con.print("Cycles of programs whose processes run side by side include the interleaving's effect on "
              "user work (see the user-work lines above); kernel cycles per policy: "
              + ", ".join(f"{p} {t['kernel_cycles']:,}" for p, t in overall.items()) + ".")
    leg = overall["legacy"]
    con.print(f"Cover letter (patch 1): the overwhelming majority of tasks re-trapped after more than "
              f"{RETRAP_MAJORITY:.0f} % of their FPSIMD-only loads.  Here, under legacy: "
              f"{leg['tasks_retrap_majority']} of {leg['tasks_with_loads']} tasks with such a load, "
              f"{_fmt_pct(leg['retrap_after_load'], leg['retrap_pct'])} of {leg['load_fpsimd_tif_sve']} loads overall.")
    return {"ran": True, "cpus": CPUS, "preempt": PREEMPT, "policies": list(ARM64_POLICIES), "rows": rows,
            "overall": overall, "invariants_broken": bad, "user_work_spread": spread}


def run_riscv_half(ctx: Any) -> dict[str, Any]:
    from emukern.bench import rvv_programs
    con = ctx.console
    try:
        progs = riscv_programs(_size(ctx))
    except Unavailable as exc:
        con.print(f"RISC-V half not run: {exc}")
        return {"ran": False, "why": str(exc)}
    static = {name: rvv_programs.vector_instructions(elf) for name, elf, _a, _i in progs}
    rows: list[dict[str, Any]] = []
    with ctx.progress() as progress:
        task = progress.add_task("riscv64", total=len(progs) * len(RISCV_POLICIES) * len(DISCARD))
        for name, elf, argv, stdin in progs:
            for pol in RISCV_POLICIES:
                for d in DISCARD:
                    progress.update(task, description=f"riscv64 {name} {pol} discard={d}")
                    rows.append(run_riscv(elf, name, argv, stdin, pol, d))
                    progress.advance(task)
    t = Table(title=f"riscv64: RVV-vectorised programs (LLVM, -mcpu={rvv_programs.MCPU}), VLEN {RVV_VLEN}, "
                    f"{CPUS} CPUs, preempt={PREEMPT}")
    for c in ("program", "riscv-discard", "sysctl", "vector insns", "first use", "saves", "restores",
              "discards", "cycles", "vs eager/0"):
        t.add_column(c, justify="right", overflow="fold")
    base = {r["program"]: r["cycles"] for r in rows if r["policy"] == "eager" and r["discard"] == 0}
    for r in rows:
        t.add_row(r["program"], r["policy"], str(r["discard"]), f"{r['vector_insns']:,}", f"{r['first_use']:,}",
                  f"{r['saves']:,}", f"{r['restores']:,}", f"{r['discards']:,}", f"{r['cycles']:,}",
                  f"{100 * (r['cycles'] / base[r['program']] - 1):+.3f} %")
    con.print(t)
    con.print("vset instructions in the binaries (static, llvm-objdump): "
              + ", ".join(f"{n}: {c if c is not None else 'n/a'}" for n, c in static.items()))
    bad, spread = _invariants(rows, ("riscv-discard", "discard"))
    for line in bad:
        con.print(f"[bold red]invariant broken[/]: {line}")
    for prog, n in spread.items():
        con.print(f"{prog}: user work differs by {n:,} instructions across the policies (interleaving)")
    overall = _totals(rows, ("saves", "restores", "discards", "first_use", "cycles", "kernel_cycles"),
                      lambda r: f"{r['policy']}/{r['discard']}")
    return {"ran": True, "vlen": RVV_VLEN, "cpus": CPUS, "preempt": PREEMPT, "policies": list(RISCV_POLICIES),
            "discard": list(DISCARD), "static_vset": static, "rows": rows, "overall": overall,
            "invariants_broken": bad, "user_work_spread": spread}


def _fmt_pct(n: int, pct: float | None) -> str:
    return f"{n:,} ({pct:.0f} %)" if pct is not None else f"{n:,} (-)"


def run(ctx: Any) -> dict[str, Any]:
    return {"quick": bool(ctx.quick), "size": _size(ctx), "arm64": run_arm64_half(ctx), "riscv64": run_riscv_half(ctx)}


__all__ = ["ARM64_PROGRAMS", "arm64_root", "riscv_programs", "run", "run_arm64", "run_riscv"]
