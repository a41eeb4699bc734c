"""Credentials and other per-process attributes (kernel/cred.c's struct cred, copied at clone;
kernel/sys.c, kernel/groups.c), and the uapi numbers of the calls that read and set them and of
the small calls beside them (priorities and scheduling policies, personality, statfs, close_range).

What is modelled and what is not:
- credentials are per thread (``struct cred``), copied at clone, and what getuid & co. report.
  They carry Linux's five capability sets (effective, permitted, inheritable, bounding, ambient)
  and the securebits, kept as security/commoncap.c keeps them: the set*id calls adjust them
  (``cap_task_fix_setuid``), capset and prctl change them with Linux's rules, execve recomputes
  them (kernel/exec.py, ``bprm_caps_from_file``).  Every privilege decision asks ``capable(task,
  CAP_X)`` -- the effective set -- so a root task that drops a capability loses exactly what it
  guards.  Nothing in emukern checks file read/write permission bits, so a task that drops root
  keeps reading its files: the ids are what the program sees, not a security boundary.
- nice values and scheduling policies are stored and reported with Linux's rules and errors;
  emukern's scheduler does not weigh them (it runs every task alike).
- statfs reports fixed, synthetic figures per file system (the host's free space is a host fact:
  the same inputs give the same bytes), with each file system's f_type magic.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
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


# ---- capabilities (include/uapi/linux/capability.h, Linux 6.12) -----------------------------
CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, CAP_KILL = 0, 1, 2, 3, 4, 5
CAP_SETGID, CAP_SETUID, CAP_SETPCAP, CAP_LINUX_IMMUTABLE, CAP_NET_BIND_SERVICE = 6, 7, 8, 9, 10
CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK, CAP_IPC_OWNER = 12, 13, 14, 15
CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_SYS_NICE, CAP_SYS_RESOURCE = 19, 21, 23, 24
CAP_MKNOD, CAP_MAC_OVERRIDE, CAP_WAKE_ALARM, CAP_CHECKPOINT_RESTORE = 27, 32, 35, 40
CAP_LAST_CAP = CAP_CHECKPOINT_RESTORE           # the newest capability Linux 6.12 knows
CAP_FULL = (1 << (CAP_LAST_CAP + 1)) - 1        # CAP_VALID_MASK: every capability
# the capabilities that bypass file-system permission checks: what "fsuid 0" historically meant,
# so they follow the fsuid on setfsuid (CAP_FS_SET = CAP_FS_MASK + CAP_LINUX_IMMUTABLE)
CAP_FS_SET = sum(1 << c for c in (CAP_CHOWN, CAP_MKNOD, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
                                  CAP_FOWNER, CAP_FSETID, CAP_MAC_OVERRIDE, CAP_LINUX_IMMUTABLE))

# securebits (include/uapi/linux/securebits.h): each bit has a "locked" twin just above it
SECURE_NOROOT, SECURE_NO_SETUID_FIXUP, SECURE_KEEP_CAPS, SECURE_NO_CAP_AMBIENT_RAISE = 0, 2, 4, 6
SECBIT_NOROOT = 1 << SECURE_NOROOT
SECBIT_NO_SETUID_FIXUP = 1 << SECURE_NO_SETUID_FIXUP
SECBIT_KEEP_CAPS = 1 << SECURE_KEEP_CAPS
SECBIT_NO_CAP_AMBIENT_RAISE = 1 << SECURE_NO_CAP_AMBIENT_RAISE
SECURE_ALL_BITS = SECBIT_NOROOT | SECBIT_NO_SETUID_FIXUP | SECBIT_KEEP_CAPS | SECBIT_NO_CAP_AMBIENT_RAISE
SECURE_ALL_LOCKS = SECURE_ALL_BITS << 1


@dataclass(frozen=True)
class Cred:
    """``struct cred``: the ids (real, effective, saved, file-system), the supplementary groups,
    the capability sets (bit masks of CAP_*) and the securebits.  A task that starts as root
    holds every capability permitted and effective, all of them in its bounding set, none
    inheritable or ambient -- what init has on a real machine."""
    uid: int = 0
    euid: int = 0
    suid: int = 0
    fsuid: int = 0
    gid: int = 0
    egid: int = 0
    sgid: int = 0
    fsgid: int = 0
    groups: tuple[int, ...] = ()
    cap_inheritable: int = 0
    cap_permitted: int = CAP_FULL
    cap_effective: int = CAP_FULL
    cap_bset: int = CAP_FULL
    cap_ambient: int = 0
    securebits: int = 0


ROOT = Cred()


def commit_creds(task: "Task", new: Cred) -> None:
    """commit_creds: install ``new``.  A change of the effective or fs ids, or a permitted set
    that grew, makes the process's memory non-dumpable (suid_dumpable is 0: no core, no
    unprivileged ptrace or pidfd_getfd) and forgets the parent-death signal, so a program that
    changed privilege is not exposed to what its old identity could do to it."""
    old = cred_of(task)
    if (old.euid != new.euid or old.egid != new.egid or old.fsuid != new.fsuid
            or old.fsgid != new.fsgid or new.cap_permitted & ~old.cap_permitted):
        if task.mm is not None:
            task.mm.dumpable = 0
        task.pdeath_signal = 0
    task.cred = new


def capable(task: "Task", cap: int) -> bool:
    """capable()/ns_capable(): does the task hold ``cap`` in its effective set?  emukern has one
    user namespace, so this is the whole question Linux's cap_capable asks."""
    return bool(cred_of(task).cap_effective >> cap & 1)


def issecure(c: Cred, bit: int) -> bool:
    return bool(c.securebits >> bit & 1)


