"""clone / clone3 / set_tid_address <-> kernel/fork.c.

``sys_clone`` is copy_process: it shares or copies the mm (CLONE_VM), the descriptor table
(CLONE_FILES), the fs state, signal handlers, rlimits and credentials, handles the
CLONE_*_SETTID/CLEARTID words, and enqueues the child on the CPU the scheduler picks.  A child
process joins its thread group's children (any thread may wait for it); threads are not
children.  The number of live tasks is capped by ``config.max_tasks`` (EAGAIN).
"""
from __future__ import annotations

import operator
import struct
from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.machine.memory import OutOfMemory
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.pidfs import PidFdFile
from emukern.kernel.resource import copy_rlimits
from emukern.kernel.signal import copy_signals
from emukern.kernel.signal import rseq
from emukern.kernel.files import WaitQueue
from emukern.kernel.signal.defs import SIG_DFL, SIG_IGN, SIG_KERNEL_IGNORE, SIG_KERNEL_STOP, SIGKILL, sigmask
from emukern.kernel.sysret import BLOCK
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
from emukern.kernel.cred import CAP_CHECKPOINT_RESTORE, CAP_SYS_ADMIN, capable, copy_process_attrs
from emukern.kernel import pid as kpid
from emukern.kernel.net import net_namespace
from emukern.kernel.task import Task, TaskState

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_set_tid_address(k: "Kernel", cpu, task, tidptr, *a):
    task.clear_child_tid = tidptr
    cpu.charge(k.cost.syscall_body)
    return kpid.task_pid_own(task)


# ---- process lifecycle ---------------------------------------------------------------------
CLONE_NEWNS = 0x20000
CLONE_VFORK = 0x4000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000


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
    if task.vfork_child is not None:        # woken in a CLONE_VFORK wait: not a new clone
        return wait_for_vfork_done(k, cpu, task)
    # the legacy clone's flag word is an int: the upper half of the register is not looked at
    # (the low byte, CSIGNAL, is the exit signal: any value, even one above _NSIG)
    flags &= 0xFFFFFFFF
    if clone_flags_invalid(flags):
        return -E.EINVAL
    if flags & CLONE_PIDFD:
        # the legacy clone returns the pidfd through parent_tid, so it cannot also store the
        # child's tid there; a detached child has no exit signal for a pidfd to wait on
        if flags & (CLONE_DETACHED | CLONE_PARENT_SETTID):
            return -E.EINVAL
        return kernel_clone(k, cpu, task, flags, newsp, 0, tls, ctid, pidfd_ptr=ptid)
    return kernel_clone(k, cpu, task, flags, newsp, ptid, tls, ctid)


def _nr_alive(k: "Kernel") -> int:
    """How many tasks are alive (running or asleep; not zombies): the max_tasks limit's count.
    Only asked when the table holds that many entries at all, and counted over the states in
    one pass without the ``alive`` property's call per task: a fork bomb at the limit retries
    clone without end, and a walk of 1,024 property calls per retry was most of its run."""
    states = list(map(_task_state, k.tasks.values()))
    return states.count(TaskState.RUNNABLE) + states.count(TaskState.BLOCKED)


_task_state = operator.attrgetter("state")


