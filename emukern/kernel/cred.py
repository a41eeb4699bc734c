"""Credentials and other per-process attributes (kernel/cred.c's struct cred, copied at clone;
kernel/sys.c, kernel/groups.c), and the uapi numbers of the calls that read and set them and of
the small calls beside them (priorities and scheduling policies, personality, statfs, close_range).

What is modelled and what is not:
- credentials are per thread (``struct cred``), copied at clone, and what getuid & co. report.
  Privilege is "euid 0" (root holds every capability; Linux's capability sets follow the uid
  changes that way, cap_emulate_setxuid).  Nothing else in emukern checks file permissions, so a
  task that drops root keeps reading its files: the ids are what the program sees, not a
  security boundary.
- nice values and scheduling policies are stored and reported with Linux's rules and errors;
  emukern's scheduler does not weigh them (it runs every task alike).
- statfs reports fixed, synthetic figures per file system (the host's free space is a host fact:
  the same inputs give the same bytes), with each file system's f_type magic.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from emukern.kernel.task import Task


NO_ID = 0xFFFFFFFF              # (uid_t)-1: "leave unchanged"
NGROUPS_MAX = 65536
PRIO_PROCESS, PRIO_PGRP, PRIO_USER = 0, 1, 2
MIN_NICE, MAX_NICE = -20, 19
SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE = 0, 1, 2, 3, 5, 6
SCHED_RESET_ON_FORK = 0x40000000
MAX_RT_PRIO = 100
RR_TIMESLICE_NS = 100_000_000   # include/linux/sched/rt.h: RR_TIMESLICE, 100 ms
BASE_SLICE_NS = 750_000         # sysctl_sched_base_slice (EEVDF): what a fair task's slice is
RWF_SUPPORTED = 0x1F            # RWF_HIPRI | DSYNC | SYNC | NOWAIT | APPEND
CLOSE_RANGE_UNSHARE, CLOSE_RANGE_CLOEXEC = 1 << 1, 1 << 2
PER_LINUX_MASK = 0xFFFFFFFF
EOPNOTSUPP = 95                 # (asm-generic errno.h)

# statfs f_type magics (include/uapi/linux/magic.h) and the figures reported
EXT4_SUPER_MAGIC, PROC_SUPER_MAGIC, TMPFS_MAGIC, PIPEFS_MAGIC = 0xEF53, 0x9FA0, 0x01021994, 0x50495045
ST_RDONLY, ST_NOSUID, ST_NODEV, ST_NOEXEC, ST_RELATIME, ST_VALID = 1, 2, 4, 8, 0x400, 0x20


@dataclass(frozen=True)
class Cred:
    """``struct cred``'s ids: real, effective, saved, file-system; and the supplementary groups."""
    uid: int = 0
    euid: int = 0
    suid: int = 0
    fsuid: int = 0
    gid: int = 0
    egid: int = 0
    sgid: int = 0
    fsgid: int = 0
    groups: tuple[int, ...] = ()


ROOT = Cred()


def cred_of(task: "Task") -> Cred:
    return task.cred if task.cred is not None else ROOT


def copy_process_attrs(child: "Task", parent: "Task") -> None:
    """copy_process: the child starts with the parent's credentials, nice value, scheduling
    policy (SCHED_RESET_ON_FORK puts a real-time or negative-nice parent's child back to
    SCHED_OTHER, nice 0: sched_fork) and personality."""
    child.cred = parent.cred
    child.personality = parent.personality
    if parent.sched_reset_on_fork:
        child.sched_policy = SCHED_OTHER if parent.sched_policy in (SCHED_FIFO, SCHED_RR) else parent.sched_policy
        child.rt_priority = 0
        child.nice = max(parent.nice, 0)
        child.sched_reset_on_fork = False
    else:
        child.sched_policy, child.rt_priority, child.nice = parent.sched_policy, parent.rt_priority, parent.nice


def _u32(v: int) -> int:
    return v & 0xFFFFFFFF


