"""Python work per operation: the bytecodes and Python calls emukern executes for one null
syscall, one signal round trip, one fp-pidbench getpid, one pipe round trip between threads or
processes, and one line of the bash pipeline (``emukern bench --only pywork``).

Why counts beside the times: the host's speed moves the time figures by tens of per cent from
one day to the next (measured: the same tree's ``emukern reproduce`` took 60 s one evening and
109 s the next), while a count of bytecodes does not move with the load.  A change to a trap
path can be judged by these before any timing, and two stops' figures compare directly.

How: each operation's guest runs twice under ``sys.settrace`` with opcode events (every frame,
the CPU hooks' ctypes callbacks included), at two counts; the difference over the difference of
the counts is one operation with start-up removed.  An untraced run of the same guest comes
first, so that what a process does once (a syscall's first call imports its module, a decode
fills a memo) lands there and not in one of the two counted runs.  A few bytecodes of spread
remain: some iteration orders follow the interpreter's hash seed.
"""
from __future__ import annotations

import gc
import sys
from pathlib import Path
from types import FrameType
from typing import Any, Callable

from emukern.bench.stats import Unavailable, figure

# the thread round trip's target (emukern.bench.switch): what it buys at today's cost per bytecode
TARGET_THREAD_RT_US = 40.0