def _child_pid_ns(k: "Kernel", task, flags: int):
    """copy_process's pid-namespace checks and copy_pid_ns: a thread shares its group's
    namespace, so it cannot come with a new one (CLONE_NEWPID, CLONE_NEWUSER) nor once
    unshare(CLONE_NEWPID) has moved the caller's children elsewhere; a namespace's init may
    not make siblings (CLONE_PARENT: they would have no reaper); a new namespace needs
    CAP_SYS_ADMIN and sits below the caller's pid_ns_for_children.  Answers the namespace the
    child is born in, or a negative errno."""
    if flags & CLONE_THREAD and (flags & (CLONE_NEWPID | CLONE_NEWUSER) or (
            task.pid_ns_for_children is not None
            and task.pid_ns_for_children is not kpid.task_active_pid_ns(k, task))):
        return -E.EINVAL
    if flags & CLONE_PARENT and task.pid_ns is not None \
            and task.pid_ns.child_reaper is k.tasks.get(task.tgid, task):
        # (a namespace's init is SIGNAL_UNKILLABLE; the first process keeps emukern's answer)
        return -E.EINVAL
    ns = kpid.pid_ns_for_children(k, task)
    if flags & CLONE_NEWPID:
        if not capable(task, CAP_SYS_ADMIN):
            return -E.EPERM
        if ns is not kpid.task_active_pid_ns(k, task):
            return -E.EINVAL            # copy_pid_ns: unshare already chose the children's namespace
        ns = kpid.create_pid_namespace(ns)
        if ns is None:
            return -E.ENOSPC
    return ns


