"""Process-query syscalls real programs and the kernel selftests call: process groups and
sessions (kernel/sys.c setpgid/getpgid/setsid/getsid), resource usage (getrusage, times),
sysinfo, clock_getres, umask, and the RISC-V riscv_hwprobe entry.  Every value comes from the
model: task times are its accounted cycles converted on the machine's clock."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E

USER_HZ = 100                    # clock_t unit of times() and /proc (ABI constant)
RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD = 0, -1, 1


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


class ProcSyscallsMixin:
    cost: Any
    tasks: dict
    clock: Any
    config: Any

    if TYPE_CHECKING:       # (SignalMixin)
        def _sig_init(self, task: Any) -> Any: ...

    def _leader(self, task: Any) -> Any:
        return self.tasks.get(task.tgid, task)

    def _pid_target(self, task: Any, pid: int) -> Any:
        pid = _s32(pid)
        if pid < 0:
            return None
        t = self._leader(task) if pid == 0 else self.tasks.get(pid)
        return t if t is not None and t.alive and t.is_thread_leader else None

    # the process group and session live in the thread group's signal_struct (kernel/signal.py),
    # where kill(-pgid) and job control find them; fork copies them
    def _signal_struct(self, t: Any) -> Any:
        leader = self._leader(t)
        if leader.signal is None:
            self._sig_init(leader)
        return leader.signal

    def pgid_of(self, t: Any) -> int:
        return self._signal_struct(t).pgid

    def sid_of(self, t: Any) -> int:
        return self._signal_struct(t).sid

    # ---- process groups and sessions -------------------------------------------------------------
    def sys_getpgid(self, cpu, task, pid, *a):
        t = self._pid_target(task, pid)
        if t is None:
            return -E.ESRCH
        return self.pgid_of(t)

    def sys_getsid(self, cpu, task, pid, *a):
        t = self._pid_target(task, pid)
        if t is None:
            return -E.ESRCH
        return self.sid_of(t)

    def sys_setpgid(self, cpu, task, pid, pgid, *a):
        """setpgid: the caller or one of its children, not a session leader, into a group of
        the same session (or a new group named by its own pid)."""
        pgid = _s32(pgid)
        if pgid < 0:
            return -E.EINVAL
        me = self._leader(task)
        t = self._pid_target(task, pid)
        if t is None or (t is not me and t.parent is not me):
            return -E.ESRCH
        if self.sid_of(t) != self.sid_of(me):
            return -E.EPERM
        if self.sid_of(t) == t.tgid:
            return -E.EPERM                      # a session leader keeps its group
        pgid = pgid or t.tgid
        if pgid != t.tgid and not any(x.alive and self.pgid_of(x) == pgid and self.sid_of(x) == self.sid_of(me)
                                      for x in self.tasks.values() if x.is_thread_leader):
            return -E.EPERM
        self._signal_struct(t).pgid = pgid
        return 0

    def sys_setsid(self, cpu, task, *a):
        me = self._leader(task)
        if self.pgid_of(me) == me.tgid:
            return -E.EPERM                      # a process-group leader cannot start a session
        sig = self._signal_struct(me)
        sig.sid = sig.pgid = me.tgid
        return me.tgid

    def sys_umask(self, cpu, task, mask, *a):
        from emukern.kernel.fs.vfs import fs_of
        fs = fs_of(task)
        old, fs.umask = fs.umask, mask & 0o777
        return old

    # ---- usage and time --------------------------------------------------------------------------
    def _timeval_of_cycles(self, cycles: int) -> bytes:
        us = int(self.clock.ns(cycles)) // 1000
        return struct.pack("<qq", us // 10**6, us % 10**6)

    def _group(self, task: Any) -> list[Any]:
        return [t for t in self.tasks.values() if t.tgid == task.tgid]

    def _usage(self, ts: list[Any]) -> list[int]:
        """[utime, stime, nvcsw, nivcsw, maxrss KiB] of the tasks ``ts``."""
        maxrss = max([sum(m.size for m in t.mm.mappings) // 1024 for t in ts if t.mm is not None] or [0])
        return [sum(t.utime for t in ts), sum(t.stime for t in ts), sum(t.nvcsw for t in ts),
                sum(t.nivcsw for t in ts), maxrss]

    def usage_both(self, child: Any) -> list[int]:
        """getrusage(p, RUSAGE_BOTH): the process's own threads plus what its reaped children
        used (maxrss: the larger of the two)."""
        own = self._usage(self._group(child))
        kids = self._leader(child).cusage
        return [own[0] + kids[0], own[1] + kids[1], own[2] + kids[2], own[3] + kids[3], max(own[4], kids[4])]

    def release_zombie(self, task: Any, child: Any) -> None:
        """wait_task_zombie reaping ``child`` for wait4/waitid: the waiting process's
        signal->cutime, cstime, cnvcsw, cnivcsw grow by the child's RUSAGE_BOTH and cmaxrss takes
        the larger (what getrusage(RUSAGE_CHILDREN) and times() report afterwards); then the
        child is dead and released between rounds (release_task)."""
        from emukern.kernel.task import TaskState
        u = self.usage_both(child)
        acc = self._leader(task).cusage
        for i in range(4):
            acc[i] += u[i]
        acc[4] = max(acc[4], u[4])
        child.state = TaskState.DEAD
        self._to_release.append(child)

    def sys_getrusage(self, cpu, task, who, usage, *a):
        who = _s32(who)
        if who == RUSAGE_SELF:
            u = self._usage(self._group(task))
        elif who == RUSAGE_THREAD:
            u = self._usage([task])
        elif who == RUSAGE_CHILDREN:
            u = list(self._leader(task).cusage)
        else:
            return -E.EINVAL
        task.mm.write(usage, self.rusage_bytes(u))
        cpu.charge(self.cost.syscall_body)
        return 0

    def rusage_bytes(self, u: list[int]) -> bytes:
        """struct rusage (144 bytes) of a usage [utime, stime, nvcsw, nivcsw, maxrss]: ru_utime,
        ru_stime, ru_maxrss (KiB), ru_nvcsw, ru_nivcsw; the fields emukern has no model for
        (page faults, block I/O, signals received...) are 0."""
        longs = [u[4], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, u[2], u[3]]
        return self._timeval_of_cycles(u[0]) + self._timeval_of_cycles(u[1]) + struct.pack("<14q", *longs)

    def put_child_rusage(self, task: Any, child: Any, ru: int) -> int:
        """The rusage a wait reports for the child it reports (wait4's and waitid's last argument):
        getrusage(child, RUSAGE_BOTH) in kernel/exit.c.  Linux copies it out only when a child
        was reported: 0, or -EFAULT for a bad pointer."""
        if not ru:
            return 0
        try:
            task.mm.write(ru, self.rusage_bytes(self.usage_both(child)))
        except Exception:
            return -E.EFAULT
        return 0

    def _clock_t(self, cycles: int) -> int:
        return int(self.clock.ns(cycles)) * USER_HZ // 10**9

    def sys_times(self, cpu, task, buf, *a):
        if buf:
            g, c = self._usage(self._group(task)), self._leader(task).cusage
            task.mm.write(buf, struct.pack("<4q", self._clock_t(g[0]), self._clock_t(g[1]),
                                           self._clock_t(c[0]), self._clock_t(c[1])))
        cpu.charge(self.cost.syscall_body)
        return self._clock_t(cpu.now)

    def sys_sysinfo(self, cpu, task, info, *a):
        """struct sysinfo (112 bytes on 64-bit): uptime from the machine clock, the memory the
        address-space limit allows, live process count; no swap, loads 0."""
        from emukern.machine.memory import AS_LIMIT
        used = sum(sum(m.size for m in t.mm.mappings) for t in self.tasks.values()
                   if t.alive and t.is_thread_leader)
        total = AS_LIMIT
        procs = sum(1 for t in self.tasks.values() if t.alive)
        raw = struct.pack("<q3Q6QHH4x2QI4x", int(self.clock.ns(cpu.now)) // 10**9, 0, 0, 0,
                          total, max(0, total - used), 0, 0, 0, 0, min(procs, 0xFFFF), 0, 0, 0, 1)
        task.mm.write(info, raw)
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_clock_getres(self, cpu, task, clk, res, *a):
        """posix_get_hrtimer_res: 1 ns for the high-resolution clocks; the *_COARSE clocks tick
        once a jiffy (CLOCK_REALTIME_COARSE = 5, CLOCK_MONOTONIC_COARSE = 6)."""
        clk = _s32(clk)
        if not 0 <= clk <= 11 or clk in (10,):      # 10 is unused in include/uapi/linux/time.h
            return -E.EINVAL
        ns = 10**9 // self.config.hz if clk in (5, 6) else 1
        if res:
            task.mm.write(res, struct.pack("<qq", ns // 10**9, ns % 10**9))
        return 0

    def sys_riscv_hwprobe(self, cpu, task, pairs, count, cpusetsize, cpus, flags, *a):
        if self.config.arch != "riscv64":
            return -E.ENOSYS            # 258 is an arch-specific slot that only RISC-V fills
        from emukern.kernel.riscv.hwprobe import do_riscv_hwprobe
        return do_riscv_hwprobe(self, cpu, task, pairs, count, cpusetsize, cpus, flags)
