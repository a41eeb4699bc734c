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

RLIM_INFINITY = (1 << 64) - 1

# include/uapi/asm-generic/resource.h, in resource-number order
RLIMIT_NAMES = ("CPU", "FSIZE", "DATA", "STACK", "CORE", "RSS", "NPROC", "NOFILE", "MEMLOCK", "AS",
                "LOCKS", "SIGPENDING", "MSGQUEUE", "NICE", "RTPRIO", "RTTIME")
RLIM_NLIMITS = len(RLIMIT_NAMES)
RLIMIT_STACK, RLIMIT_NOFILE = 3, 7

NR_OPEN = 1024 * 1024               # fs/file.c sysctl_nr_open: no RLIMIT_NOFILE above it
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
        sync_nofile(task)
    return lim


def sync_nofile(task: Any) -> None:
    """Give the task's descriptor table the RLIMIT_NOFILE soft limit it is checked against:
    Linux reads the limit at each alloc_fd/dup2, emukern keeps a copy in the table (fork
    copies both, threads share both)."""
    files = getattr(task, "files", None)
    lim = getattr(task, "rlim", None)
    if files is not None and lim is not None:
        files.nofile = min(lim[RLIMIT_NOFILE][0], NR_OPEN)


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
    as root: it has it); RLIMIT_NOFILE may not pass NR_OPEN (-EPERM)."""
    if resource >= RLIM_NLIMITS:
        return -E.EINVAL
    lim = task_rlimits(k, target)
    old = lim[resource]
    if new is not None:
        cur, mx = new
        if cur > mx:
            return -E.EINVAL
        if resource == RLIMIT_NOFILE and mx > NR_OPEN:
            return -E.EPERM
        lim[resource] = (cur, mx)
        if resource == RLIMIT_NOFILE:
            sync_nofile(target)
    return old