def kernel_clone(k: "Kernel", cpu, task, flags: int, newsp: int, ptid: int, tls: int, ctid: int,
                 clear_sighand: bool = False, pidfd_ptr: int = 0, set_tid: list[int] | None = None) -> int:
    """copy_process and the rest of kernel_clone, for clone and clone3 alike: ``flags`` is the
    legacy 32-bit word (its low byte the exit signal), ``newsp`` the child's stack pointer (0:
    the parent's), ``clear_sighand`` clone3's CLONE_CLEAR_SIGHAND, ``pidfd_ptr`` where
    CLONE_PIDFD stores the new pidfd (an int in the parent's memory), ``set_tid`` clone3's
    chosen numbers (deepest pid namespace first)."""
    ns = _child_pid_ns(k, task, flags)
    if isinstance(ns, int):
        return ns
    if len(k.tasks) >= k.config.max_tasks and _nr_alive(k) >= k.config.max_tasks:
        return -E.EAGAIN
    cpu.charge(k.cost.fork)
    if ns.level == 0 and not set_tid:
        tid, upids = k.alloc_tid(), ()
    else:
        # checkpoint_restore_ns_capable: CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE chooses a pid
        got = kpid.alloc_pid(k, ns, set_tid or [],
                             capable(task, CAP_SYS_ADMIN) or capable(task, CAP_CHECKPOINT_RESTORE))
        if isinstance(got, int):
            return got
        tid, upids = got
    # (the descriptor table first: its copy is charged to the guest memory like the mm's, and
    # a refused mm copy must give the table's charge and file references back)
    files = task.files if flags & CLONE_FILES else task.files.dup_table()
    try:
        mm = task.mm if flags & CLONE_VM else task.mm.fork()
    except OutOfMemory:
        if files is not task.files:
            files.close_all()           # (the parent still holds every file: no last close)
        raise
    if flags & CLONE_VM:
        mm.users += 1
    else:
        cpu.fork_code_view(task.mm, mm)     # the child's code is the parent's, already scanned
        # dup_mm copies the whole mm_struct: the stack's growth limit (expand_stack) and the
        # saved auxv (/proc/self/auxv) are the kernel's per-mm fields, kept on the mm here
        mm.stack_limit, mm.saved_auxv = task.mm.stack_limit, task.mm.saved_auxv
    child = Task(tid=tid, tgid=task.tgid if flags & CLONE_THREAD else tid,
                 parent=task if not flags & CLONE_THREAD else task.parent, mm=mm, files=files,
                 comm=task.comm, affinity=task.affinity, start_time=cpu.now)
    child.upids = upids
    # a new mount namespace (CAP_SYS_ADMIN only; another caller's flag is ignored, as before): emukern's
    # mount tree is one, so the namespace is a name that lets its owner make the changes
    # kernel/syscalls/nsproxy.py accepts there
    child.mnt_ns = kpid.new_mount_ns(k, task.mnt_ns) if flags & CLONE_NEWNS and capable(task, CAP_SYS_ADMIN) else task.mnt_ns
    # a new network namespace likewise needs CAP_SYS_ADMIN (another caller's flag is ignored,
    # as it was before namespaces were modelled); the child's sockets are made there
    child.net_ns = net_namespace.copy_net_ns(k) if flags & CLONE_NEWNET and capable(task, CAP_SYS_ADMIN) else task.net_ns
    child.exe = task.exe          # mm->exe_file comes with the copied (or shared) mm: /proc/self/exe
    ctx = cpu.save_context()
    ctx = k.arch.clone_context(ctx, newsp, tls if flags & CLONE_SETTLS else None)
    child.ctx = ctx
    child.thread = k.arch.new_thread_state(child, task, exec_=False)
    fs_namei.fs_fork(k, task, child, flags)                 # cwd and umask (kernel/fs/namei.py)
    copy_signals(child, task, flags)
    if clear_sighand:
        # copy_sighand's flush_signal_handlers(tsk, 0): the child's own copy of the actions
        # loses every handler (an ignored signal stays ignored); its altstack is kept
        for act in child.sighand.action[1:]:
            if act.handler != SIG_IGN:
                act.handler = SIG_DFL
            act.flags, act.restorer, act.mask = 0, 0, 0
    copy_rlimits(k, child, task, bool(flags & CLONE_THREAD))     # kernel/resource.py
    copy_process_attrs(child, task)          # creds, nice, policy (kernel/cred.py)
    rseq.rseq_fork(child, task, bool(flags & CLONE_VM))     # a forked process keeps its area
    if flags & CLONE_PIDFD:
        # pidfd_prepare and its put_user, before the child can run: the parent's new descriptor
        # (close-on-exec) names the child; when the pointer is bad, the whole clone fails
        pidfd = task.files.install(PidFdFile(k, child, False), cloexec=True)
        if pidfd < 0:
            _undo_copy(task, files, mm, flags)
            return pidfd
        try:
            task.mm.write_u32(pidfd_ptr, pidfd)
        except MemoryFault:
            task.files.close(pidfd)
            _undo_copy(task, files, mm, flags)
            return -E.EFAULT
    if flags & CLONE_CHILD_CLEARTID:
        child.clear_child_tid = ctid
    # kernel_clone's put_user to the parent's word and schedule_tail's to the child's: the
    # task exists by then, so a bad pointer is not the call's failure (the write is dropped)
    # (each sees the number of its own namespace)
    if flags & CLONE_PARENT_SETTID:
        try:
            task.mm.write_u32(ptid, _vnr(k, child, task, upids))
        except MemoryFault:
            pass
    if flags & CLONE_CHILD_SETTID:
        try:
            mm.write_u32(ctid, upids[-1] if upids else tid)
        except MemoryFault:
            pass
    k.tasks[tid] = child
    kpid.attach_pid(k, child, ns)
    if not flags & CLONE_THREAD:
        # a child belongs to the thread group (any thread may wait4 for it); threads are
        # not children, so wait4 never sees them
        k.tasks.get(task.tgid, task).children.append(child)
    child.cpu = cpu.index
    k.sched.enqueue(child, k.sched.select_cpu(child, new=True), cpu.now)
    if flags & CLONE_VFORK:
        # the child runs on the parent's memory (its stack included, with CLONE_VM): the parent
        # sleeps until the child is done with it, at its exec or its exit
        child.vfork_done = WaitQueue("vfork")
        task.vfork_child = child
        return wait_for_vfork_done(k, cpu, task)
    return _vnr(k, child, task, upids)


def _vnr(k: "Kernel", child, task, upids) -> int:
    """The new task's number as the cloning task sees it (its own namespace's)."""
    if not upids and task.pid_ns is None:
        return child.tid
    ns = kpid.task_active_pid_ns(k, task)
    return child.tid if ns.level == 0 else upids[ns.level - 1]


