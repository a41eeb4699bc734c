"""kernel/exit.c: do_exit, do_group_exit, release_task and the helpers of the wait calls.

It lives beside the signal code rather than under syscalls/ because the two call each other:
exiting notifies the parent with SIGCHLD (``exit_notify``), and a fatal signal ends in
``do_group_exit``.  ``mmput`` drops a user of the mm (the last one frees it, at exit or exec),
``release_zombie`` and ``put_child_rusage`` are wait_task_zombie's accounting for wait4/waitid,
and ``rusage_bytes`` packs a ``struct rusage``.  Only the first REAPED_ROWS reaped tasks stay in
``Kernel.tasks`` for the run's result; later ones are summed, so a fork/exit loop runs in
bounded host memory.  The syscalls themselves are in kernel/syscalls/exit.py.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.ipc import exit as ipc_exit
from emukern.kernel.fs import pidfs as fs_pidfs
from emukern.kernel.signal import futex_core
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal import timers as signal_timers
from emukern.kernel.signal.defs import CLD_DUMPED, CLD_EXITED, CLD_KILLED, NSIG, SA_NOCLDWAIT, SIG_IGN, SIGCHLD, SIGKILL
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.uapi import USER_HZ
from emukern.kernel.task import Task, TaskState
from emukern.kernel.signal import ptrace as signal_ptrace

if TYPE_CHECKING:
    from emukern.kernel.mm.mm_struct import MmStruct
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu


# The first REAPED_ROWS reaped tasks stay in Kernel.tasks (memory freed, accounting and thread
# state kept for the result and post-mortem inspection); later ones leave it and are summed into
# RunResult.extra["reaped_not_listed"], so a fork/exit loop runs in bounded host memory.
REAPED_ROWS = 512

def do_group_exit(k: "Kernel", cpu, task, status: int, signaled: bool = False) -> None:
    """Kill every thread of the group; the leader carries the status."""
    code = status & 0xFF if signaled else status       # the signal, | 0x80 when a core was dumped
    for t in list(k.tasks.values()):
        if t.tgid == task.tgid and t.alive and t is not task:
            _remove_from_queues(k, t)
            do_exit(k, cpu, t, code, current=False)
    do_exit(k, cpu, task, code)
    leader = k.tasks.get(task.tgid)
    if leader is not None:
        leader.exit_code = code
        leader.term_signal = status & 0x7F if signaled else 0


def _remove_from_queues(k: "Kernel", t: Task) -> None:
    for wq in t.waitqueues:
        wq.remove(t)
    for pc in k.percpu:
        if t in pc.rq:
            pc.rq.remove(t)
        if pc.curr is t and pc.index != -1:
            pc.need_resched = True
            k.cpus[pc.index].stop()


def do_exit(k: "Kernel", cpu, task, status: int, current: bool = True) -> None:
    if not task.alive:
        return
    task.exit_code = status
    futex_core.exit_robust_list(k, cpu.now, task)     # (exit_mm_release: locks it still holds)
    if task.clear_child_tid and task.mm.users > 1:
        try:
            task.mm.write_u32(task.clear_child_tid, 0)
            wq = k.futex_queues.get((id(task.mm), task.clear_child_tid))
            if wq:
                k.sched.wake_queue(wq, cpu.now, nr=1, value=0)
        except MemoryFault:
            pass
    complete_vfork_done(k, cpu, task)   # (exit_mm_release: a vfork parent goes on)
    mmput(k, task.mm)   # (exit_mm: the last user frees it)
    ipc_exit.exit_sysvipc(k, cpu, task)     # exit_sem / exit_shm (kernel/ipc/exit.py)
    if task.files is not None:
        others = [t for t in k.tasks.values() if t is not task and t.alive and t.files is task.files]
        if not others:
            for wq in task.files.close_all():
                k.sched.wake_queue(wq, cpu.now)
    k.arch.exit_thread(cpu, task)
    signal_ptrace.exit_ptrace(k, cpu, task)          # a dying tracer detaches its tracees
    send_pdeath_signals(k, cpu, task)
    task.ptrace = None                    # ... and a dying tracee leaves its tracer's list
    if task.pid_ns is not None and not any(t.alive for t in k.tasks.values()
                                           if t.tgid == task.tgid and t is not task):
        forget_original_parent(k, cpu, task)     # (a process born in a pid namespace)
    # children of an exiting process are reparented to init (or reaped if init is gone)
    reap = exit_notify(k, cpu, task)    # (SIGCHLD to the parent)
    if task.is_thread_leader:
        task.state = TaskState.ZOMBIE if task.parent is not None and not reap else TaskState.DEAD
        if task.parent is not None:
            wq = k.child_wait.get(task.parent.tgid)
            if wq:
                k.sched.wake_queue(wq, cpu.now)
    else:
        task.state = TaskState.DEAD
        k._to_release.append(task)
    if current and k.percpu[cpu.index].curr is task:
        k.sched.account(cpu, task)
        k.percpu[cpu.index].need_resched = True
        cpu.stop()
    _remove_from_queues(k, task)


def forget_original_parent(k: "Kernel", cpu, task: Task) -> None:
    """forget_original_parent for the last thread of a process born in a pid namespace: the
    namespace's init going kills the namespace (zap_pid_ns_processes: every other task with a
    number there is killed by SIGKILL, the ones it would have reaped are reaped, and nothing
    can be born there any more); any other process leaves its children to that init
    (find_child_reaper), which may wait for them.  (Orphans of the initial namespace keep
    their dead parent, as emukern has always modelled them.)"""
    ns = task.pid_ns
    leader = k.tasks.get(task.tgid, task)
    if ns.child_reaper is leader:
        zap_pid_ns_processes(k, cpu, ns, leader)
        return
    reaper = ns.child_reaper
    if reaper is None or not any(t.alive for t in k.tasks.values() if t.tgid == reaper.tgid):
        return
    for c in list(leader.children):
        if c.state == TaskState.DEAD:
            continue
        leader.children.remove(c)
        c.parent = reaper
        reaper.children.append(c)
    wq = k.child_wait.get(reaper.tgid)
    if wq:
        k.sched.wake_queue(wq, cpu.now)         # (a zombie among them is the reaper's to wait for)


def zap_pid_ns_processes(k: "Kernel", cpu, ns: Any, init: Task) -> None:
    """zap_pid_ns_processes: the init of ``ns`` is exiting.  No task may be born there any
    more (fork answers ENOMEM), every other process with a number in it -- its nested
    namespaces' too -- dies of SIGKILL, and the zombies that init (or another dying member)
    would have waited for are reaped, so only init's own exit is left to report."""
    ns.adding = False
    for t in kpid.ns_tasks(k, ns):
        if t.alive and t.tgid != init.tgid:
            do_group_exit(k, cpu, t, SIGKILL, signaled=True)
    for t in [t for t in k.tasks.values() if t.state == TaskState.ZOMBIE and t.pid_ns is not None
              and ns.is_ancestor_of(t.pid_ns)]:
        parent = k.tasks.get(t.parent.tgid, t.parent) if t.parent is not None else None
        if parent is None or parent.tgid == init.tgid or (parent.pid_ns is not None and ns.is_ancestor_of(parent.pid_ns)):
            release_zombie(k, parent or init, t)


