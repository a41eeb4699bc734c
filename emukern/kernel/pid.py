"""PID namespaces <-> kernel/pid.c and kernel/pid_namespace.c.

A task has one number in every pid namespace from the initial one down to the one it was born
in (Linux's ``struct pid`` with its ``numbers[]``, one ``upid`` per level).  emukern keeps the
initial namespace's number as ``Task.tid`` -- the key of ``Kernel.tasks`` and the number every
trap log, result and test already use -- and the deeper ones in ``Task.upids`` (level 1
first).  A task born in the initial namespace has ``pid_ns`` None and no deeper numbers, so
everything that never makes a namespace runs through exactly the code and numbers it ran
through before namespaces existed.

Each namespace below the first keeps a map from its numbers to tasks (the idr of
``struct pid_namespace``) for ``find_task_by_pid_ns``; the initial namespace's map is
``Kernel.tasks`` itself.  A reaped (DEAD) task no longer holds its numbers: lookups skip it and
an allocation may take its number again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E

if TYPE_CHECKING:
    from emukern.kernel.task import Task

MAX_PID_NS_LEVEL = 32
# the inode numbers procfs shows for the namespaces the kernel boots with (proc_ns.h's
# PROC_*_INIT_INO), and where the ones made at run time start (PROC_DYNAMIC_FIRST; the
# boot-time mount and network namespaces take the first two dynamic numbers)
PROC_IPC_INIT_INO = 0xEFFFFFFF
PROC_UTS_INIT_INO = 0xEFFFFFFE
PROC_USER_INIT_INO = 0xEFFFFFFD
PROC_PID_INIT_INO = 0xEFFFFFFC
PROC_CGROUP_INIT_INO = 0xEFFFFFFB
PROC_TIME_INIT_INO = 0xEFFFFFFA
PROC_DYNAMIC_FIRST = 0xF0000000
PROC_NET_INIT_INO = PROC_DYNAMIC_FIRST
PROC_MNT_INIT_INO = PROC_DYNAMIC_FIRST + 1
# the first number a namespace made by the guest gets: deterministic, past the boot-time ones
_FIRST_GUEST_INUM = PROC_DYNAMIC_FIRST + 0x100


@dataclass(eq=False)
class PidNamespace:
    """``struct pid_namespace``: its level (0 for the initial one), its parent, the numbers
    in use here, its init (``child_reaper``, the task that took number 1) and ``last_pid``,
    the cursor the next ordinary allocation continues from (what /proc/loadavg's last field
    and ns_last_pid show).  ``adding`` is PIDNS_ADDING: cleared once the init has died, after
    which no task can join (fork answers ENOMEM, as alloc_pid does)."""
    level: int
    parent: "PidNamespace | None"
    inum: int
    pids: dict[int, "Task"] = field(default_factory=dict)
    child_reaper: "Task | None" = None
    last_pid: int = 0
    adding: bool = True
    # the initial namespace hands out the inode numbers of the namespaces made later, and
    # keeps, per mount namespace (by inode number), the pid namespace its /proc was mounted
    # in (a mount namespace not listed sees the boot-time /proc: the initial namespace)
    next_inum: int = _FIRST_GUEST_INUM
    proc_views: "dict[int, PidNamespace]" = field(default_factory=dict)

    def root(self) -> "PidNamespace":
        ns = self
        while ns.parent is not None:
            ns = ns.parent
        return ns

    def is_ancestor_of(self, other: "PidNamespace") -> bool:
        """``self`` is ``other`` or one of its parents: a task of ``other`` is visible here."""
        ns: PidNamespace | None = other
        while ns is not None and ns.level > self.level:
            ns = ns.parent
        return ns is self


def initial_pid_ns() -> PidNamespace:
    return PidNamespace(level=0, parent=None, inum=PROC_PID_INIT_INO)


def create_pid_namespace(parent: PidNamespace) -> PidNamespace | None:
    """create_pid_namespace: a child of ``parent``, one level down (None past
    MAX_PID_NS_LEVEL: the caller answers ENOSPC)."""
    if parent.level + 1 >= MAX_PID_NS_LEVEL:
        return None
    root = parent.root()
    inum = root.next_inum
    root.next_inum += 1
    return PidNamespace(level=parent.level + 1, parent=parent, inum=inum)


def alloc_ns_inum(k: Any) -> int:
    """proc_alloc_inum: the inode number of a namespace made at run time (any kind)."""
    root = k.init_pid_ns
    inum = root.next_inum
    root.next_inum += 1
    return inum


def new_mount_ns(k: Any, old: int) -> int:
    """copy_mnt_ns: a new mount namespace starts with a copy of ``old``'s mounts, its /proc
    among them."""
    inum = alloc_ns_inum(k)
    views = k.init_pid_ns.proc_views
    if old in views:
        views[inum] = views[old]
    k.vfs.mounts.copy_ns(old, inum)          # and the tmpfs/ramfs mounted there (fs/mount.py)
    return inum


def proc_pid_ns(k: Any, reader: "Task | None") -> "PidNamespace | None":
    """The pid namespace the /proc ``reader`` sees shows (proc_pid_ns of the mount's super
    block): the one active where proc was mounted in the reader's mount namespace, and the
    initial one (None) for the boot-time /proc -- a task born in a new pid namespace sees
    the outer numbers until it mounts proc again."""
    if reader is None or not reader.mnt_ns:
        return None
    ns = k.init_pid_ns.proc_views.get(reader.mnt_ns)
    return ns if ns is not None and ns.level else None


def task_active_pid_ns(k: Any, t: "Task") -> PidNamespace:
    """The namespace ``t`` was born in: the one its own getpid answers from."""
    return t.pid_ns if t.pid_ns is not None else k.init_pid_ns


def pid_ns_for_children(k: Any, t: "Task") -> PidNamespace:
    """nsproxy->pid_ns_for_children: where ``t``'s next child is born (unshare(CLONE_NEWPID)
    moves it one level down; the caller itself stays where it is)."""
    ns = t.pid_ns_for_children
    return ns if ns is not None else task_active_pid_ns(k, t)


def pid_nr_ns(k: Any, t: "Task | None", ns: PidNamespace) -> int:
    """pid_nr_ns: ``t``'s number in ``ns``, 0 when ``ns`` cannot see it (a task born in a
    sibling or a parent namespace)."""
    if t is None:
        return 0
    if ns.level == 0:
        return t.tid
    tns = t.pid_ns
    if tns is None or tns.level < ns.level or not ns.is_ancestor_of(tns):
        return 0
    return t.upids[ns.level - 1]


def _leader(k: Any, t: "Task") -> "Task":
    return k.tasks.get(t.tgid, t)


def task_tgid_nr_ns(k: Any, t: "Task | None", ns: PidNamespace) -> int:
    return 0 if t is None else pid_nr_ns(k, _leader(k, t), ns)


def task_pid_vnr(k: Any, t: "Task | None", viewer: "Task") -> int:
    """``t``'s thread id as ``viewer`` sees it (task_pid_vnr when ``viewer`` is current)."""
    if viewer.pid_ns is None:
        return t.tid if t is not None else 0          # (the initial namespace: the global number)
    return pid_nr_ns(k, t, viewer.pid_ns)