def fix_setuid(old: Cred, new: Cred) -> Cred:
    """cap_task_fix_setuid for setuid/setreuid/setresuid (LSM_SETID_ID/RE/RES), through
    cap_emulate_setxuid: the capability sets follow the uids the way a pre-capability program
    expects root's privilege to.  Leaving uid 0 in all three of real/effective/saved drops
    permitted and effective (unless SECBIT_KEEP_CAPS) and ambient; moving the effective uid off 0
    drops the effective set; moving it back to 0 makes effective = permitted again.
    SECBIT_NO_SETUID_FIXUP turns all of it off."""
    if issecure(old, SECURE_NO_SETUID_FIXUP):
        return new
    eff, prm, amb = new.cap_effective, new.cap_permitted, new.cap_ambient
    had_root = 0 in (old.uid, old.euid, old.suid)
    keeps_root = 0 in (new.uid, new.euid, new.suid)
    if had_root and not keeps_root:
        if not issecure(old, SECURE_KEEP_CAPS):
            prm = eff = 0
        amb = 0
    if old.euid == 0 and new.euid != 0:
        eff = 0
    if old.euid != 0 and new.euid == 0:
        eff = prm
    return replace(new, cap_effective=eff, cap_permitted=prm, cap_ambient=amb)


def fix_setfsuid(old: Cred, new: Cred) -> Cred:
    """cap_task_fix_setuid for setfsuid (LSM_SETID_FS): the file-system capabilities leave the
    effective set when the fsuid leaves 0, and come back (as far as permitted) when it returns."""
    if issecure(old, SECURE_NO_SETUID_FIXUP):
        return new
    eff = new.cap_effective
    if old.fsuid == 0 and new.fsuid != 0:
        eff &= ~CAP_FS_SET
    elif old.fsuid != 0 and new.fsuid == 0:
        eff |= CAP_FS_SET & new.cap_permitted
    return replace(new, cap_effective=eff)


def cred_of(task: "Task") -> Cred:
    return task.cred if task.cred is not None else ROOT


def copy_process_attrs(child: "Task", parent: "Task") -> None:
    """copy_process: the child starts with the parent's credentials, nice value, scheduling
    policy (SCHED_RESET_ON_FORK puts a real-time or negative-nice parent's child back to
    SCHED_OTHER, nice 0: sched_fork) and personality."""
    child.cred = parent.cred
    child.no_new_privs = parent.no_new_privs     # (task->atomic_flags: inherited, never cleared)
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




S_ISUID, S_ISGID, S_IXGRP = 0o4000, 0o2000, 0o010
# personality flags a set-id exec clears (PER_CLEAR_ON_SETID: READ_IMPLIES_EXEC,
# ADDR_NO_RANDOMIZE, ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO)
PER_CLEAR_ON_SETID = 0x0400000 | 0x0040000 | 0x0200000 | 0x0100000


def bprm_creds_from_file(old: Cred, mode: int, file_uid: int, file_gid: int,
                         no_new_privs: bool, untrusted_tracer: bool = False) -> tuple[Cred, bool, bool]:
    """The credentials execve gives the new program: fs/exec.c's bprm_fill_uid (the file's
    set-user-ID and set-group-ID bits) and security/commoncap.c's cap_bprm_creds_from_file.
    Returns (new credentials, secureexec -- AT_SECURE, per_clear -- clear the personality's
    PER_CLEAR_ON_SETID flags).

    emukern keeps no extended attributes, so no file carries capabilities (security.capability):
    a program gets privilege only by being run by root or by being set-user-ID root.  Root's
    rule (SECBIT_NOROOT off): with uid or euid 0 the new permitted set is bounding | inheritable,
    and with euid 0 it is all effective.  Otherwise the new permitted and effective sets are the
    ambient set.  no_new_privs makes the set-id bits count for nothing; a set-id program drops
    the ambient set; the saved and fs ids follow the new effective ones.  ``untrusted_tracer``
    (the task is traced by one without CAP_SYS_PTRACE: LSM_UNSAFE_PTRACE) keeps a set-id or
    privileged exec from gaining: the task keeps its ids unless it holds CAP_SETUID itself, and
    its permitted set cannot grow."""
    euid, egid, per_clear = old.euid, old.egid, False
    if not no_new_privs:
        if mode & S_ISUID:
            euid, per_clear = file_uid, True
        if mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP:
            egid, per_clear = file_gid, True
    new = replace(old, euid=euid, egid=egid)
    permitted, effective_bit = 0, False
    if not issecure(old, SECURE_NOROOT):                     # handle_privileged_root
        if new.euid == 0 or new.uid == 0:
            permitted = old.cap_bset | old.cap_inheritable
        effective_bit = new.euid == 0
    gained = bool(permitted & ~old.cap_permitted)
    per_clear = per_clear or gained
    is_setid = new.euid != old.uid or new.egid != old.gid
    if (is_setid or gained) and (no_new_privs or untrusted_tracer):
        # an unsafe exec gets no more than it had, and maybe less
        if no_new_privs or not old.cap_effective >> CAP_SETUID & 1:
            new = replace(new, euid=new.uid, egid=new.gid)
        permitted &= old.cap_permitted
    ambient = 0 if is_setid else old.cap_ambient
    permitted |= ambient
    effective = permitted if effective_bit else ambient
    new = replace(new, suid=new.euid, fsuid=new.euid, sgid=new.egid, fsgid=new.egid,
                  cap_permitted=permitted, cap_effective=effective, cap_ambient=ambient,
                  securebits=old.securebits & ~SECBIT_KEEP_CAPS)
    secureexec = is_setid or (new.uid != 0 and (effective_bit or bool(permitted & ~ambient)))
    return new, secureexec, per_clear
