"""Resource limits (Linux ``signal_struct.rlim``, kernel/sys.c ``do_prlimit``).

Each process has one table of (soft, hard) limits: its threads share it (CLONE_THREAD shares the
signal_struct the limits live in), fork copies it, and execve keeps it — which is how a shell's
``ulimit -s unlimited`` reaches the program it runs next: the new image's memory layout is chosen
from RLIMIT_STACK at exec (kernel/mm/layout.py).  emukern's first process starts from Linux's
INIT_RLIMITS (include/asm-generic/resource.h) with the machine's stack and file limits, then the
run's ``--rlimit NAME=VALUE`` options on top (the shell's ``ulimit`` before the program starts).
"""
from __future__ import annotations

from typing import Any

from emukern.errors import ConfigError
from emukern.kernel import errno as E
from emukern.kernel.sysctl import SysctlEntry

RLIM_INFINITY = (1 << 64) - 1

# include/uapi/asm-generic/resource.h, in resource-number order
RLIMIT_NAMES = ("CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS", "NPROC", "NOFILE", "MEMLOCK", "AS",
                "LOCKS", "SIGPENDING", "MSGQUEUE", "NICE", "RTPRIO", "RTTIME")
RLIM_NLIMITS = len(RLIMIT_NAMES)
RLIMIT_STACK, RLIMIT_NOFILE, RLIMIT_MEMLOCK = 3, 7, 8

NR_OPEN = 1024 * 1024               # fs/file.c sysctl_nr_open's default: no RLIMIT_NOFILE above it
# fs.nr_open's bounds (fs/file.c): a table is sized in whole words of its open-descriptor bitmap,
# so the ceiling is at least one word (64 descriptors) and at most the largest int that is a
# whole number of words
BITS_PER_LONG = 64
NR_OPEN_MAX = (2**31 - 1) & -BITS_PER_LONG
NR_OPEN_DEFAULT = BITS_PER_LONG     # the slots a table has before it is ever expanded


def nr_open_sysctl() -> SysctlEntry:
    """/proc/sys/fs/nr_open: the writable ceiling above which neither RLIMIT_NOFILE nor a copied
    descriptor table may go (one per machine; kernel/fs/procfs.py shows it)."""
    return SysctlEntry("fs.nr_open", NR_OPEN, mode=0o644, minimum=BITS_PER_LONG, maximum=NR_OPEN_MAX,
                       kind="int")


def sysctl_nr_open(k: Any) -> int:
    """The fs.nr_open in force on this machine."""
    entry = getattr(getattr(k, "procfs", None), "fs_sysctls", {}).get("fs.nr_open")
    return NR_OPEN if entry is None else entry.value


