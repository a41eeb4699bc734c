"""clone / set_tid_address <-> kernel/fork.c.

``sys_clone`` is copy_process: it shares or copies the mm (CLONE_VM), the descriptor table
(CLONE_FILES), the fs state, signal handlers, rlimits and credentials, handles the
CLONE_*_SETTID/CLEARTID words, and enqueues the child on the CPU the scheduler picks.  A child
process joins its thread group's children (any thread may wait for it); threads are not
children.  The number of live tasks is capped by ``config.max_tasks`` (EAGAIN).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.resource import copy_rlimits
from emukern.kernel.signal import copy_signals
from emukern.kernel.syscalls import (
    CLONE_CHILD_CLEARTID,
    CLONE_CHILD_SETTID,
    CLONE_FILES,
    CLONE_FS,
    CLONE_PARENT_SETTID,
    CLONE_SETTLS,
    CLONE_SIGHAND,
    CLONE_THREAD,
    CLONE_VM,
)
from emukern.kernel.cred import copy_process_attrs
from emukern.kernel.task import Task

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_set_tid_address(k: "Kernel", cpu, task, tidptr, *a):
    task.clear_child_tid = tidptr
    cpu.charge(k.cost.syscall_body)
    return task.tid


# ---- process lifecycle ---------------------------------------------------------------------
CLONE_NEWNS = 0x20000
CLONE_NEWUSER = 0x10000000


def clone_flags_invalid(flags: int) -> bool:
    """copy_process's first checks, in its order: a new mount namespace (or user namespace)
    cannot share the fs state it would have to leave; a thread needs shared handlers, and
    shared handlers need a shared mm (a handler address means nothing in another mm)."""
    if flags & (CLONE_NEWNS | CLONE_FS) == CLONE_NEWNS | CLONE_FS:
        return True
    if flags & (CLONE_NEWUSER | CLONE_FS) == CLONE_NEWUSER | CLONE_FS:
        return True
    if flags & CLONE_THREAD and not flags & CLONE_SIGHAND:
        return True
    return bool(flags & CLONE_SIGHAND and not flags & CLONE_VM)


def sys_clone(k: "Kernel", cpu, task, flags, newsp, ptid, tls, ctid, *a):
    # the legacy clone's flag word is an int: the upper half of the register is not looked at
    # (the low byte, CSIGNAL, is the exit signal: any value, even one above _NSIG)
    flags &= 0xFFFFFFFF
    if clone_flags_invalid(flags):
        return -E.EINVAL
    if len([t for t in k.tasks.values() if t.alive]) >= k.config.max_tasks:
        return -E.EAGAIN
    cpu.charge(k.cost.fork)
    tid = k.alloc_tid()
    mm = task.mm if flags & CLONE_VM else task.mm.fork()
    if flags & CLONE_VM:
        mm.users += 1
    else:
        # dup_mm copies the whole mm_struct: the stack's growth limit (expand_stack) and the
        # saved auxv (/proc/self/auxv) are the kernel's per-mm fields, kept on the mm here
        mm.stack_limit, mm.saved_auxv = task.mm.stack_limit, task.mm.saved_auxv
    files = task.files if flags & CLONE_FILES else task.files.dup_table()
    child = Task(tid=tid, tgid=task.tgid if flags & CLONE_THREAD else tid,
                 parent=task if not flags & CLONE_THREAD else task.parent, mm=mm, files=files,
                 comm=task.comm, affinity=task.affinity, start_time=cpu.now)
    ctx = cpu.save_context()
    ctx = k.arch.clone_context(ctx, newsp, tls if flags & CLONE_SETTLS else None)
    child.ctx = ctx
    child.thread = k.arch.new_thread_state(child, task, exec_=False)
    fs_namei.fs_fork(k, task, child, flags)                 # cwd and umask (kernel/fs/namei.py)
    copy_signals(child, task, flags)
    copy_rlimits(k, child, task, bool(flags & CLONE_THREAD))     # kernel/resource.py
    copy_process_attrs(child, task)          # creds, nice, policy (kernel/cred.py)
    if flags & CLONE_CHILD_CLEARTID:
        child.clear_child_tid = ctid
    # kernel_clone's put_user to the parent's word and schedule_tail's to the child's: the
    # task exists by then, so a bad pointer is not the call's failure (the write is dropped)
    if flags & CLONE_PARENT_SETTID:
        try:
            task.mm.write_u32(ptid, tid)
        except MemoryFault:
            pass
    if flags & CLONE_CHILD_SETTID:
        try:
            mm.write_u32(ctid, tid)
        except MemoryFault:
            pass
    k.tasks[tid] = child
    if not flags & CLONE_THREAD:
        # a child belongs to the thread group (any thread may wait4 for it); threads are
        # not children, so wait4 never sees them
        k.tasks.get(task.tgid, task).children.append(child)
    child.cpu = cpu.index
    k.sched.enqueue(child, k.sched.select_cpu(child, new=True), cpu.now)
    return tid
