"""Kernel entry and exit: every user->kernel transition and the way back (kernel/entry/common.c).

A trap's path (each arrow one call with a Linux name):
  CPU hook builds a Trap -> :func:`handle_trap` (kernel entry: account user time, charge
  entry) -> :func:`do_syscall` (arch ``syscall_enter`` work, dispatch) or the arch trap handler
  (``do_el0_undef``, ``do_sve_acc``, ``riscv_v_first_use_handler``, ...) ->
  :func:`exit_to_user_mode_loop` (signals, arch return-to-user work) -> the CPU resumes the guest.
A syscall takes :func:`syscall_entry` instead (the CPU's ``on_syscall``): the same steps
in the same order, given the numbers the hook read, with a Trap built only when something needs
one (a debugger gate or listener, a call that blocks/restarts/ends the task, a pending signal) or
reads the trap log.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.preempt import PREEMPTED, offset
from emukern.kernel.preempt import describe as describe_preemption
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.signal import ptrace as signal_ptrace
from emukern.kernel.signal import rseq as signal_rseq
from emukern.kernel.syscalls import BLOCK
from emukern.kernel.syscalls import table as syscalls_table
from emukern.kernel.task import Task, TaskState
from emukern.kernel.thread_info import TIF_SIGPENDING, thread_flag_names
from emukern.machine.cpu_base import Cpu
from emukern.machine.memory import OutOfMemory
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.sched import PerCpu
    from emukern.kernel.types import Kernel

_RUNNABLE = TaskState.RUNNABLE      # (an Enum member looked up on its class costs ~0.15 us here)


class TrapRecord:
    """One entry of the trap log.  Built on every trap, so it stores the Trap and formats lazily."""

    __slots__ = ("seq", "cpu", "tid", "time", "trap", "flags")

    def __init__(self, seq: int, cpu: int, tid: int, time: int, trap: Trap, flags: int = 0) -> None:
        self.seq, self.cpu, self.tid, self.time, self.trap = seq, cpu, tid, time, trap
        self.flags = flags          # the task's thread flags word as the trap left it

    @property
    def tif(self) -> list[str]:
        """The thread flags set when the trap returned, by their Linux names."""
        return thread_flag_names(self.flags)

    kind = property(lambda self: self.trap.kind.value)
    pc = property(lambda self: self.trap.pc)
    insn = property(lambda self: self.trap.insn)
    handler = property(lambda self: self.trap.handler)
    cycles = property(lambda self: self.trap.cycles)
    syndrome = property(lambda self: self.trap.syndrome())

    @property
    def decision(self) -> str:
        t = self.trap      # a Trap, or a signal event logged beside the traps (signal.py)
        return t.describe(E.NAMES) if isinstance(t, Trap) else t.describe()

    def __repr__(self) -> str:
        return (f"TrapRecord(#{self.seq} cpu{self.cpu} tid{self.tid} {self.kind} pc={self.pc:#x} "
                f"{self.handler}: {self.decision})")


class SyscallRecord(TrapRecord):
    """The trap log's entry for a syscall that took the fast path (:meth:`Kernel.syscall_entry`):
    the numbers it was handled with, in one tuple (made without an ``__init__`` call), and its
    :class:`Trap`, built by the CPU the first time someone reads ``trap`` (the trace printer,
    the debugger, a test) — equal to the one the generic path would have logged."""

    __slots__ = ("_t", "_p")
    _t: Trap
    _p: tuple[Any, ...]
    # _p: (seq, cpu index, tid, time, flags, cpu, pc, word, regs, handler name, return value,
    #      cycles, notes)
    seq = property(lambda self: self._p[0])
    cpu = property(lambda self: self._p[1])
    tid = property(lambda self: self._p[2])
    time = property(lambda self: self._p[3])
    flags = property(lambda self: self._p[4])

    @property
    def trap(self) -> Trap:     # type: ignore[override]
        try:
            return self._t
        except AttributeError:
            pass
        cpu, pc, word, regs, name, ret, cycles, notes = self._p[5:]
        t = self._t = cpu.syscall_trap(pc, word, regs)
        t.handler, t.ret, t.cycles, t.notes = name, ret, cycles, notes
        return t


_new_record = object.__new__



def _account_entry(pcpu: Any, task: Any, now: int, ucount: int) -> None:
    """Kernel entry: the time since the CPU's last mark was user time up to the user cycles
    counted, the rest system time (as Linux's tick-based accounting splits it at the
    user/kernel boundary); the marks move to now.  ``syscall_entry`` repeats it inline, one
    frame fewer on every syscall: a change here is made there too."""
    user = ucount - pcpu.user_mark
    total = now - pcpu.last_mark
    task.utime += user if user < total else total
    task.stime += total - user if total > user else 0
    pcpu.last_mark = now
    pcpu.user_mark = ucount



def syscall_entry(k: "Kernel", cpu: Cpu, pc: int, word: int, regs: tuple[int, ...], now: int, ucount: int) -> None:
    """The CPU's ``on_syscall``: :meth:`handle_trap` + :meth:`do_syscall` for a syscall, the
    same steps in the same order (so the same cycles), without a Trap object while nothing
    needs one.  Linux's el0_svc / do_trap_ecall_u is likewise the short path of the entry
    code: a syscall whose work flags are clear goes in, dispatches and returns without the
    slow-path calls.  Here the Trap is built (by the CPU, ``syscall_trap``) only for what
    reads it: a debugger gate or trap listener (then the whole generic path runs), a
    syscall that blocks, is preempted, restarts or ends the task, a pending signal — and
    the trap log, whose record builds it when it is read.  ``now``, ``ucount``: the CPU's
    marks at the trap (what handle_trap reads with cpu.marks())."""
    if k.trap_gate is not None or k.trap_listeners:
        handle_trap(k, cpu, cpu.syscall_trap(pc, word, regs))
        return
    # (sync_gate is not consulted: it parks traps that take a shared kernel lock at entry,
    # arm64's undef_lock, and a syscall takes none at entry)
    pcpu, ret_slot, write_ret = k._sys_percpu[cpu.index]
    task = pcpu.curr
    assert task is not None, "trap on an idle CPU"
    if task.ptrace is not None:     # a traced task may have syscall-stops: the general path
        handle_trap(k, cpu, cpu.syscall_trap(pc, word, regs))
        return
    cost = k.cost
    # kernel entry, as handle_trap: the marks (given by the CPU), the entry's cost.
    # (_account_entry, inline: one Python frame fewer on every syscall)
    user = ucount - pcpu.user_mark
    total = now - pcpu.last_mark
    task.utime += user if user < total else total
    task.stime += total - user if total > user else 0
    pcpu.last_mark = now
    pcpu.user_mark = ucount
    cpu.charge(cost.exception_entry)
    nr = regs[0]
    entry = k._dispatch.get(nr)
    if entry is not None:
        entry[2] += 1               # trap_counts["syscall"] (see build_syscall_table)
    else:
        k._trap_counts["syscall"] += 1
    # do_syscall
    arch = k.arch
    note = arch.syscall_enter(cpu, task)   # vstate discard / fpsimd_syscall_enter
    notes = [note] if note else None
    cpu.charge(cost.syscall_dispatch)
    task.syscalls += 1
    if entry is None:               # an unknown number: _call_syscall counts it, -ENOSYS
        name, ret = syscalls_table._call_syscall(k, cpu, task, nr, regs[1:])
    else:
        # _call_syscall for a number with a row, inline (its frame is a tenth of a null
        # syscall's Python time): the same call, the same errors turned into errnos
        name = entry[0]
        try:
            ret = entry[1](cpu, task, regs[1], regs[2], regs[3], regs[4], regs[5], regs[6])
        except MemoryFault:
            ret = -E.EFAULT
        except OutOfMemory:
            ret = -E.ENOMEM
    if ret is BLOCK or ret is PREEMPTED or task.state is not _RUNNABLE or pcpu.curr is not task \
            or -517 < ret < -511:
        # the rare outcomes: the generic path from here, with the Trap it logs
        slow = cpu.syscall_trap(pc, word, regs)
        slow.notes = notes
        _syscall_finish(k, cpu, task, slow, nr, regs[1:], name, ret)
        _trap_exit(k, cpu, task, pcpu, slow, now)
        return
    if k.syscall_notes:          # e.g. a user copy through kernel-mode vector
        notes = (notes or []) + k.syscall_notes
        k.syscall_notes = []
    if ret_slot is None:
        arch.set_syscall_return(cpu, ret)
    else:
        ret_slot.value = ret        # regs->a0 / regs->regs[0]: no Python frame (reg_write_parts)
        write_ret()
    # exit_to_user_mode_loop, its common case as a guarded prefix: no signal pending, the mm
    # unchanged and the arch's work flags clear — the loop would only test the flags, so that
    # test's cost joins the exception return's in one charge (nothing reads the clock between).
    # A signal for a user handler with nothing else due (a kill to oneself) is delivered first
    # by do_signal's own first step, deliver_to_handler: its note joins the syscall's, and the
    # record stays a SyscallRecord (no Trap made while nothing reads one).  Anything else
    # (a second signal, a default action, a stop, a restart, a tracer, a changed mm) runs the
    # one loop below, with the Trap its signal code logs.
    trap: Trap | None = None
    ret_cost = cost.exception_return
    if not pcpu.need_resched:
        mm = cpu.mm
        work = arch.exit_work_tif
        sig = task.signal
        if task.flags & TIF_SIGPENDING and sig is not None and mm is task.mm \
                and mm.version == cpu.mapped_version:
            delivered = notes if notes is not None else []
            if signal_delivery.deliver_to_handler(k, cpu, task, delivered):
                notes = delivered
        if task.flags & TIF_SIGPENDING or (sig is not None and sig.stop_pending) \
                or mm is not task.mm or mm.version != cpu.mapped_version or task.state is not _RUNNABLE:
            trap = cpu.syscall_trap(pc, word, regs)
            trap.handler, trap.ret, trap.notes = name, ret, notes
            ret_cost += exit_to_user_mode_loop(k, cpu, task, trap)[1]
        elif work is not None and not task.flags & work:
            ret_cost += cost.tif_check      # arch_exit_to_user_mode_work's flag test, inline
        else:
            note = arch.exit_to_user(cpu, task)     # ... and its work
            if note:
                if notes is None:
                    notes = [note]
                else:
                    notes.append(note)
    end, ucount = cpu.charge_marks(ret_cost)
    cycles = end - now
    if entry is not None:
        entry[3] += 1               # syscall_counts[name] and trap_cycles["syscall"]
        entry[4] += cycles
    else:
        k._syscall_counts[name] += 1
        k._trap_cycles["syscall"] += cycles
    task.stime += end - pcpu.last_mark
    pcpu.last_mark = end
    pcpu.user_mark = ucount
    k._seq += 1
    if trap is None:
        rec = _new_record(SyscallRecord)      # (no __init__ frame: the record is one tuple)
        rec._p = (k._seq, cpu.index, task.tid, end, task.flags, cpu, pc, word, regs, name, ret, cycles, notes)
        k.trap_log.append(rec)
    else:
        trap.cycles = cycles
        k.trap_log.append(TrapRecord(k._seq, cpu.index, task.tid, end, trap, task.flags))
    if pcpu.need_resched:
        cpu.stop()


def handle_trap(k: "Kernel", cpu: Cpu, trap: Trap) -> None:
    """Every user->kernel transition lands here (called from the CPU's hook)."""
    task = k.percpu[cpu.index].curr
    assert task is not None, "trap on an idle CPU"
    if k.sync_gate is not None and cpu.running and k.sync_gate(cpu, task, trap):
        k.percpu[cpu.index].parked_trap = trap    # delivered by _round when others caught up
        k.parked_traps += 1
        cpu.stop()
        return
    if k.trap_gate is not None and k.deferred_trap is None and k.trap_gate(cpu, task, trap):
        k.deferred_trap = (cpu, trap)     # the debugger runs it later: resume_trap()
        k.deferred_pc = cpu.get_pc()      # the PC the handler expects (e.g. past ecall/svc)
        cpu.set_pc(trap.pc)
        cpu.stop()
        return
    pcpu = k.percpu[cpu.index]
    now, ucount = cpu.marks()
    _account_entry(pcpu, task, now, ucount)     # kernel entry
    costs = k._costs
    cpu.charge(costs["exception_entry"])
    kind = trap.kind
    k._trap_counts[kind._value_] += 1     # (Enum.value is a property; _value_ is not)
    listeners = k.trap_listeners
    for cb in listeners:
        cb("enter", cpu, task, trap)
    if kind is TrapKind.SYSCALL:
        do_syscall(k, cpu, task, trap)
    else:
        k.arch.handle_trap(cpu, task, trap)
    _trap_exit(k, cpu, task, pcpu, trap, now)


def _trap_exit(k: "Kernel", cpu: Cpu, task: Task, pcpu: PerCpu, trap: Trap, now: int) -> None:
    """handle_trap after the handler: exit_to_user_mode, exception return, the accounting
    and the trap log (``now``: the time at kernel entry)."""
    costs = k._costs
    kind = trap.kind
    listeners = k.trap_listeners
    ret_cost = costs["exception_return"]
    if pcpu.curr is task and not pcpu.need_resched and task.state is TaskState.RUNNABLE:
        ret_cost += exit_to_user_mode_loop(k, cpu, task, trap)[1]
    end, ucount = cpu.charge_marks(ret_cost)
    trap.cycles = end - now
    k._trap_cycles[kind._value_] += end - now
    task.stime += end - pcpu.last_mark
    pcpu.last_mark = end
    pcpu.user_mark = ucount
    k._seq += 1
    k.trap_log.append(TrapRecord(k._seq, cpu.index, task.tid, end, trap, task.flags))
    for cb in listeners:
        cb("exit", cpu, task, trap)
    if pcpu.need_resched:
        cpu.stop()




def exit_to_user_mode_loop(k: "Kernel", cpu: Cpu, task: Task, trap: Trap | None = None) -> tuple[str | None, int]:
    """kernel/entry/common.c's exit_to_user_mode_loop, the one way back to user mode for every
    path (a trap, a syscall, a task the scheduler switched in, a tick between instructions):
    re-sync a changed mm, deliver pending signals (do_signal, logging against ``trap``), then
    the arch's return-to-user work (deferred vector restore, lazy FP), whose note joins
    ``trap``'s.  Returns that note and the cycles still to charge with the exception return: when the arch's work
    flags are clear its exit would only test them, and that test is charged with the return."""
    mm = cpu.mm
    if mm is not task.mm or mm.version != cpu.mapped_version:
        cpu.sync_mm()           # brk/mmap/munmap changed the current mm
    sig = task.signal
    if task.flags & TIF_SIGPENDING or (sig is not None and sig.stop_pending):
        signal_delivery.do_signal(k, cpu, task, trap)
    if task.state is not _RUNNABLE:
        return None, 0          # a fatal signal or a group stop: the caller schedules
    if task.rseq is not None and task.rseq.notify:   # TIF_NOTIFY_RESUME's rseq work
        signal_rseq.rseq_handle_notify_resume(k, cpu, task)
    note, extra = arch_exit_to_user_mode_work(k, cpu, task)
    if note and trap is not None:       # the arch's decision joins the trap's record
        if trap.notes is None:
            trap.notes = [note]
        else:
            trap.notes.append(note)
    return note, extra


def arch_exit_to_user_mode_work(k: "Kernel", cpu: Cpu, task: Task) -> tuple[str | None, int]:
    """The loop's last step: the arch's return-to-user work (arch_exit_to_user_mode_prepare).
    When the arch's work flags are clear its exit would only test them: that test's cost is
    returned, to be charged with the exception return (syscall_entry inlines this test)."""
    work = k.arch.exit_work_tif
    if work is not None and not task.flags & work:
        return None, k.cost.tif_check
    return k.arch.exit_to_user(cpu, task), 0


def exit_to_user_mode(k: "Kernel", cpu: Cpu, task: Task) -> None:
    """The return to user mode of a task the scheduler switched in or a tick interrupted: the
    loop, then schedule() if the task may no longer run."""
    _note, extra = exit_to_user_mode_loop(k, cpu, task)
    if task.state is not _RUNNABLE:
        k.sched.schedule(cpu)
        return
    if extra:
        cpu.charge(extra)


def do_syscall(k: "Kernel", cpu: Cpu, task: Task, trap: Trap) -> None:
    """el0_svc / do_trap_ecall_u.  Unicorn has already stepped the PC past ecall/svc, which is
    what Linux's ``regs->epc += 4`` (RISC-V) and the ELR after SVC (arm64) give."""
    regs = trap.sysregs or cpu.syscall_regs()
    nr = regs[0]
    args = tuple(regs[1:])
    link = task.ptrace
    if link is not None and link.syscall_trace:
        if signal_ptrace.syscall_trace_enter(k, cpu, task, trap):
            return                  # stopped; the ecall/svc runs again when resumed
        regs = cpu.syscall_regs()   # the arch's entry work ran before the stop
        nr, args = regs[0], tuple(regs[1:])
    else:
        note = k.arch.syscall_enter(cpu, task)   # vstate discard / fpsimd_syscall_enter
        if note:
            trap.notes = [note]
    cpu.charge(k._costs["syscall_dispatch"])
    task.syscalls += 1
    name, ret = syscalls_table._call_syscall(k, cpu, task, nr, args)
    _syscall_finish(k, cpu, task, trap, nr, args, name, ret)


def _syscall_finish(k: "Kernel", cpu: Cpu, task: Task, trap: Trap, nr: int, args: tuple[int, ...], name: str,
                    ret: Any) -> None:
    """do_syscall after the handler: its notes, blocking, preemption, the return value."""
    if k.syscall_notes:          # e.g. a user copy through kernel-mode vector
        trap.notes = (trap.notes or []) + k.syscall_notes
        k.syscall_notes = []
    trap.handler = name
    k._syscall_counts[name] += 1
    if ret is BLOCK:
        task.pending = (nr, args)
        if task.state is not TaskState.BLOCKED:
            k.sched.block_current(cpu, task, name)
        trap.decision = f"blocked ({task.wait_reason})"
        return
    if ret is PREEMPTED:            # switched out at a preemption point (kernel/preempt.py)
        task.pending = (nr, args)   # runnable: schedule() continues the call when it is back
        trap.decision = describe_preemption(task, name)
        return
    if task.state is TaskState.RUNNABLE and k.percpu[cpu.index].curr is task:
        if -517 < ret < -511:       # ERESTART*: do_signal restarts the call or makes it -EINTR
            signal_delivery.note_restart(k, task, nr, args, ret)
        k.arch.set_syscall_return(cpu, ret)
        trap.ret = ret
        if task.ptrace is not None:
            signal_ptrace.syscall_trace_exit(k, cpu, task, trap)
    elif not task.alive:
        trap.decision = trap.decision or (f"task exited (wait status {task.exit_code:#x})")


# ---- a syscall continued after the task slept or was preempted in it --------------------------
def restart_syscall(k: "Kernel", cpu: Cpu, task: Task) -> bool:
    """A task switched back in with a syscall pending: re-run a blocked one from the start
    (Linux's wait loops; a signal that woke it ends it with ERESTART* instead), or continue one
    preempted at a preemption point.  True if it completed (its return value set)."""
    assert task.pending is not None
    if task.resume is not None:     # switched out at a preemption point: continue, not restart
        return resume_syscall(k, cpu, task)
    nr, args = task.pending
    task.state = TaskState.RUNNABLE
    # (task.sigpending read as its flag bit: the FlagView's frame, on every re-run of a read)
    ret = signal_delivery.syscall_interrupted(k, cpu, task, nr, args) if task.flags & TIF_SIGPENDING else None
    if ret is None:
        _name, ret = syscalls_table._call_syscall(k, cpu, task, nr, args)
    if ret is BLOCK:
        task.state = TaskState.BLOCKED
        k.percpu[cpu.index].curr = None
        k.sched.account(cpu, task)
        task.ctx = cpu.save_context()
        return False
    if ret is PREEMPTED:
        # the re-run call reached a preemption point with TIF_NEED_RESCHED set (the fair class's
        # slice can end at a tick inside it): it stays runnable and continues from task.resume
        return False
    task.pending = None
    if task.alive:
        if -517 < ret < -511:       # ERESTART*: resolved by do_signal on the way out
            signal_delivery.note_restart(k, task, nr, args, ret)
        k.arch.set_syscall_return(cpu, ret)
        if task.ptrace is not None:     # a slept syscall's exit stop (or stepped-svc report)
            signal_ptrace.syscall_trace_exit(k, cpu, task, None)
            return task.state is _RUNNABLE
    return True


def resume_syscall(k: "Kernel", cpu: "Cpu", task: "Task") -> bool:
    """schedule() switched a task preempted inside a syscall back in: continue the call from its
    recorded progress (not from the start, and no signal check: preemption is not a sleep, so
    nothing interrupts it).  True when it completed (its return value set); False when it was
    preempted again and must be switched out once more."""
    assert task.pending is not None and task.resume is not None
    nr, args = task.pending
    # __schedule cleared the flag of the task it switched away from (TIF_NEED_RESCHED is per
    # task in Linux, per CPU here): the task switched in starts with none pending
    k.percpu[cpu.index].need_resched = False
    before = offset(task.resume)
    name, ret = syscalls_table._call_syscall(k, cpu, task, nr, args)
    trap = Trap(TrapKind.SYSCALL, k.config.arch, cpu.get_pc(), cpu=cpu.index)
    trap.handler = name
    notes, k.syscall_notes = k.syscall_notes, []
    if ret is BLOCK:                # it went to sleep instead (a fresh start when woken)
        task.resume = None
        trap.decision = f"resumed after preemption: blocked ({task.wait_reason})"
        k.log_trap(cpu, task, trap)
        return False
    if ret is PREEMPTED:
        trap.decision = "resumed after preemption; " + describe_preemption(task, name)
        trap.notes = notes or None
        k.log_trap(cpu, task, trap)
        return False
    task.pending = None
    task.resume = None
    trap.decision = f"resumed after preemption at {before} bytes: returned {ret}"
    trap.notes = notes or None
    k.log_trap(cpu, task, trap)
    if task.alive:
        k.arch.set_syscall_return(cpu, ret)
    return True