def _undo_copy(task, files, mm, flags: int) -> None:
    """Give back what a clone that fails late took: the copied descriptor table's references,
    and the shared mm's user count or the copied mm's memory."""
    if files is not task.files:
        files.close_all()
    if flags & CLONE_VM:
        mm.users -= 1
    else:
        mm.release()


def wait_for_vfork_done(k: "Kernel", cpu, task):
    """kernel_clone's wait_for_vfork_done: the parent of a CLONE_VFORK child sleeps until the
    child completes ``vfork_done`` (mm_release, at its exec or exit; kernel/signal/exit.py),
    then the clone returns the child's pid.  A blocked clone is re-run from the start when
    woken, so the parent remembers its child (``vfork_child``) and comes back here instead of
    cloning again.  The sleep is killable, not interruptible: an ordinary signal leaves the
    parent asleep (handled once the clone returned, as in Linux), a fatal one ends the wait
    early; either way the pid is returned, the child lives on."""
    child = task.vfork_child
    assert child is not None
    k.sched.finish_wait(task)
    done = child.vfork_done
    if done is None or not child.alive or _fatal_signal_pending(task):
        task.vfork_child = None
        child.vfork_done = None         # (a killed parent: the child completes nothing)
        return kpid.task_pid_vnr(k, child, task)
    k.sched.sleep_on(cpu, task, done, "vfork")
    return BLOCK


def _fatal_signal_pending(task) -> bool:
    """fatal_signal_pending, as it looks once complete_signal has turned a fatal signal into a
    SIGKILL of every thread: SIGKILL queued, or an unblocked signal queued whose action is the
    default one and that default ends the process (neither ignore nor stop)."""
    st, sig, hand = task.sigstate, task.signal, task.sighand
    if st is None or hand is None:
        return False
    queued = st.pending.signal | (sig.shared_pending.signal if sig is not None else 0)
    if queued & sigmask(SIGKILL):
        return True
    for n in range(1, len(hand.action)):
        m = sigmask(n)
        if queued & m and not st.blocked & m and hand.action[n].handler == SIG_DFL \
                and not m & (SIG_KERNEL_IGNORE | SIG_KERNEL_STOP):
            return True
    return False


# ---- clone3 ----------------------------------------------------------------------------------
# struct clone_args: eleven u64 fields; each version of the struct is a prefix of the next
CLONE_ARGS_SIZE_VER0 = 64       # flags .. tls
CLONE_ARGS_SIZE_VER2 = 88       # + set_tid, set_tid_size (VER1, 80) + cgroup
CLONE_ARGS_FIELDS = ("flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack",
                     "stack_size", "tls", "set_tid", "set_tid_size", "cgroup")
CLONE_PIDFD = 0x1000
CLONE_PARENT = 0x8000
CLONE_DETACHED = 0x400000
CLONE_NEWTIME = 0x80
CLONE_CLEAR_SIGHAND = 1 << 32
CLONE_INTO_CGROUP = 1 << 33
CSIGNAL = 0xFF
NSIG = 64
PAGE_SIZE = 4096


def copy_clone_args_from_user(k: "Kernel", task, uargs: int, size: int) -> dict[str, int] | int:
    """copy_clone_args_from_user: a size below the first version is EINVAL, one above a page
    E2BIG; a newer program's larger struct is taken if every byte this kernel does not know is
    zero (copy_struct_from_user: E2BIG otherwise), an older program's shorter one is zero-
    extended.  Then the field checks that need no task: set_tid and its length agree, the exit
    signal is a signal number (its upper bits clear), a cgroup fd only with the VER2 struct."""
    if size > PAGE_SIZE:
        return -E.E2BIG
    if size < CLONE_ARGS_SIZE_VER0:
        return -E.EINVAL
    known = min(size, CLONE_ARGS_SIZE_VER2)
    if size > known and any(task.mm.read(uargs + known, size - known)):
        return -E.E2BIG
    raw = task.mm.read(uargs, known) + bytes(CLONE_ARGS_SIZE_VER2 - known)
    args = dict(zip(CLONE_ARGS_FIELDS, struct.unpack("<11Q", raw)))
    if args["set_tid_size"] > 32:                   # MAX_PID_NS_LEVEL
        return -E.EINVAL
    if bool(args["set_tid"]) != bool(args["set_tid_size"]):
        return -E.EINVAL
    if args["exit_signal"] & ~CSIGNAL or args["exit_signal"] > NSIG:
        return -E.EINVAL
    if args["flags"] & CLONE_INTO_CGROUP and (args["cgroup"] > 0x7FFFFFFF or size < CLONE_ARGS_SIZE_VER2):
        return -E.EINVAL
    return args


