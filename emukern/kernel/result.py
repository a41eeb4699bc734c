"""What a run produced: output, exit status, counts, time — one object for CLI, JSON and tests."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def task_row(t: Any) -> dict[str, Any]:
    """One task's line of the result (also kept for tasks already reaped)."""
    return {"tid": t.tid, "pid": t.tgid, "comm": t.comm, "state": t.state.value, "cpu": t.cpu,
            "utime": t.utime, "stime": t.stime, "nvcsw": t.nvcsw, "nivcsw": t.nivcsw,
            "syscalls": t.syscalls, "exit": t.exit_code}


@dataclass
class RunResult:
    """What one run produced (``Machine.run()``, ``run_program``, the ``run_guest`` fixture).

    ``exit_status`` is what a shell shows (the exit code, 128+N when killed by signal N, 124 at
    the ``max_insns`` budget, 125 on a deadlock); ``stdout``/``stderr`` are the guest's bytes;
    ``user_insns``, ``kernel_cycles`` and ``cycles`` are the deterministic counts;
    ``traps``/``syscalls`` count by kind/name; ``fault`` describes a fatal signal's cause.
    :meth:`to_json` is the ``--json`` document.
    """

    exit_status: int              # as a shell shows it: code, or 128+signal
    exit_code: int | None         # the value passed to exit(), if it exited
    signal: int | None            # the fatal signal, if killed
    stop_reason: str              # exited | killed | budget | deadlock
    message: str
    stdout: bytes
    stderr: bytes
    user_insns: int
    kernel_cycles: int            # cost-model cycles + kernel stub instructions, all CPUs
    cycles: int                   # elapsed simulated time (the furthest CPU clock)
    sim_seconds: float
    traps: dict[str, int]
    syscalls: dict[str, int]
    unknown_syscalls: dict[int, int]
    tasks: list[dict[str, Any]]
    cpus: list[dict[str, Any]]
    locks: list[dict[str, Any]]
    fault: dict[str, Any] | None
    config: dict[str, Any]
    policies: dict[str, str]
    sysctls: dict[str, int]
    wall_seconds: float
    warnings: dict[str, int] = field(default_factory=dict)   # WARN_ON conditions hit (Kernel.warn_on)
    extra: dict[str, Any] = field(default_factory=dict)
    plugins: list[dict[str, Any]] = field(default_factory=list)   # plug-in variants/overrides in use

    @classmethod
    def from_kernel(cls, k: "Kernel") -> "RunResult":
        init = k.init_task
        assert init is not None
        leader = k.tasks[init.tgid]
        sig = leader.term_signal or (leader.exit_code & 0x7F if leader.exit_code & 0x7F else 0)
        if k.stop_reason in ("budget", "deadlock"):
            status, code, sig_out, reason = 124 if k.stop_reason == "budget" else 125, None, None, k.stop_reason
        elif sig:
            status, code, sig_out, reason = 128 + sig, None, sig, "killed"
        else:
            code = (leader.exit_code >> 8) & 0xFF
            status, sig_out, reason = code, None, "exited"
        msg = k.stop_message
        if reason == "killed":
            msg = f"killed by {E.SIGNAL_NAMES.get(sig, sig)}" + (" (core dumped)" if leader.exit_code & 0x80 else "")
        # past the kernel's REAPED_ROWS, reaped tasks left the task table: they are summed into
        # extra["reaped_not_listed"]
        tasks = [task_row(t) for t in k.tasks.values()]
        extra: dict[str, Any] = {}
        if k.reaped_rest:
            extra["reaped_not_listed"] = dict(k.reaped_rest)
        if k.preempt_stats.points or k.preempt_stats.kernel_ticks:   # kernel/preempt.py
            extra["preempt"] = k.preempt_stats.as_dict()
        cpus = [{"cpu": c.index, "cycles": c.now, "insns": c.insns, "user_insns": c.user_insns,
                 "sys_cycles": c.sys_cycles + c.stub_insns, "idle_cycles": c.idle_cycles,
                 "switches": p.nr_switches, "ticks": p.ticks} for c, p in zip(k.cpus, k.percpu)]
        return cls(
            exit_status=status, exit_code=code, signal=sig_out, stop_reason=reason, message=msg,
            stdout=bytes(k.stdout), stderr=bytes(k.stderr),
            user_insns=sum(c.user_insns for c in k.cpus),
            kernel_cycles=sum(c.sys_cycles + c.stub_insns for c in k.cpus),
            cycles=k.runloop.elapsed, sim_seconds=k.clock.seconds(k.runloop.elapsed),
            traps=dict(sorted(k.trap_counts.items())), syscalls=dict(sorted(k.syscall_counts.items())),
            unknown_syscalls=dict(k.unknown_syscalls), tasks=tasks, cpus=cpus,
            locks=[lk.stats() for lk in k.locks.values()], fault=k.fault_report,
            config={**k.config.summary(), "kernel": k.version.name}, policies=k.policies.for_arch(k.config.arch),
            sysctls={n: e.value for n, e in k.sysctl.entries.items()}, wall_seconds=k.wall_seconds,
            warnings=dict(sorted(k.warnings.items())),
            plugins=k.policies.plugins_in_use(k.config.arch),
            extra=extra,
        )

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["stdout"] = self.stdout.decode("utf-8", "replace")
        d["stderr"] = self.stderr.decode("utf-8", "replace")
        d["unknown_syscalls"] = {str(k): v for k, v in self.unknown_syscalls.items()}
        d.pop("wall_seconds")       # host time would break bit-for-bit reproducibility
        return d