def send_pdeath_signals(k: "Kernel", cpu, task: Task) -> None:
    """forget_original_parent's pdeath_signal: each thread of a process that ``task`` forked
    and that asked for PR_SET_PDEATHSIG has that signal sent to its process, as the thread
    that forked it goes (even when other threads of the parent stay)."""
    for t in [t for t in k.tasks.values() if t.pdeath_signal and t.alive and t.tgid != task.tgid]:
        leader = k.tasks.get(t.tgid)
        if leader is not None and leader.parent is task:
            signal_generate.send_signal(k, cpu, leader, signal_generate._kill_info(k, task, t.pdeath_signal), True)


def complete_vfork_done(k: "Kernel", cpu, task: Task) -> None:
    """mm_release's last step, at exec (once the new mm is in place) and at exit: a CLONE_VFORK
    child gives its borrowed mm back, so the parent sleeping in clone may run again.  The
    completion is used once (a second exec or the exit after an exec finds nothing)."""
    done = task.vfork_done
    if done is None:
        return
    task.vfork_done = None
    k.sched.wake_queue(done, cpu.now)


# wait4/waitid option bits outside the uapi numbers of kernel/signal/defs.py (linux/wait.h)
__WNOTHREAD = 0x20000000
__WALL = 0x40000000
__WCLONE = 0x80000000