def clone3_args_valid(args: dict[str, int]) -> bool:
    """clone3_args_valid: only the legacy flags and the two clone3 adds; the bits legacy clone
    spent on the exit signal (bar CLONE_NEWTIME) and CLONE_DETACHED are reserved; clearing the
    handlers cannot go with sharing them; a thread or a sibling (CLONE_PARENT) has no exit
    signal of its own; a stack comes with its size and lies in the user half (its size alone
    is not a stack)."""
    flags = args["flags"]
    if flags & ~(0xFFFFFFFF | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP):
        return False
    if flags & (CLONE_DETACHED | (CSIGNAL & ~CLONE_NEWTIME)):
        return False
    if flags & (CLONE_SIGHAND | CLONE_CLEAR_SIGHAND) == CLONE_SIGHAND | CLONE_CLEAR_SIGHAND:
        return False
    if flags & (CLONE_THREAD | CLONE_PARENT) and args["exit_signal"]:
        return False
    if args["stack"] == 0:
        return args["stack_size"] == 0
    return args["stack_size"] != 0


def sys_clone3(k: "Kernel", cpu, task, uargs, size, *a):
    """clone3: the arguments in a struct the caller sizes, mapped onto the one clone path
    (kernel_clone).  The child's stack pointer is stack + stack_size (stacks grow down on both
    architectures).  CLONE_PIDFD stores a pidfd of the child at ``pidfd``.  ``set_tid`` chooses
    the child's numbers, deepest pid namespace first (kernel/pid.py's alloc_pid checks them).
    CLONE_INTO_CGROUP is refused with EINVAL: emukern has no cgroups."""
    if task.vfork_child is not None:        # woken in a CLONE_VFORK wait: not a new clone
        return wait_for_vfork_done(k, cpu, task)
    args = copy_clone_args_from_user(k, task, uargs, size)
    if isinstance(args, int):
        return args
    if not clone3_args_valid(args):
        return -E.EINVAL
    stack, stack_size = args["stack"], args["stack_size"]
    if stack and not k.arch.access_ok(task, stack, stack_size):
        return -E.EINVAL
    flags = args["flags"]
    if flags & CLONE_INTO_CGROUP:
        return -E.EINVAL
    set_tid: list[int] = []
    if args["set_tid_size"]:
        # (copy_clone_args_from_user: the pid_t array the caller sized)
        try:
            raw = task.mm.read(args["set_tid"], 4 * args["set_tid_size"])
        except MemoryFault:
            return -E.EFAULT
        set_tid = list(struct.unpack(f"<{args['set_tid_size']}i", raw))
    # the legacy word: clone3's flags below bit 32, with the exit signal where clone keeps it
    legacy = (flags & 0xFFFFFFFF & ~CSIGNAL) | args["exit_signal"]
    if clone_flags_invalid(legacy):
        return -E.EINVAL
    return kernel_clone(k, cpu, task, legacy, (stack + stack_size) & _U64 if stack else 0,
                        args["parent_tid"], args["tls"], args["child_tid"],
                        clear_sighand=bool(flags & CLONE_CLEAR_SIGHAND), pidfd_ptr=args["pidfd"],
                        set_tid=set_tid)


_U64 = (1 << 64) - 1
