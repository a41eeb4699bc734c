"""Generating signals — mirrors kernel/signal.c: __send_signal_locked, prepare_signal,
complete_signal, signal_wake_up, force_sig_info; kill/tkill/tgkill/rt_sigqueueinfo; SIGCHLD to
the parent (do_notify_parent)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403
from emukern.kernel.signal.base import SignalBase
from emukern.kernel.task import Task, TaskState      # noqa: F401
from emukern.kernel.thread_info import TIF_SIGPENDING

_BLOCKED = TaskState.BLOCKED
_STOP_CONT_KILL = SIG_KERNEL_STOP | _mask(SIGCONT, SIGKILL)     # what prepare_signal acts on

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap


class SignalGenerate(SignalBase):
    """Queueing a signal and waking the thread that takes it."""

    # ---- generation -----------------------------------------------------------------------------
    def send_signal(self, cpu: "Cpu", t: Task, info: KSigInfo, group: bool) -> int:
        """__send_signal_locked: queue ``info`` for the thread (``group`` False: tkill, faults) or
        the process (kill), then complete_signal.  Returns 0 (a dropped signal is no error)."""
        sig = info.signo
        if t.sighand is None:
            init_task_signals(t)
        if not self.prepare_signal(cpu, t, sig):
            return 0
        pending = t.signal.shared_pending if group else t.sigstate.pending
        if sig < SIGRTMIN and pending.signal & (1 << (sig - 1)):
            return 0                    # legacy signals do not queue twice
        pending.add(info)
        self.complete_signal(cpu, t, sig, group)
        return 0

    def prepare_signal(self, cpu: "Cpu", t: Task, sig: int) -> bool:
        """SIGCONT discards pending stop signals and stop signals discard a pending SIGCONT
        (whatever the actions); then an ignored signal is dropped."""
        m = 1 << (sig - 1)
        if not m & _STOP_CONT_KILL:
            if t.sighand.action[sig].handler > SIG_IGN:
                return True             # a user handler: never ignored (kill's common case)
            return not self.sig_ignored(t, sig)
        group = self._threads(t) or [t]
        if sig == SIGCONT or sig == SIGKILL:
            self.do_signal_continue(cpu, t, sig)
        if m & SIG_KERNEL_STOP:
            for th in group:
                th.sigstate.pending.flush(sigmask(SIGCONT))
            t.signal.shared_pending.flush(sigmask(SIGCONT))
        if sig == SIGCONT:
            for th in group:
                th.sigstate.pending.flush(SIG_KERNEL_STOP)
            t.signal.shared_pending.flush(SIG_KERNEL_STOP)
        return not self.sig_ignored(t, sig)

    def complete_signal(self, cpu: "Cpu", p: Task, sig: int, group: bool) -> None:
        """Pick a thread that does not block the signal (the target first) and wake it."""
        from emukern.kernel.signalfd import signalfd_notify
        signalfd_notify(self, cpu, p)   # __send_signal_locked's signalfd_notify: wake signalfd readers
        m = 1 << (sig - 1)
        target = None
        if p.alive and not p.sigstate.blocked & m:      # wants(p), inline
            target = p
        elif group:
            def wants(t: Task) -> bool:
                return t.alive and not t.sigstate.blocked & m
            target = next((t for t in sorted(self._threads(p), key=lambda x: x.tid) if wants(t)), None)
        if sig == SIGKILL:
            target = p                  # SIGKILL cannot be blocked
        if target is None:
            for t in self._threads(p) if group else [p]:
                self.recalc_sigpending(t)
            return
        # signal_wake_up sets TIF_SIGPENDING outright, as Linux's does: the target does not block
        # the signal just queued where it sees it, so recalc_sigpending could only say "set"
        target.flags |= TIF_SIGPENDING
        self.signal_wake_up(cpu, target)

    def signal_wake_up(self, cpu: "Cpu", t: Task) -> None:
        """TIF_SIGPENDING + wake an interruptible sleeper, or kick the CPU it runs on.  A stopped
        task stays stopped (only SIGCONT and SIGKILL resume it, in prepare_signal)."""
        if not t.flags & TIF_SIGPENDING:
            return
        if t.state is _BLOCKED:
            if t.wait_reason.startswith("stopped"):
                return
            if t.wait_reason.startswith("traced"):
                from emukern.kernel.ptrace import ptrace_signal_wake_up
                ptrace_signal_wake_up(self, cpu, t)     # a ptrace-stop ends for SIGKILL only
                return
        elif self.percpu[cpu.index].curr is t:
            return      # the sender itself: it sees TIF_SIGPENDING on its own way out (no kick)
        self.signal_wake_up_state(cpu, t)

    def signal_wake_up_state(self, cpu: "Cpu", t: Task) -> None:
        """Make ``t`` reach its return to user mode soon (interrupt a sleep, kick its CPU)."""
        if t.state is TaskState.BLOCKED and not t.wait_reason.startswith(("stopped", "traced")):
            for wq in t.waitqueues:
                wq.remove(t)
            t.waitqueues = []
            self.wake_up(t, cpu.now, SIG_WAKE)
            return
        for pc in self.percpu:
            if pc.curr is t and pc.index != cpu.index:
                pc.need_resched = True                      # the IPI: it enters the kernel soon
                self.cpus[pc.index].stop()

    def force_sig_info(self, cpu: "Cpu", t: Task, info: KSigInfo) -> None:
        """force_sig_info_to_task: a fault's signal cannot be blocked or ignored — if it is, the
        mask bit is cleared and the action reset to SIG_DFL, so the task dies as Linux's does."""
        if t.sighand is None:
            init_task_signals(t)
        sig = info.signo
        ka = t.sighand.action[sig]
        blocked = bool(t.sigstate.blocked & sigmask(sig))
        if blocked or ka.handler == SIG_IGN:
            ka.handler = SIG_DFL if (blocked or ka.handler == SIG_IGN) else ka.handler
            if blocked:
                t.sigstate.blocked &= ~sigmask(sig)
        if ka.handler == SIG_DFL:
            t.signal.group_exit = False
        pending = t.sigstate.pending
        if not pending.signal & sigmask(sig):
            pending.add(info)
        self.recalc_sigpending(t)
        self.signal_wake_up(cpu, t)

    def force_sig_fault(self, cpu: "Cpu", task: Task, sig: int, code: int, addr: int | None,
                        trap: "Trap | None", report: dict[str, Any] | None) -> None:
        """arm64_force_sig_fault / force_sig_fault: the faulting instruction is where user mode
        resumes (the frame's pc), and on arm64 the fault address and ESR go into the frame."""
        if trap is not None:
            cpu.set_pc(trap.pc)
            st = task.sigstate
            if self.config.arch == "arm64":
                st.fault_address = addr or 0
                st.fault_code = trap.esr or 0
        self.force_sig_info(cpu, task, KSigInfo(sig, code, addr=addr, report=report))

    # ---- syscalls: sending -----------------------------------------------------------------------
    def _processes(self) -> list[Task]:
        return sorted((t for t in self.tasks.values() if t.is_thread_leader and t.alive
                       or t.is_thread_leader and any(x.alive for x in self.tasks.values() if x.tgid == t.tgid)),
                      key=lambda t: t.tid)

    def _group_target(self, t: Task) -> Task | None:
        leader = self.tasks.get(t.tgid)
        if leader is not None and leader.alive:
            return leader
        return next((x for x in self._threads(t)), None)

    def _kill_info(self, task: Task, sig: int, code: int = SI_USER) -> KSigInfo:
        return KSigInfo(sig, code, 0, task.tgid, 0)        # signo, code, errno, pid, uid

    def sys_kill(self, cpu, task, pid, sig, *a):
        """kill_something_info: pid > 0 a process (any of its thread ids names it), 0 the caller's
        process group, -1 every process but init and the caller, < -1 the process group -pid."""
        self._sig_init(task)
        pid, sig = s32(pid), s32(sig)
        cpu.charge(self.cost.syscall_body)
        if not 0 <= sig <= NSIG:
            return -E.EINVAL
        if pid > 0:
            t = self.tasks.get(pid)
            tgt = self._group_target(t) if t is not None else None
            if tgt is None:
                return -E.ESRCH
            return self.send_signal(cpu, tgt, self._kill_info(task, sig), True) if sig else 0
        if pid == -1:
            targets = [p for p in self._processes() if p.tgid not in (1, task.tgid)]
        else:
            pgid = task.signal.pgid if pid == 0 else -pid
            targets = [p for p in self._processes() if p.signal is not None and p.signal.pgid == pgid]
        targets = [g for g in (self._group_target(p) for p in targets) if g is not None]
        if not targets:
            return -E.ESRCH
        if sig:
            for t in targets:
                self.send_signal(cpu, t, self._kill_info(task, sig), True)
        return 0

    def _tkill(self, cpu, task, tgid: int, tid: int, sig: int) -> int:
        self._sig_init(task)
        cpu.charge(self.cost.syscall_body)
        if tid <= 0 or not 0 <= sig <= NSIG:
            return -E.EINVAL
        t = self.tasks.get(tid)
        if t is None or not t.alive or (tgid > 0 and t.tgid != tgid):
            return -E.ESRCH
        return self.send_signal(cpu, t, self._kill_info(task, sig, SI_TKILL), False) if sig else 0

    def sys_tgkill(self, cpu, task, tgid, tid, sig, *a):
        if s32(tgid) <= 0:
            return -E.EINVAL
        return self._tkill(cpu, task, s32(tgid), s32(tid), s32(sig))

    def sys_tkill(self, cpu, task, tid, sig, *a):
        return self._tkill(cpu, task, 0, s32(tid), s32(sig))

    def sys_rt_sigqueueinfo(self, cpu, task, pid, sig, uinfo, *a):
        self._sig_init(task)
        raw = task.mm.read(uinfo, 128)
        code = int.from_bytes(raw[8:12], "little", signed=True)
        if code >= 0 or code == SI_TKILL:
            return -E.EPERM          # only the kernel may claim to be the kernel (or tkill)
        t = self.tasks.get(s32(pid))
        tgt = self._group_target(t) if t is not None else None
        if tgt is None:
            return -E.ESRCH
        sig = s32(sig)
        if not 1 <= sig <= NSIG:
            return -E.EINVAL
        info = KSigInfo(sig, code, pid=task.tgid, value=int.from_bytes(raw[24:32], "little"))
        return self.send_signal(cpu, tgt, info, True)

    # (setpgid/getpgid/setsid/getsid are in kernel/syscalls_proc.py; they keep the process
    # group and session in the SignalStruct, where kill(-pgid) finds them)

    # ---- SIGCHLD ---------------------------------------------------------------------------------
    def exit_notify(self, cpu: "Cpu", task: Task) -> bool:
        """do_notify_parent when a process's last thread is gone: SIGCHLD (the clone's exit
        signal) with CLD_EXITED/KILLED/DUMPED.  True if the child is reaped at once (the parent
        ignores SIGCHLD or set SA_NOCLDWAIT)."""
        leader = self.tasks.get(task.tgid)
        if leader is None or leader.parent is None or leader.signal is None or leader.signal.notified_parent:
            return False
        if any(t.alive for t in self.tasks.values() if t.tgid == task.tgid and t is not task):
            return False
        leader.signal.notified_parent = True
        parent = self._group_target(leader.parent) or leader.parent
        if not parent.alive or parent.sighand is None:
            return False
        sig = leader.sigstate.exit_signal if leader.sigstate else SIGCHLD
        status = leader.exit_code if leader is not task else task.exit_code
        if status & 0x7F:
            code = CLD_DUMPED if status & 0x80 else CLD_KILLED
            val = status & 0x7F
        else:
            code, val = CLD_EXITED, (status >> 8) & 0xFF
        hz = self.clock.tick_cycles
        info = KSigInfo(sig, code, pid=leader.tgid, status=val,
                        utime=sum(t.utime for t in self.tasks.values() if t.tgid == leader.tgid) // hz,
                        stime=sum(t.stime for t in self.tasks.values() if t.tgid == leader.tgid) // hz)
        ka = parent.sighand.action[SIGCHLD]
        autoreap = sig == SIGCHLD and (ka.handler == SIG_IGN or bool(ka.flags & SA_NOCLDWAIT))
        if sig:
            self.send_signal(cpu, parent, info, True)
        return autoreap