def count_python(make: Callable[[], Any]) -> tuple[int, int, Any]:
    """(bytecodes, Python calls, result) of ``make().run()``: ``make`` builds a loaded Machine
    (outside the count); its run must end with exit status 0."""
    m = make()
    counts = [0, 0]

    def trace(frame: FrameType, event: str, _arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            counts[0] += 1
        elif event == "call":
            counts[1] += 1
        return trace

    # earlier runs' garbage finalized now, not inside this count (a Machine's finalizers are
    # Python code), and the collector's generations emptied, so its passes fall where they fell
    # in any other count of the same run
    gc.collect()
    old = sys.gettrace()
    sys.settrace(trace)
    try:
        r = m.run()
    finally:
        sys.settrace(old)
    if r.exit_status != 0:
        raise RuntimeError(f"the guest exited with {r.exit_status} under emukern: {r.message}")
    return counts[0], counts[1], r


def per_operation(make: Callable[[int], Callable[[], Any]], n1: int, n2: int,
                  ops_of: Callable[[Any], int] | None = None) -> tuple[float, float]:
    """(bytecodes, calls) per operation: the runs at ``n2`` and ``n1`` (``make(n)`` gives the
    Machine factory for count n), their difference over the difference of the operations
    (``ops_of(result)``: how many the run made, when the count is not the argument itself)."""
    make(1)().run()                                 # the untraced warm-up
    a_ops, a_calls, ra = count_python(make(n1))
    b_ops, b_calls, rb = count_python(make(n2))
    k = (ops_of(rb) - ops_of(ra)) if ops_of is not None else n2 - n1
    if k <= 0:
        raise RuntimeError("the longer run made no more operations than the shorter one")
    return (b_ops - a_ops) / k, (b_calls - a_calls) / k


def _asm_machine(arch: str, name: str, argv: list[str]) -> Any:
    from emukern.bench.selfbench import _elf
    return _elf_machine(arch, _elf(arch, name), argv)


def _elf_machine(arch: str, elf: Path, argv: list[str]) -> Any:
    from emukern.api import Machine
    m = Machine(arch=arch, max_insns=None)
    m.explicit_arch = arch
    m.load(elf, argv)
    return m


def _root_machine(root: Path, argv: list[str]) -> Any:
    from emukern.api import Machine
    m = Machine(root=str(root), root_rw=True, max_insns=None)
    m.load(root / argv[0].lstrip("/"), argv[1:])
    return m


def _pipeline_argv(lines: int) -> list[str]:
    """The bench's bash pipeline (emukern.bench.programs) at ``lines`` lines."""
    from emukern.bench.programs import PROGRAMS
    for name, _pkgs, argv, _quick in PROGRAMS:
        if name == "bash pipeline":
            text = argv[-1]
            assert "2000" in text
            return [*argv[:-1], text.replace("2000", str(lines))]
    raise Unavailable("the programs group has no bash pipeline")


def _thread_rt_us(arch: str, n1: int, n2: int) -> float:
    """µs of CPU per thread round trip, untraced (emukern.bench.switch's method)."""
    from emukern.bench import switch
    return switch.per_iteration(lambda argv: switch._emukern_cpu(arch, argv), "t", n1, n2)


def _counts(fn: Callable[[], tuple[float, float]]) -> tuple[float, float] | Unavailable:
    """``fn()``'s counts, or why they cannot be had here."""
    try:
        return fn()
    except Unavailable as exc:
        return exc


def _row(name: str, key: str, arch: str, counts: tuple[float, float] | Unavailable, **extra: Any) -> dict[str, Any]:
    if isinstance(counts, Unavailable):
        return figure(name, "bytecodes", "emukern", {"emukern": []}, {"emukern": str(counts)}, None,
                      key=key, arch=arch, **extra)
    ops, calls = counts
    return figure(name, "bytecodes", "emukern", {"emukern": [ops]}, {}, None, key=key, arch=arch,
                  calls=calls, **extra)


def m_pywork(cfg: Any, arches: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every row (``cfg``: selfbench.Settings; one sample each: counts, not times)."""
    from emukern.bench import switch
    q = cfg.quick
    out: list[dict[str, Any]] = []
    for arch in arches:
        cfg.say(f"{arch} Python work: null syscall, signal round trip")
        n1, n2 = (200, 600) if q else (1000, 3000)
        out.append(_row(f"{arch} Python work per null syscall (getppid)", f"{arch}.pywork.syscall", arch,
                        _counts(lambda: per_operation(lambda n: lambda: _asm_machine(arch, "syscall_loop", [str(n)]),
                                                      n1, n2))))
        s1, s2 = (50, 150) if q else (200, 600)
        out.append(_row(f"{arch} Python work per signal round trip", f"{arch}.pywork.signal", arch,
                        _counts(lambda: per_operation(lambda n: lambda: _asm_machine(arch, "sig_loop", [str(n)]),
                                                      s1, s2))))
    if "arm64" in arches:
        cfg.say("arm64 Python work: fp-pidbench getpid")
        out.append(_row("arm64 Python work per fp-pidbench getpid (guest_asm, SVE flush per syscall)",
                        "arm64.pywork.pidbench", "arm64",
                        _counts(lambda: per_operation(
                            lambda n: lambda: _asm_machine("arm64", "fp_pidbench", [str(n), "1"]),
                            50 if q else 100, 150 if q else 400, ops_of=lambda r: r.syscalls.get("getpid", 0)))))
    t1, t2 = (8, 40) if q else (20, 220)
    for arch in arches:
        cfg.say(f"{arch} Python work: pipe round trips")
        try:
            elf = switch.guest(arch)
        except Unavailable as exc:
            out.append(_row(f"{arch} Python work per pipe round trip between threads", f"{arch}.pywork.switch_thread",
                            arch, exc))
            continue
        thread = per_operation(lambda n: lambda: _elf_machine(arch, elf, ["t", str(n)]), t1, t2)
        rt_us = _thread_rt_us(arch, t1 * 5, t2 * 5)
        us_per_kop = rt_us / thread[0] * 1000
        out.append(_row(f"{arch} Python work per pipe round trip between threads", f"{arch}.pywork.switch_thread",
                        arch, thread, thread_rt_us=rt_us, us_per_1000_bytecodes=us_per_kop,
                        bytecodes_40us_allows=TARGET_THREAD_RT_US / us_per_kop * 1000))
        out.append(_row(f"{arch} Python work per pipe round trip between processes", f"{arch}.pywork.switch_proc",
                        arch, _counts(lambda: per_operation(lambda n: lambda: _elf_machine(arch, elf, ["p", str(n)]),
                                                            t1, t2))))
    for arch in arches:
        cfg.say(f"{arch} Python work: bash pipeline line")
        from emukern.bench.programs import guest_root

        def pipeline(arch: str = arch) -> tuple[float, float]:
            root = guest_root(arch)
            return per_operation(lambda n: lambda: _root_machine(root, _pipeline_argv(n)),
                                 20 if q else 100, 100 if q else 600)
        out.append(_row(f"{arch} Python work per line of the bash pipeline (echo | while read)",
                        f"{arch}.pywork.pipeline_line", arch, _counts(pipeline)))
    return out