def eligible_child(child: Task, options: int) -> bool:
    """eligible_child's clone-child rule (kernel/exit.c): a child whose exit signal is not SIGCHLD
    (a "clone" child, e.g. one made with exit signal 0) is waited for only with __WCLONE, and
    __WCLONE waits for nothing else; __WALL waits for both kinds.  A child no wait may look at
    does not count as a child either: with none left, the wait fails with ECHILD."""
    if options & __WALL:
        return True
    sig = child.sigstate.exit_signal if child.sigstate is not None else SIGCHLD
    return (sig != SIGCHLD) == bool(options & __WCLONE)


def _group(k: "Kernel", task: Any) -> list[Any]:
    return [t for t in k.tasks.values() if t.tgid == task.tgid]


def _usage(k: "Kernel", ts: list[Any]) -> list[int]:
    """[utime, stime, nvcsw, nivcsw, maxrss KiB] of the tasks ``ts``."""
    maxrss = max([sum(m.size for m in t.mm.mappings) // 1024 for t in ts if t.mm is not None] or [0])
    return [sum(t.utime for t in ts), sum(t.stime for t in ts), sum(t.nvcsw for t in ts),
            sum(t.nivcsw for t in ts), maxrss]


def usage_both(k: "Kernel", child: Any) -> list[int]:
    """getrusage(p, RUSAGE_BOTH): the process's own threads plus what its reaped children
    used (maxrss: the larger of the two)."""
    own = _usage(k, _group(k, child))
    kids = signal_base._leader(k, child).cusage
    return [own[0] + kids[0], own[1] + kids[1], own[2] + kids[2], own[3] + kids[3], max(own[4], kids[4])]


def release_zombie(k: "Kernel", task: Any, child: Any) -> None:
    """wait_task_zombie reaping ``child`` for wait4/waitid: the waiting process's
    signal->cutime, cstime, cnvcsw, cnivcsw grow by the child's RUSAGE_BOTH and cmaxrss takes
    the larger (what getrusage(RUSAGE_CHILDREN) and times() report afterwards); then the
    child is dead and released between rounds (release_task)."""
    u = usage_both(k, child)
    acc = signal_base._leader(k, task).cusage
    for i in range(4):
        acc[i] += u[i]
    acc[4] = max(acc[4], u[4])
    child.state = TaskState.DEAD
    k._to_release.append(child)


def rusage_bytes(k: "Kernel", u: list[int]) -> bytes:
    """struct rusage (144 bytes) of a usage [utime, stime, nvcsw, nivcsw, maxrss]: ru_utime,
    ru_stime, ru_maxrss (KiB), ru_nvcsw, ru_nivcsw; the fields emukern has no model for
    (page faults, block I/O, signals received...) are 0."""
    longs = [u[4], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, u[2], u[3]]
    return signal_timers._timeval_of_cycles(k, u[0]) + signal_timers._timeval_of_cycles(k, u[1]) + struct.pack("<14q", *longs)


def put_child_rusage(k: "Kernel", task: Any, child: Any, ru: int) -> int:
    """The rusage a wait reports for the child it reports (wait4's and waitid's last argument):
    getrusage(child, RUSAGE_BOTH) in kernel/exit.c.  Linux copies it out only when a child
    was reported: 0, or -EFAULT for a bad pointer."""
    if not ru:
        return 0
    try:
        task.mm.write(ru, rusage_bytes(k, usage_both(k, child)))
    except MemoryFault:           # a bad user pointer
        return -E.EFAULT
    return 0


def _clock_t(k: "Kernel", cycles: int) -> int:
    return int(k.clock.ns(cycles)) * USER_HZ // 10**9


# ---- SIGCHLD ---------------------------------------------------------------------------------
def exit_notify(k: "Kernel", cpu: "Cpu", task: Task) -> bool:
    """do_notify_parent when a process's last thread is gone: SIGCHLD (the clone's exit
    signal) with CLD_EXITED/KILLED/DUMPED.  True if the child is reaped at once (the parent
    ignores SIGCHLD or set SA_NOCLDWAIT)."""
    leader = k.tasks.get(task.tgid)
    if leader is None or leader.parent is None or leader.signal is None or leader.signal.notified_parent:
        return False
    if any(t.alive for t in k.tasks.values() if t.tgid == task.tgid and t is not task):
        return False
    leader.signal.notified_parent = True
    fs_pidfs.pidfs_exit(k, cpu.now, leader)          # (do_notify_pidfd: pidfd pollers wake)
    parent = signal_generate._group_target(k, leader.parent) or leader.parent
    if not parent.alive or parent.sighand is None:
        return False
    sig = leader.sigstate.exit_signal if leader.sigstate else SIGCHLD
    status = leader.exit_code if leader is not task else task.exit_code
    if status & 0x7F:
        code = CLD_DUMPED if status & 0x80 else CLD_KILLED
        val = status & 0x7F
    else:
        code, val = CLD_EXITED, (status >> 8) & 0xFF
    hz = k.clock.tick_cycles
    info = KSigInfo(sig, code, pid=kpid.task_tgid_vnr(k, leader, parent), status=val,
                    utime=sum(t.utime for t in k.tasks.values() if t.tgid == leader.tgid) // hz,
                    stime=sum(t.stime for t in k.tasks.values() if t.tgid == leader.tgid) // hz)
    ka = parent.sighand.action[SIGCHLD]
    autoreap = sig == SIGCHLD and (ka.handler == SIG_IGN or bool(ka.flags & SA_NOCLDWAIT))
    # clone's CSIGNAL byte is any value: one that is no signal (above _NSIG) is sent as nothing
    if 0 < sig <= NSIG:
        signal_generate.send_signal(k, cpu, parent, info, True)
    return autoreap


# ---- freeing what dead processes held (mmput / release_task) ---------------------------------
def mmput(k: "Kernel", mm: "MmStruct") -> None:
    """Drop one user of ``mm``; the last one frees it (exit_mmap), as Linux does at exit and
    exec — not when the parent reaps the zombie.  The buffers go once no CPU maps them."""
    mm.users -= 1
    init = k.init_task
    if init is not None and mm is init.mm:
        return      # the first process's memory stays readable after the run (Machine.read)
    if mm.users <= 0 and mm is not k._no_mm:
        k._dead_mms.append(mm)


def release_task(k: "Kernel", t: Task) -> None:
    """release_task: a DEAD task is unlinked from its parent's children (its memory went at
    exit).  The first REAPED_ROWS stay in the task table for the result; later ones leave it,
    their accounting summed into ``reaped_rest``."""
    leader = k.tasks.get(t.parent.tgid, t.parent) if t.parent is not None else None
    if leader is not None and t in leader.children:
        leader.children.remove(t)
    if t.is_thread_leader:
        k.child_wait.pop(t.tgid, None)
    t.children = []
    if k.reaped_kept < REAPED_ROWS:
        k.reaped_kept += 1
        return
    k.tasks.pop(t.tid, None)
    k.reaped_rest["tasks"] += 1
    for key in ("utime", "stime", "nvcsw", "nivcsw", "syscalls"):
        k.reaped_rest[key] += getattr(t, key)
