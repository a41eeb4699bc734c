"""Tasks (Linux ``task_struct``): processes and threads, their saved user context and accounting."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from emukern.kernel.files import FdTable
from emukern.kernel.thread_info import TIF_SIGPENDING, FlagView


if TYPE_CHECKING:
    from emukern.kernel.mm.mm_struct import MmStruct

class TaskState(StrEnum):
    RUNNABLE = "runnable"     # on a run queue or running (TASK_RUNNING)
    BLOCKED = "blocked"       # TASK_INTERRUPTIBLE: waiting on a wait queue or a timer
    ZOMBIE = "zombie"         # exited, waiting for its parent's wait4
    DEAD = "dead"             # reaped (or a thread: gone)


_RUNNABLE, _BLOCKED = TaskState.RUNNABLE, TaskState.BLOCKED


@dataclass(eq=False)
class Task:
    tid: int
    tgid: int
    parent: "Task | None"
    mm: "MmStruct"
    files: FdTable
    comm: str = "init"
    ctx: dict[str, Any] = field(default_factory=dict)      # saved user registers (pt_regs)
    state: TaskState = TaskState.RUNNABLE
    cpu: int = 0                                           # CPU it last ran on / is queued on
    affinity: frozenset[int] = frozenset()                 # empty = any CPU
    exit_code: int = 0                                     # wait status (as wait4 reports it)
    term_signal: int = 0
    clear_child_tid: int = 0
    children: list["Task"] = field(default_factory=list)
    # blocking: the syscall to restart when woken, and what it waits for
    pending: tuple[int, tuple[int, ...]] | None = None
    wait_reason: str = ""
    wake_at: int | None = None      # timer wake-up (cycles)
    sleeps_forever: bool = False    # its timeout saturated past the end of the clock (no timer)
    ready_at: int = 0               # cycles when it became runnable (for cross-CPU wakeups)
    woken_value: int | None = None  # a value the waker leaves (e.g. futex result)
    # preemption inside syscalls (kernel/preempt.py): thread_info's preempt_count, and the progress
    # of a syscall switched out at a preemption point (continued, not restarted, when switched in)
    preempt_count: int = 0
    resume: Any = None
    waitqueues: list[Any] = field(default_factory=list)   # the WaitQueues it sleeps on
    futex: Any = None               # its futex wait record(s) while it sleeps on futexes (signal/futex_core.py)
    robust_list: int = 0            # set_robust_list's head, walked at exit (exit_robust_list)
    ep_deadline: int | None = None  # epoll_pwait's timeout (cycles) while it sleeps there
    # accounting
    utime: int = 0
    stime: int = 0
    nvcsw: int = 0
    nivcsw: int = 0
    # signal->cutime, cstime, cnvcsw, cnivcsw, cmaxrss (KiB) of a thread-group leader: what the
    # children it reaped used (wait_task_zombie adds each reaped child's RUSAGE_BOTH)
    cusage: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])
    syscalls: int = 0
    start_time: int = 0
    slice_start: int = 0
    # thread_info.flags: every TIF_* flag of the task (kernel/thread_info.py)
    flags: int = 0
    # per-architecture thread state (Linux's thread_struct)
    thread: Any = None
    # signals (emukern/kernel/signal.py): sighand_struct, signal_struct, the per-thread state;
    # ``sigpending`` is TIF_SIGPENDING of the flags word
    sighand: Any = None
    signal: Any = None
    sigstate: Any = None
    fault_report: dict[str, Any] | None = None
    rlim: list[tuple[int, int]] | None = None   # resource limits, shared by threads (kernel/resource.py)
    ptrace: Any = None                          # kernel/ptrace.py: the tracing link, None untraced
    # kernel/cred.py: struct cred (None: root's), nice, scheduling policy, personality
    cred: Any = None
    no_new_privs: bool = False                  # PR_SET_NO_NEW_PRIVS: execve grants nothing more
    nice: int = 0
    sched_policy: int = 0
    rt_priority: int = 0
    sched_reset_on_fork: bool = False
    personality: int = 0
    pdeath_signal: int = 0          # prctl(PR_SET_PDEATHSIG): sent when the thread that forked it exits
    # files and exec
    fs: Any = None                  # fs_struct (kernel/fs/vfs.py FsStruct): cwd, umask
    exe: str | None = None          # /proc/self/exe
    argv: list[str] = field(default_factory=list)   # /proc/self/cmdline
    exec_error: str = ""            # why the last execve failed (for the trap log)
    # an exec_image(commit=False) waiting for exec_commit: (mm, entry, sp, argv)
    exec_pending: tuple["MmStruct", int, int, list[str]] | None = None
    # CLONE_VFORK (kernel/fork.c): on the child, ``vfork_done`` is the completion its parent
    # sleeps on until the child execs or exits (mm_release completes it and clears it); on the
    # parent, ``vfork_child`` is the child it waits for, so the clone re-run after a wake-up
    # returns that child's pid instead of cloning again
    vfork_done: Any = None
    vfork_child: "Task | None" = None
    rseq: Any = None                # kernel/rseq.py RseqState: the registered area (None: none)
    # pid namespaces (kernel/pid.py): the namespace the task was born in (None: the initial
    # one, where its number is ``tid``), its numbers in the namespaces below the initial one
    # (level 1 first), and nsproxy->pid_ns_for_children once unshare(CLONE_NEWPID) moved it
    pid_ns: Any = None
    upids: tuple[int, ...] = ()
    pid_ns_for_children: Any = None
    mnt_ns: int = 0                 # the mount namespace's inode number (0: the initial one)
    net_ns: Any = None              # kernel/net/net_namespace.py's Net (None: the boot-time one)

    sigpending = FlagView(TIF_SIGPENDING)

    @property
    def task(self) -> "Task":           # (FlagView's owner: a task is its own flags word's owner)
        return self

    @property
    def alive(self) -> bool:
        st = self.state             # (module constants: an Enum member from its class is slow)
        return st is _RUNNABLE or st is _BLOCKED

    @property
    def is_thread_leader(self) -> bool:
        return self.tid == self.tgid

    def allowed_on(self, cpu: int) -> bool:
        return not self.affinity or cpu in self.affinity
