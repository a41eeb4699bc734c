"""kernel/sys.c's syscalls, with kernel/groups.c and kernel/exec_domain.c.

Process ids, sessions and process groups, credentials (the set*id family and their
``_setid``/``_setreid``/``_setresid``/``_setfsid`` rules, getgroups/setgroups), rlimits
(prlimit64, via kernel/resource.py), uname, prctl, umask, getrusage, times, sysinfo,
get/setpriority and personality.  It also holds helpers other syscall modules share: the
sched_setscheduler checks (``_setscheduler``), ``_fsync``, ``_statfs_bytes`` and ``_prw``
(preadv/pwritev's positioned I/O).  The guest starts as root (uid 0, all capabilities); the
set*id calls move the capability sets with the uids (kernel/cred.py's ``fix_setuid``), and
prctl's capability options are security/commoncap.c's (kernel/syscalls/capability.py).
"""
from __future__ import annotations

import struct
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from emukern.kernel.mm.mm_struct import MDWE_NO_INHERIT, MDWE_REFUSE_EXEC_GAIN
from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.mm.uaccess import copy_from_user
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import exit as signal_exit
from emukern.kernel.syscalls import read_write as syscalls_read_write
from emukern.kernel.cred import (
    EOPNOTSUPP,
    EXT4_SUPER_MAGIC,
    MAX_NICE,
    MAX_RT_PRIO,
    MIN_NICE,
    NGROUPS_MAX,
    NO_ID,
    PER_LINUX_MASK,
    PIPEFS_MAGIC,
    PRIO_PGRP,
    PRIO_PROCESS,
    PRIO_USER,
    PROC_SUPER_MAGIC,
    RWF_SUPPORTED,
    SCHED_BATCH,
    SCHED_DEADLINE,
    SCHED_FIFO,
    SCHED_IDLE,
    SCHED_OTHER,
    SCHED_RESET_ON_FORK,
    SCHED_RR,
    ST_NODEV,
    ST_NOEXEC,
    ST_NOSUID,
    ST_RDONLY,
    ST_RELATIME,
    ST_VALID,
    TMPFS_MAGIC,
    CAP_SETGID,
    CAP_SETUID,
    CAP_SYS_NICE,
    Cred,
    _u32,
    capable,
    commit_creds,
    cred_of,
    fix_setfsuid,
    fix_setuid,
)
from emukern.kernel.syscalls import capability as syscalls_capability
from emukern.kernel.uapi import RUSAGE_CHILDREN, RUSAGE_SELF, RUSAGE_THREAD, _s32
from emukern.kernel.sysret import U64, s64
from emukern.kernel.fs.file import DirFile, HostFile
from emukern.kernel.fs.file import DirFile, VfsFile
from emukern.kernel.fs.vfs import DEV_DEV, PROC_DEV, ROOT_DEV
from emukern.kernel.fs.vfs import ROOT_DEV
from emukern.kernel.fs.vfs import fs_of
from emukern.kernel.resource import do_prlimit
from emukern.machine.memory import AS_LIMIT

if TYPE_CHECKING:
    from emukern.kernel.task import Task
    from emukern.kernel.types import Kernel