def task_pid_own(t: "Task") -> int:
    """``t``'s number in the namespace it was born in (what its own gettid answers)."""
    return t.upids[-1] if t.upids else t.tid


def task_tgid_vnr(k: Any, t: "Task | None", viewer: "Task") -> int:
    if viewer.pid_ns is None:
        return t.tgid if t is not None else 0
    return task_tgid_nr_ns(k, t, viewer.pid_ns)


def find_task_by_pid_ns(k: Any, nr: int, ns: PidNamespace) -> "Task | None":
    """find_task_by_pid_ns: the task holding number ``nr`` in ``ns`` (None: no such task)."""
    if ns.level == 0:
        return k.tasks.get(nr)
    t = ns.pids.get(nr)
    if t is not None and t.state == "dead":
        return None
    return t


def find_task_by_vpid(k: Any, viewer: "Task", nr: int) -> "Task | None":
    """find_task_by_vpid: ``nr`` read in the caller's own namespace."""
    if viewer.pid_ns is None:
        return k.tasks.get(nr)
    return find_task_by_pid_ns(k, nr, viewer.pid_ns)


def pid_in_use(k: Any, nr: int, ns: PidNamespace) -> bool:
    """Whether ``nr`` is taken in ``ns``: by a live task or a zombie (a reaped task has given
    its numbers back)."""
    t = k.tasks.get(nr) if ns.level == 0 else ns.pids.get(nr)
    return t is not None and t.state != "dead"