def dup_fd_fits(k: Any, fds: Any) -> bool:
    """Would a copy of a table holding descriptors ``fds`` fit under fs.nr_open?  dup_fd sizes the
    copy to the highest open descriptor rounded up to a word, then to a power of two, which
    alloc_fdtable may only cut back to the last whole word under nr_open: if that no longer holds
    every open descriptor, the copy fails (EMFILE).  A table that fits in the first word never
    needs that allocation."""
    last = max(fds, default=-1)
    want = -(-(last + 1) // BITS_PER_LONG) * BITS_PER_LONG
    if want <= NR_OPEN_DEFAULT:
        return True
    nr = 1 << (want - 1).bit_length()
    ceiling = sysctl_nr_open(k)
    if nr > ceiling:
        nr = ceiling // BITS_PER_LONG * BITS_PER_LONG
    return nr >= want
_MLOCK_LIMIT = 8 << 20              # include/uapi/linux/resource.h MLOCK_LIMIT
_MQ_BYTES_MAX = 819200


def init_rlimits(stack_size: int, max_tasks: int) -> list[tuple[int, int]]:
    """INIT_RLIMITS: what init starts with (RLIMIT_NPROC and RLIMIT_SIGPENDING are set from the
    task limit at boot, as fork_init does from max_threads).  RLIMIT_NOFILE starts at 1024 for both
    soft and hard; raised (up to NR_OPEN), the descriptor table follows it (sync_nofile)."""
    inf = RLIM_INFINITY
    lim = [(inf, inf)] * RLIM_NLIMITS
    lim[RLIMIT_STACK] = (stack_size, inf)
    lim[4] = (0, inf)                                  # RLIMIT_CORE
    lim[6] = (max_tasks, max_tasks)                    # RLIMIT_NPROC
    lim[RLIMIT_NOFILE] = (1024, 1024)
    lim[8] = (_MLOCK_LIMIT, _MLOCK_LIMIT)              # RLIMIT_MEMLOCK
    lim[11] = (max_tasks, max_tasks)                   # RLIMIT_SIGPENDING
    lim[12] = (_MQ_BYTES_MAX, _MQ_BYTES_MAX)           # RLIMIT_MSGQUEUE
    lim[13] = (0, 0)                                   # RLIMIT_NICE
    lim[14] = (0, 0)                                   # RLIMIT_RTPRIO
    return lim


def parse_rlimit_option(name: str, value: object) -> tuple[int, tuple[int, int]]:
    """``--rlimit STACK=unlimited`` / ``rlimits={"STACK": 16 << 20}`` (``ulimit``: one number sets
    both limits; "SOFT:HARD" sets each; sizes are bytes).  Bad names or values: ConfigError."""
    key = str(name).upper().removeprefix("RLIMIT_")
    if key not in RLIMIT_NAMES:
        raise ConfigError(f"unknown resource limit {name!r}",
                          hint="one of " + ", ".join(RLIMIT_NAMES) + " (e.g. --rlimit STACK=unlimited)")

    def num(v: object) -> int:
        s = str(v).strip().lower()
        if s in ("unlimited", "infinity", "inf"):
            return RLIM_INFINITY
        try:
            n = int(s, 0)
        except ValueError:
            raise ConfigError(f"--rlimit {key}={value}: {v!r} is not a number or 'unlimited'",
                              hint="e.g. --rlimit STACK=unlimited or --rlimit STACK=16777216") from None
        if not 0 <= n < RLIM_INFINITY:
            raise ConfigError(f"--rlimit {key}={value}: out of range", hint="0 .. 2**64-2, or unlimited")
        return n

    text = str(value)
    soft, _, hard = text.partition(":")
    cur = num(soft)
    mx = num(hard) if hard else cur
    if cur > mx:
        raise ConfigError(f"--rlimit {key}={value}: the soft limit is above the hard one",
                          hint="SOFT:HARD with SOFT <= HARD")
    return RLIMIT_NAMES.index(key), (cur, mx)


def task_rlimits(k: Any, task: Any) -> list[tuple[int, int]]:
    """The task's process-wide limit table (created for the first process from INIT_RLIMITS and
    the run's --rlimit options)."""
    lim = getattr(task, "rlim", None)
    if lim is None:
        lim = init_rlimits(k.arch.STACK_SIZE, k.config.max_tasks)
        for name, value in (getattr(k.config, "rlimits", None) or {}).items():
            i, pair = parse_rlimit_option(name, value)
            lim[i] = pair
        task.rlim = lim
        sync_nofile(task, sysctl_nr_open(k))
    return lim


def sync_nofile(task: Any, nr_open: int = NR_OPEN) -> None:
    """Give the task's descriptor table the RLIMIT_NOFILE soft limit it is checked against:
    Linux reads the limit at each alloc_fd/dup2, emukern keeps a copy in the table (fork
    copies both, threads share both).  ``nr_open`` (fs.nr_open when the limit was set) caps it,
    as expand_files refuses a table past it."""
    files = getattr(task, "files", None)
    lim = getattr(task, "rlim", None)
    if files is not None and lim is not None:
        files.nofile = min(lim[RLIMIT_NOFILE][0], nr_open)


def copy_rlimits(k: Any, child: Any, parent: Any, thread: bool) -> None:
    """copy_signal: a thread shares the table, a new process gets a copy."""
    lim = task_rlimits(k, parent)
    child.rlim = lim if thread else list(lim)


def rlimit(k: Any, task: Any, resource: int) -> int:
    """rlimit(): the soft limit in force."""
    return task_rlimits(k, task)[resource][0]


def do_prlimit(k: Any, task: Any, target: Any, resource: int, new: tuple[int, int] | None) -> tuple[int, int] | int:
    """kernel/sys.c do_prlimit: the old (soft, hard) pair, or -errno.  A new soft limit above the
    new hard one is -EINVAL; raising the hard limit needs CAP_SYS_RESOURCE (emukern's guest runs
    as root: it has it); RLIMIT_NOFILE may not pass fs.nr_open (-EPERM)."""
    if resource >= RLIM_NLIMITS:
        return -E.EINVAL
    lim = task_rlimits(k, target)
    old = lim[resource]
    if new is not None:
        cur, mx = new
        if cur > mx:
            return -E.EINVAL
        if resource == RLIMIT_NOFILE and mx > sysctl_nr_open(k):
            return -E.EPERM
        lim[resource] = (cur, mx)
        if resource == RLIMIT_NOFILE:
            sync_nofile(target, sysctl_nr_open(k))
    return old