# ---- process ids -----------------------------------------------------------------------------
def sys_getpid(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    if task.pid_ns is not None:             # born in a pid namespace: its number there
        return kpid.task_tgid_vnr(k, task, task)
    return task.tgid


def sys_getppid(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    leader = k.tasks.get(task.tgid, task)
    if task.pid_ns is not None:
        # a parent outside the caller's namespace (the namespace's init's) has no number here: 0
        return kpid.task_tgid_vnr(k, leader.parent, task) if leader.parent is not None else 0
    return leader.parent.tgid if leader.parent is not None else 0


def sys_gettid(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return kpid.task_pid_own(task)


def sys_getcpu(k: "Kernel", cpu, task, cpup, nodep, *a):
    cpu.charge(k.cost.syscall_body)
    if cpup:
        task.mm.write_u32(cpup, cpu.index)
    if nodep:
        task.mm.write_u32(nodep, 0)
    return 0


def sys_getrlimit(k: "Kernel", cpu, task, resource, rlim, *a):
    return sys_prlimit64(k, cpu, task, 0, resource, 0, rlim)


def sys_setrlimit(k: "Kernel", cpu, task, resource, rlim, *a):
    if not rlim:
        return -E.EFAULT
    return sys_prlimit64(k, cpu, task, 0, resource, rlim, 0)


def sys_prlimit64(k: "Kernel", cpu, task, pid, resource, new, old, *a):
    """kernel/sys.c prlimit64 (glibc's getrlimit/setrlimit use it): kernel/resource.py."""
    pid = s64(pid)
    target = task if pid == 0 else k.tasks.get(pid)
    if target is None or not target.alive:
        return -E.ESRCH
    pair = None
    if new:
        raw = copy_from_user(k, cpu, task, new, 16)
        pair = (int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little"))
    got = do_prlimit(k, target, target, resource & U64, pair)
    if isinstance(got, int):
        return got
    if old:
        task.mm.write(old, got[0].to_bytes(8, "little") + got[1].to_bytes(8, "little"))
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_uname(k: "Kernel", cpu, task, buf, *a):
    fields = ["Linux", "emukern", "6.12.0-emukern", "#1 SMP emukern", k.arch.uname_machine, "(none)"]
    task.mm.write(buf, b"".join(f.encode().ljust(65, b"\0") for f in fields))
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_prctl(k: "Kernel", cpu, task, option, a2, a3, a4, a5, *a):
    cpu.charge(k.cost.syscall_body)
    if option == 15:           # PR_SET_NAME
        task.comm = task.mm.read_cstr(a2, 16)[:15].decode("utf-8", "surrogateescape")   # raw bytes
        return 0
    if option == 16:           # PR_GET_NAME
        task.mm.write(a2, task.comm.encode("utf-8", "surrogateescape")[:15].ljust(16, b"\0"))
        return 0
    if option == PR_SET_PDEATHSIG:
        if not 0 <= a2 <= 64:
            return -E.EINVAL                    # !valid_signal()
        task.pdeath_signal = a2
        return 0
    if option == PR_GET_PDEATHSIG:
        task.mm.write_u32(a2, task.pdeath_signal)
        return 0
    if option == PR_GET_DUMPABLE:
        return task.mm.dumpable
    if option == PR_SET_DUMPABLE:
        if a2 not in (0, 1):
            return -E.EINVAL                    # SUID_DUMP_ROOT (2) only from the sysctl
        task.mm.dumpable = a2
        return 0
    if option == PR_SET_MDWE:
        return prctl_set_mdwe(task, a2, a3, a4, a5)
    if option == PR_GET_MDWE:
        return -E.EINVAL if a2 or a3 or a4 or a5 else task.mm.mdwe
    if option in syscalls_capability.CAP_PRCTL_OPTIONS:     # security_task_prctl: commoncap
        return syscalls_capability.cap_task_prctl(task, option, a2, a3, a4, a5)
    if option == PR_SET_NO_NEW_PRIVS:
        if a2 != 1 or a3 or a4 or a5:
            return -E.EINVAL                    # it can be set, never cleared
        task.no_new_privs = True
        return 0
    if option == PR_GET_NO_NEW_PRIVS:
        return -E.EINVAL if a2 or a3 or a4 or a5 else int(task.no_new_privs)
    ret = k.arch.prctl(cpu, task, option, a2, a3, a4, a5)
    return -E.EINVAL if ret is None else ret


PR_SET_MDWE, PR_GET_MDWE = 65, 66
PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS = 38, 39
PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE = 1, 2, 3, 4


def prctl_set_mdwe(task, bits: int, a3: int, a4: int, a5: int) -> int:
    """PR_SET_MDWE: memory-deny-write-execute for the process's mm, once on never off.  Unused
    arguments and unknown bits are EINVAL, as is NO_INHERIT without REFUSE_EXEC_GAIN (it only
    qualifies it); asking for other bits than those already set is EPERM."""
    if a3 or a4 or a5 or bits & ~(MDWE_REFUSE_EXEC_GAIN | MDWE_NO_INHERIT):
        return -E.EINVAL
    if bits & MDWE_NO_INHERIT and not bits & MDWE_REFUSE_EXEC_GAIN:
        return -E.EINVAL
    cur = task.mm.mdwe
    if cur and cur != bits:
        return -E.EPERM
    task.mm.mdwe = bits
    return 0


# ---- process groups and sessions -------------------------------------------------------------
def sys_getpgid(k: "Kernel", cpu, task, pid, *a):
    t = signal_base._pid_target(k, task, pid)
    if t is None:
        return -E.ESRCH
    return _group_vnr(k, task, signal_base.pgid_of(k, t))


def sys_getsid(k: "Kernel", cpu, task, pid, *a):
    t = signal_base._pid_target(k, task, pid)
    if t is None:
        return -E.ESRCH
    return _group_vnr(k, task, signal_base.sid_of(k, t))


def _group_vnr(k: "Kernel", task, nr: int) -> int:
    """A process group or session id (kept as the initial pid namespace's number of its
    leader) as the caller's namespace sees it: 0 for one led from a parent namespace."""
    if task.pid_ns is None:
        return nr
    return kpid.task_tgid_vnr(k, k.tasks.get(nr), task)


def sys_setpgid(k: "Kernel", cpu, task, pid, pgid, *a):
    """setpgid: the caller or one of its children, not a session leader, into a group of
    the same session (or a new group named by its own pid)."""
    pgid = _s32(pgid)
    if pgid < 0:
        return -E.EINVAL
    me = signal_base._leader(k, task)
    t = signal_base._pid_target(k, task, pid)
    if t is None or (t is not me and t.parent is not me):
        return -E.ESRCH
    if signal_base.sid_of(k, t) != signal_base.sid_of(k, me):
        return -E.EPERM
    if signal_base.sid_of(k, t) == t.tgid:
        return -E.EPERM                      # a session leader keeps its group
    if pgid and task.pid_ns is not None:
        # the caller names the group in its own namespace: find it by its leader
        leader = kpid.find_task_by_vpid(k, task, pgid)
        pgid = leader.tgid if leader is not None else -1
    pgid = pgid or t.tgid
    if pgid != t.tgid and not any(x.alive and signal_base.pgid_of(k, x) == pgid and signal_base.sid_of(k, x) == signal_base.sid_of(k, me)
                                  for x in k.tasks.values() if x.is_thread_leader):
        return -E.EPERM
    signal_base._signal_struct(k, t).pgid = pgid
    return 0


def sys_setsid(k: "Kernel", cpu, task, *a):
    me = signal_base._leader(k, task)
    if signal_base.pgid_of(k, me) == me.tgid:
        return -E.EPERM                      # a process-group leader cannot start a session
    sig = signal_base._signal_struct(k, me)
    sig.sid = sig.pgid = me.tgid
    return kpid.task_tgid_vnr(k, me, task)


def sys_umask(k: "Kernel", cpu, task, mask, *a):
    fs = fs_of(task)
    old, fs.umask = fs.umask, mask & 0o777
    return old


def sys_getrusage(k: "Kernel", cpu, task, who, usage, *a):
    who = _s32(who)
    if who == RUSAGE_SELF:
        u = signal_exit._usage(k, signal_exit._group(k, task))
    elif who == RUSAGE_THREAD:
        u = signal_exit._usage(k, [task])
    elif who == RUSAGE_CHILDREN:
        u = list(signal_base._leader(k, task).cusage)
    else:
        return -E.EINVAL
    task.mm.write(usage, signal_exit.rusage_bytes(k, u))
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_times(k: "Kernel", cpu, task, buf, *a):
    if buf:
        g, c = signal_exit._usage(k, signal_exit._group(k, task)), signal_base._leader(k, task).cusage
        task.mm.write(buf, struct.pack("<4q", signal_exit._clock_t(k, g[0]), signal_exit._clock_t(k, g[1]),
                                       signal_exit._clock_t(k, c[0]), signal_exit._clock_t(k, c[1])))
    cpu.charge(k.cost.syscall_body)
    return signal_exit._clock_t(k, cpu.now)


def sys_sysinfo(k: "Kernel", cpu, task, info, *a):
    """struct sysinfo (112 bytes on 64-bit): uptime from the machine clock, the memory the
    address-space limit allows, live process count; no swap, loads 0."""
    used = sum(sum(m.size for m in t.mm.mappings) for t in k.tasks.values()
               if t.alive and t.is_thread_leader)
    total = AS_LIMIT
    procs = sum(1 for t in k.tasks.values() if t.alive)
    raw = struct.pack("<q3Q6QHH4x2QI4x", int(k.clock.ns(cpu.now)) // 10**9, 0, 0, 0,
                      total, max(0, total - used), 0, 0, 0, 0, min(procs, 0xFFFF), 0, 0, 0, 1)
    task.mm.write(info, raw)
    cpu.charge(k.cost.syscall_body)
    return 0


# ---- credentials (kernel/sys.c) -----------------------------------------------------------
def _set_cred(k: "Kernel", cpu, task, new: Cred) -> int:
    commit_creds(task, new)
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_getuid(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return cred_of(task).uid


def sys_geteuid(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return cred_of(task).euid


def sys_getgid(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return cred_of(task).gid


def sys_getegid(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return cred_of(task).egid


def _getres(k: "Kernel", cpu, task, ptrs: tuple[int, int, int], vals: tuple[int, int, int]) -> int:
    for p, v in zip(ptrs, vals):    # put_user of each: the first bad pointer is EFAULT
        if task.mm.find(p) is None:
            return -E.EFAULT
        task.mm.write_u32(p, v)
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_getresuid(k: "Kernel", cpu, task, r, e, s, *a):
    c = cred_of(task)
    return _getres(k, cpu, task, (r, e, s), (c.uid, c.euid, c.suid))


def sys_getresgid(k: "Kernel", cpu, task, r, e, s, *a):
    c = cred_of(task)
    return _getres(k, cpu, task, (r, e, s), (c.gid, c.egid, c.sgid))


_UIDS = ('uid', 'euid', 'suid', 'fsuid')


_GIDS = ('gid', 'egid', 'sgid', 'fsgid')


def _id_cap(names: tuple[str, ...]) -> int:
    """The capability that lets a task set any id of this kind: CAP_SETUID or CAP_SETGID."""
    return CAP_SETUID if names is _UIDS else CAP_SETGID


def _commit_ids(k: "Kernel", cpu, task, old: Cred, new: Cred, names: tuple[str, ...]) -> int:
    """commit_creds after a set*id change: a uid change first lets the capability sets follow
    it (security_task_fix_setuid); a gid change leaves them alone."""
    if names is _UIDS:
        new = fix_setuid(old, new)
    return _set_cred(k, cpu, task, new)


def _setid(k: "Kernel", cpu, task, v, names: tuple[str, ...]) -> int:
    """__sys_setuid / __sys_setgid: with CAP_SETUID (CAP_SETGID) all four ids; else only the effective
    (and fs) id, to the real or the saved one."""
    v, c = _u32(v), cred_of(task)
    r, e, s, fs = names
    if v == NO_ID:
        return -E.EINVAL
    if capable(task, _id_cap(names)):
        return _commit_ids(k, cpu, task, c, replace(c, **{r: v, e: v, s: v, fs: v}), names)
    if v in (getattr(c, r), getattr(c, s)):
        return _commit_ids(k, cpu, task, c, replace(c, **{e: v, fs: v}), names)
    return -E.EPERM


def _setreid(k: "Kernel", cpu, task, rv, ev, names: tuple[str, ...]) -> int:
    """__sys_setreuid / __sys_setregid: the new real id must be the old real or effective
    one, the new effective one of the old three (with CAP_SETUID/CAP_SETGID: anything); the saved id follows the
    new effective id when the real id is set or the effective one moves away from the old
    real id."""
    rv, ev, c = _u32(rv), _u32(ev), cred_of(task)
    r, e, s, fs = names
    old_r, old_e, old_s = getattr(c, r), getattr(c, e), getattr(c, s)
    priv = capable(task, _id_cap(names))
    if rv != NO_ID and not priv and rv not in (old_r, old_e):
        return -E.EPERM
    if ev != NO_ID and not priv and ev not in (old_r, old_e, old_s):
        return -E.EPERM
    new_r = old_r if rv == NO_ID else rv
    new_e = old_e if ev == NO_ID else ev
    new_s = new_e if rv != NO_ID or (ev != NO_ID and ev != old_r) else old_s
    return _commit_ids(k, cpu, task, c, replace(c, **{r: new_r, e: new_e, s: new_s, fs: new_e}), names)


def _setresid(k: "Kernel", cpu, task, vals: tuple[int, int, int], names: tuple[str, ...]) -> int:
    """__sys_setresuid / __sys_setresgid: without privilege each new id must be one of the
    old three."""
    c = cred_of(task)
    new = [_u32(v) for v in vals]
    olds = tuple(getattr(c, n) for n in names[:3])
    if not capable(task, _id_cap(names)) and any(v != NO_ID and v not in olds for v in new):
        return -E.EPERM
    nr, ne, ns = (o if v == NO_ID else v for v, o in zip(new, olds))
    return _commit_ids(k, cpu, task, c, replace(c, **dict(zip(names, (nr, ne, ns, ne)))), names)


def _setfsid(k: "Kernel", cpu, task, v, names: tuple[str, ...]) -> int:
    """setfsuid / setfsgid always return the old fs id; they change it only to one of the
    four ids (with CAP_SETUID/CAP_SETGID: to anything), and never fail; a uid change lets
    the effective capabilities follow the fsuid (cap_task_fix_setuid's LSM_SETID_FS)."""
    v, c = _u32(v), cred_of(task)
    old = getattr(c, names[3])
    if v != NO_ID and v != old and (capable(task, _id_cap(names)) or v in tuple(getattr(c, n) for n in names)):
        new = replace(c, **{names[3]: v})
        commit_creds(task, fix_setfsuid(c, new) if names is _UIDS else new)
    cpu.charge(k.cost.syscall_body)
    return old


def sys_setuid(k: "Kernel", cpu, task, uid, *a):
    return _setid(k, cpu, task, uid, _UIDS)


def sys_setgid(k: "Kernel", cpu, task, gid, *a):
    return _setid(k, cpu, task, gid, _GIDS)


def sys_setreuid(k: "Kernel", cpu, task, ruid, euid, *a):
    return _setreid(k, cpu, task, ruid, euid, _UIDS)


def sys_setregid(k: "Kernel", cpu, task, rgid, egid, *a):
    return _setreid(k, cpu, task, rgid, egid, _GIDS)


def sys_setresuid(k: "Kernel", cpu, task, r, e, s, *a):
    return _setresid(k, cpu, task, (r, e, s), _UIDS)


def sys_setresgid(k: "Kernel", cpu, task, r, e, s, *a):
    return _setresid(k, cpu, task, (r, e, s), _GIDS)


def sys_setfsuid(k: "Kernel", cpu, task, uid, *a):
    return _setfsid(k, cpu, task, uid, _UIDS)


def sys_setfsgid(k: "Kernel", cpu, task, gid, *a):
    return _setfsid(k, cpu, task, gid, _GIDS)


def sys_getgroups(k: "Kernel", cpu, task, size, ptr, *a):
    """getgroups: size 0 asks for the count; a smaller array than the list is EINVAL."""
    groups = cred_of(task).groups
    size = s64(size) if size >> 31 == 0 else (size & 0xFFFFFFFF) - (1 << 32)
    if size < 0:
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    if size == 0:
        return len(groups)
    if size < len(groups):
        return -E.EINVAL
    if groups:
        if task.mm.find(ptr) is None:
            return -E.EFAULT
        task.mm.write(ptr, b"".join(g.to_bytes(4, "little") for g in groups))
    return len(groups)


def sys_setgroups(k: "Kernel", cpu, task, size, ptr, *a):
    """setgroups: CAP_SETGID only; at most NGROUPS_MAX; kept sorted (groups_sort)."""
    size = _u32(size)
    if not capable(task, CAP_SETGID):    # may_setgroups comes before the size check
        return -E.EPERM
    if size >= 1 << 31 or size > NGROUPS_MAX:
        return -E.EINVAL
    raw = b""
    if size:
        if task.mm.find(ptr) is None or task.mm.find(ptr + 4 * size - 1) is None:
            return -E.EFAULT
        raw = task.mm.read(ptr, 4 * size)
    groups = tuple(sorted(int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4)))
    return _set_cred(k, cpu, task, replace(cred_of(task), groups=groups))


# ---- nice values (kernel/sys.c) -------------------------------------------------------------
def _prio_targets(k: "Kernel", task, which: int, who: int) -> list["Task"] | int:
    """The tasks setpriority/getpriority act on: one thread, a process group, a user's."""
    live = [t for t in k.tasks.values() if t.alive]
    if which == PRIO_PROCESS:
        t = task if who == 0 else k.tasks.get(who)
        return [t] if t is not None and t.alive else []
    if which == PRIO_PGRP:
        pgrp = _pgrp_of(k, task) if who == 0 else who
        return [t for t in live if _pgrp_of(k, t) == pgrp]
    if which == PRIO_USER:
        uid = cred_of(task).uid if who == 0 else who
        return [t for t in live if cred_of(t).uid == uid]
    return -E.EINVAL


def _pgrp_of(k: "Kernel", task) -> int:
    return signal_base.pgid_of(k, task)


def sys_getpriority(k: "Kernel", cpu, task, which, who, *a):
    """getpriority returns 20 - nice of the highest-priority target (1..40: no negative
    return values that would look like errors; glibc subtracts it back)."""
    targets = _prio_targets(k, task, _u32(which) if _u32(which) < 3 else 3, s64(who) & 0xFFFFFFFF)
    if isinstance(targets, int):
        return targets
    cpu.charge(k.cost.syscall_body)
    if not targets:
        return -E.ESRCH
    return max(20 - t.nice for t in targets)


def sys_setpriority(k: "Kernel", cpu, task, which, who, niceval, *a):
    """setpriority: the nice value clamped to -20..19 (CAP_SYS_NICE may lower it)."""
    targets = _prio_targets(k, task, _u32(which) if _u32(which) < 3 else 3, s64(who) & 0xFFFFFFFF)
    if isinstance(targets, int):
        return targets
    n = (niceval & 0xFFFFFFFF) - ((niceval & 0x80000000) << 1)
    n = min(max(n, MIN_NICE), MAX_NICE)
    cpu.charge(k.cost.syscall_body)
    if not targets:
        return -E.ESRCH
    c = cred_of(task)
    for t in targets:
        tc = cred_of(t)
        if not capable(task, CAP_SYS_NICE) and (c.euid not in (tc.uid, tc.euid) or n < t.nice):
            return -E.EACCES if n < t.nice else -E.EPERM      # set_one_prio
        t.nice = n
    return 0


# ---- scheduling policies (kernel/sched/syscalls.c) ------------------------------------------
def _sched_target(k: "Kernel", task, pid: int) -> "Task | int":
    pid = s64(pid) if pid >> 31 == 0 else (pid & 0xFFFFFFFF) - (1 << 32)
    if pid < 0:
        return -E.EINVAL
    t = task if pid == 0 else k.tasks.get(pid)
    if t is None or not t.alive:
        return -E.ESRCH
    return t


def _setscheduler(k: "Kernel", cpu, task, pid, policy: int | None, param) -> int:
    """do_sched_setscheduler / __sched_setscheduler's checks: FIFO and RR take a priority
    1..99, the fair policies 0; SCHED_DEADLINE only through sched_setattr."""
    if not param or (s64(pid) if pid >> 31 == 0 else -1) < 0:
        return -E.EINVAL
    if task.mm.find(param) is None:
        return -E.EFAULT
    prio = task.mm.read_u32(param)
    t = _sched_target(k, task, pid)
    if isinstance(t, int):
        return t
    reset = t.sched_reset_on_fork
    if policy is None:              # sched_setparam: keep the policy
        policy = t.sched_policy
    else:
        reset = bool(policy & SCHED_RESET_ON_FORK)
        policy &= ~SCHED_RESET_ON_FORK
        if policy not in (SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE):
            return -E.EINVAL
    rt = policy in (SCHED_FIFO, SCHED_RR)
    if prio >= 1 << 31 or prio > MAX_RT_PRIO - 1 or rt != (prio != 0):
        return -E.EINVAL
    me, tc = cred_of(task), cred_of(t)
    if not capable(task, CAP_SYS_NICE) and (rt or me.euid not in (tc.uid, tc.euid)):      # check_same_owner
        return -E.EPERM             # no CAP_SYS_NICE (RLIMIT_RTPRIO is 0 by default)
    t.sched_policy, t.rt_priority, t.sched_reset_on_fork = policy, prio, reset
    cpu.charge(k.cost.syscall_body)
    return 0


def _prio_limit(k: "Kernel", cpu, policy, hi: bool) -> int:
    cpu.charge(k.cost.syscall_body)
    policy = _u32(policy)
    if policy in (SCHED_FIFO, SCHED_RR):
        return MAX_RT_PRIO - 1 if hi else 1
    if policy in (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE):
        return 0
    return -E.EINVAL


# ---- personality, time ------------------------------------------------------------------------
def sys_personality(k: "Kernel", cpu, task, persona, *a):
    """personality(0xffffffff) only reads; anything else is stored (set_personality) and the
    old value returned.  emukern acts on none of the flags (no address randomisation to turn
    off, no other ABI)."""
    old = task.personality
    if _u32(persona) != PER_LINUX_MASK:
        task.personality = _u32(persona)
    cpu.charge(k.cost.syscall_body)
    return old


# ---- the sync family (fs/sync.c) ----------------------------------------------------------------
def _fsync(k: "Kernel", cpu, task, fd) -> int:
    """vfs_fsync_range: EBADF for no descriptor, EINVAL for a file without ->fsync (pipes,
    sockets, terminals, /proc and /dev files, eventfd/epoll); a file of the root is written
    straight through to the host already, so there is nothing to flush."""
    f = task.files.get(s64(fd) if fd >> 31 == 0 else -1)
    if f is None:
        return -E.EBADF
    cpu.charge(k.cost.syscall_body)
    if isinstance(f, HostFile) or (isinstance(f, DirFile) and f.node.dev == ROOT_DEV):
        return 0
    return -E.EINVAL


# ---- statfs (fs/statfs.c) ------------------------------------------------------------------------
def _statfs_bytes(k: "Kernel", dev: int | None, pipe: bool = False) -> bytes:
    """asm-generic struct statfs (64-bit: 120 bytes) of the file system ``dev`` names, with
    fixed figures: a 4 KiB-block root of 8 Mi blocks, half free; procfs and devtmpfs as the
    kernel fills them (f_blocks 0 / tmpfs-like)."""
    ro = 0 if getattr(k.vfs, "writable", False) else ST_RDONLY
    if pipe:
        vals = (PIPEFS_MAGIC, 4096, 0, 0, 0, 0, 0, 0, 255, 4096, ST_VALID)
    elif dev == PROC_DEV:
        vals = (PROC_SUPER_MAGIC, 4096, 0, 0, 0, 0, 0, PROC_DEV, 255, 4096,
                ST_VALID | ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_RELATIME)
    elif dev == DEV_DEV:
        vals = (TMPFS_MAGIC, 4096, 0, 0, 0, 65536, 65000, DEV_DEV, 255, 4096,
                ST_VALID | ST_NOSUID | ST_RELATIME)
    else:
        vals = (EXT4_SUPER_MAGIC, 4096, 1 << 23, 1 << 22, 1 << 22, 1 << 21, 1 << 20, ROOT_DEV,
                255, 4096, ST_VALID | ST_RELATIME | ro)
    f_type, bsize, blocks, bfree, bavail, files, ffree, fsid, namelen, frsize, flags = vals
    le = lambda v: (v & (1 << 64) - 1).to_bytes(8, "little")       # noqa: E731
    fsid_b = (fsid & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4)
    return (le(f_type) + le(bsize) + le(blocks) + le(bfree) + le(bavail) + le(files) + le(ffree)
            + fsid_b + le(namelen) + le(frsize) + le(flags) + bytes(32))


# ---- preadv / pwritev (fs/read_write.c) ----------------------------------------------------------
def _prw(k: "Kernel", cpu, task, fd, iov, iovcnt, pos, flags, write: bool, v2: bool) -> Any:
    """do_preadv/do_pwritev: a positioned vector read/write (pos -1 with the v2 calls: at the
    file position, as readv/writev); a pipe or other unseekable file is ESPIPE, a negative
    position EINVAL, an unknown RWF_* flag EOPNOTSUPP."""
    pos = s64(pos)
    if v2 and flags & ~RWF_SUPPORTED:
        return -EOPNOTSUPP
    if v2 and pos == -1:
        if write:
            return syscalls_read_write.sys_writev(k, cpu, task, fd, iov, iovcnt)
        return syscalls_read_write.sys_readv(k, cpu, task, fd, iov, iovcnt)
    if pos < 0:
        return -E.EINVAL
    f = task.files.get(s64(fd))
    if f is None or not (f.writable if write else f.readable):
        return -E.EBADF
    if not isinstance(f, VfsFile):
        return -E.ESPIPE            # no FMODE_PREAD / FMODE_PWRITE
    if isinstance(f, DirFile) and not write:
        return -E.EISDIR
    vec = syscalls_read_write._vec(k, task, iov, iovcnt)
    if isinstance(vec, int):
        return vec
    off = [pos]

    def one(base: int, n: int, res: Any) -> Any:
        at = off[0]
        r = (syscalls_read_write._do_write(k, cpu, task, fd, base, n, res, at) if write
             else syscalls_read_write._do_read(k, cpu, task, fd, base, n, res, at))
        if isinstance(r, int) and r > 0:
            off[0] += r
        return r
    return syscalls_read_write._each_iov_long(k, task, vec, one)