def upids_of(k: Any, t: "Task", ns: PidNamespace) -> list[int]:
    """The NSpid line's numbers: ``t``'s numbers from ``ns`` (the reader's level) down to the
    namespace it was born in; empty when ``ns`` cannot see it."""
    if pid_nr_ns(k, t, ns) == 0:
        return []
    level = t.pid_ns.level if t.pid_ns is not None else 0
    return [t.tid if i == 0 else t.upids[i - 1] for i in range(ns.level, level + 1)]


def ns_tasks(k: Any, ns: PidNamespace) -> "list[Task]":
    """Every live task with a number in ``ns`` (born in it or below it)."""
    if ns.level == 0:
        return [t for t in k.tasks.values() if t.alive]
    return [t for t in k.tasks.values() if t.alive and t.pid_ns is not None and ns.is_ancestor_of(t.pid_ns)]


PID_MAX = 4194304          # kernel.pid_max (procfs's fixed sysctl): numbers run 1 .. PID_MAX-1


def _next_free(k: Any, ns: PidNamespace) -> int:
    """idr_alloc_cyclic in a namespace below the first: the lowest free number past the cursor
    (wrapping to 1 would need four million processes in one namespace)."""
    nr = ns.last_pid + 1
    while pid_in_use(k, nr, ns):
        nr += 1
    return nr


def alloc_pid(k: Any, ns: PidNamespace, set_tid: list[int], privileged: bool) -> "tuple[int, tuple[int, ...]] | int":
    """alloc_pid: a number in ``ns`` and in each of its parents, deepest level first.
    ``set_tid`` (clone3) names the numbers wanted from the deepest level up; the levels it
    does not reach get the next free number.  Answers (the initial namespace's number, the
    deeper numbers level 1 first), or a negative errno: EINVAL for more numbers than levels, a
    number out of 1..pid_max-1 or one other than 1 in a namespace that has no init yet;
    EPERM for a caller without CAP_SYS_ADMIN (checkpoint_restore_ns_capable); EEXIST for a
    number in use; ENOMEM once the namespace's init has died.  Nothing is committed before
    every level succeeded, so a failure leaks no number."""
    if len(set_tid) > ns.level + 1:
        return -E.EINVAL
    chosen: list[int] = [0] * (ns.level + 1)
    tmp: PidNamespace | None = ns
    wanted = list(set_tid)
    while tmp is not None:
        if wanted:
            tid = wanted.pop(0)
            if not 0 < tid < PID_MAX:
                return -E.EINVAL
            reaper = tmp.child_reaper if tmp.level else (tmp.child_reaper or k.init_task)
            if tid != 1 and (reaper is None or not reaper.alive):
                return -E.EINVAL
            if not privileged:
                return -E.EPERM
            if pid_in_use(k, tid, tmp):
                return -E.EEXIST
            chosen[tmp.level] = tid
        elif tmp.level:
            chosen[tmp.level] = _next_free(k, tmp)
        tmp = tmp.parent
    if not ns.adding:
        return -E.ENOMEM
    walk: PidNamespace | None = ns
    while walk is not None and walk.level > 0:
        if ns.level - walk.level >= len(set_tid):               # (a set_tid number leaves the cursor)
            walk.last_pid = chosen[walk.level]
        walk = walk.parent
    tid0 = chosen[0] or k.alloc_tid()
    return tid0, tuple(chosen[1:])


def attach_pid(k: Any, t: "Task", ns: PidNamespace) -> None:
    """Enter ``t`` in the maps of ``ns`` and its parents below the first (the initial
    namespace's map is ``Kernel.tasks``, filled by the caller); number 1 makes it the init."""
    if ns.level == 0:
        return
    t.pid_ns = ns
    tmp: PidNamespace | None = ns
    while tmp is not None and tmp.level > 0:
        nr = t.upids[tmp.level - 1]
        tmp.pids[nr] = t
        if nr == 1 and t.tid == t.tgid:
            tmp.child_reaper = t
        tmp = tmp.parent


def ns_last_pid(k: Any, ns: PidNamespace) -> int:
    """The last number an ordinary allocation gave in ``ns`` (/proc/loadavg's last field)."""
    return k._next_tid - 1 if ns.level == 0 else ns.last_pid
