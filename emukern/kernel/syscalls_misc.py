"""Process attributes and small file syscalls glibc programs use: credentials (kernel/sys.c,
kernel/groups.c), nice values and scheduling policies (kernel/sys.c setpriority/getpriority,
kernel/sched/syscalls.c), personality, gettimeofday, the sync family (fs/sync.c), statfs
(fs/statfs.c), preadv/pwritev[2] (fs/read_write.c) and close_range (fs/file.c).

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

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import PipeEnd
from emukern.kernel.sysret import s64

if TYPE_CHECKING:
    from emukern.kernel.task import Task

MISC_SYSCALL_NAMES = {
    43: "statfs", 44: "fstatfs", 69: "preadv", 70: "pwritev", 81: "sync", 82: "fsync",
    83: "fdatasync", 92: "personality", 118: "sched_setparam", 119: "sched_setscheduler",
    120: "sched_getscheduler", 121: "sched_getparam", 125: "sched_get_priority_max",
    126: "sched_get_priority_min", 127: "sched_rr_get_interval", 140: "setpriority",
    141: "getpriority", 143: "setregid", 144: "setgid", 145: "setreuid", 146: "setuid",
    147: "setresuid", 148: "getresuid", 149: "setresgid", 150: "getresgid", 151: "setfsuid",
    152: "setfsgid", 158: "getgroups", 159: "setgroups", 169: "gettimeofday", 267: "syncfs",
    286: "preadv2", 287: "pwritev2", 436: "close_range",
    259: "riscv_flush_icache",           # an arch-specific slot: RISC-V only (as 258)
}

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


class MiscSyscallsMixin:
    """The syscalls above; mixed into the kernel."""

    cost: Any
    config: Any
    tasks: dict
    clock: Any
    sched: Any

    if TYPE_CHECKING:
        def _user_path(self, task: Any, ptr: int) -> str | int: ...
        def _vec(self, task: Any, iov: int, iovcnt: int) -> Any: ...
        def _each_iov_long(self, task: Any, vec: Any, op: Any) -> Any: ...
        def _do_read(self, cpu: Any, task: Any, fd: int, buf: int, count: int, res: Any = None, off: Any = None) -> Any: ...
        def _do_write(self, cpu: Any, task: Any, fd: int, buf: int, count: int, res: Any = None, off: Any = None) -> Any: ...
        def sys_close(self, cpu: Any, task: Any, fd: int, *a: int) -> Any: ...
        def sys_readv(self, cpu: Any, task: Any, fd: int, iov: int, iovcnt: int, *a: int) -> Any: ...
        def sys_writev(self, cpu: Any, task: Any, fd: int, iov: int, iovcnt: int, *a: int) -> Any: ...
        def pgid_of(self, task: Any) -> int: ...
        vfs: Any

    # ---- credentials (kernel/sys.c) -----------------------------------------------------------
    def _set_cred(self, cpu, task, new: Cred) -> int:
        task.cred = new                 # commit_creds
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_getuid(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        return cred_of(task).uid

    def sys_geteuid(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        return cred_of(task).euid

    def sys_getgid(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        return cred_of(task).gid

    def sys_getegid(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        return cred_of(task).egid

    def _getres(self, cpu, task, ptrs: tuple[int, int, int], vals: tuple[int, int, int]) -> int:
        for p, v in zip(ptrs, vals):    # put_user of each: the first bad pointer is EFAULT
            if task.mm.find(p) is None:
                return -E.EFAULT
            task.mm.write_u32(p, v)
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_getresuid(self, cpu, task, r, e, s, *a):
        c = cred_of(task)
        return self._getres(cpu, task, (r, e, s), (c.uid, c.euid, c.suid))

    def sys_getresgid(self, cpu, task, r, e, s, *a):
        c = cred_of(task)
        return self._getres(cpu, task, (r, e, s), (c.gid, c.egid, c.sgid))

    # kernel/sys.c has one function per id kind with the same rules; here one of each, on the
    # field names of that kind: (real, effective, saved, fs)
    _UIDS = ("uid", "euid", "suid", "fsuid")
    _GIDS = ("gid", "egid", "sgid", "fsgid")

    def _setid(self, cpu, task, v, names: tuple[str, ...]) -> int:
        """__sys_setuid / __sys_setgid: root sets all four ids; anyone else only the effective
        (and fs) id, to the real or the saved one."""
        v, c = _u32(v), cred_of(task)
        r, e, s, fs = names
        if v == NO_ID:
            return -E.EINVAL
        if c.euid == 0:
            return self._set_cred(cpu, task, replace(c, **{r: v, e: v, s: v, fs: v}))
        if v in (getattr(c, r), getattr(c, s)):
            return self._set_cred(cpu, task, replace(c, **{e: v, fs: v}))
        return -E.EPERM

    def _setreid(self, cpu, task, rv, ev, names: tuple[str, ...]) -> int:
        """__sys_setreuid / __sys_setregid: the new real id must be the old real or effective
        one, the new effective one of the old three (root: anything); the saved id follows the
        new effective id when the real id is set or the effective one moves away from the old
        real id."""
        rv, ev, c = _u32(rv), _u32(ev), cred_of(task)
        r, e, s, fs = names
        old_r, old_e, old_s = getattr(c, r), getattr(c, e), getattr(c, s)
        priv = c.euid == 0
        if rv != NO_ID and not priv and rv not in (old_r, old_e):
            return -E.EPERM
        if ev != NO_ID and not priv and ev not in (old_r, old_e, old_s):
            return -E.EPERM
        new_r = old_r if rv == NO_ID else rv
        new_e = old_e if ev == NO_ID else ev
        new_s = new_e if rv != NO_ID or (ev != NO_ID and ev != old_r) else old_s
        return self._set_cred(cpu, task, replace(c, **{r: new_r, e: new_e, s: new_s, fs: new_e}))

    def _setresid(self, cpu, task, vals: tuple[int, int, int], names: tuple[str, ...]) -> int:
        """__sys_setresuid / __sys_setresgid: without privilege each new id must be one of the
        old three."""
        c = cred_of(task)
        new = [_u32(v) for v in vals]
        olds = tuple(getattr(c, n) for n in names[:3])
        if c.euid != 0 and any(v != NO_ID and v not in olds for v in new):
            return -E.EPERM
        nr, ne, ns = (o if v == NO_ID else v for v, o in zip(new, olds))
        return self._set_cred(cpu, task, replace(c, **dict(zip(names, (nr, ne, ns, ne)))))

    def _setfsid(self, cpu, task, v, names: tuple[str, ...]) -> int:
        """setfsuid / setfsgid always return the old fs id; they change it only to one of the
        four ids (root: to anything), and never fail."""
        v, c = _u32(v), cred_of(task)
        old = getattr(c, names[3])
        if v != NO_ID and (c.euid == 0 or v in tuple(getattr(c, n) for n in names)):
            task.cred = replace(c, **{names[3]: v})
        cpu.charge(self.cost.syscall_body)
        return old

    def sys_setuid(self, cpu, task, uid, *a):
        return self._setid(cpu, task, uid, self._UIDS)

    def sys_setgid(self, cpu, task, gid, *a):
        return self._setid(cpu, task, gid, self._GIDS)

    def sys_setreuid(self, cpu, task, ruid, euid, *a):
        return self._setreid(cpu, task, ruid, euid, self._UIDS)

    def sys_setregid(self, cpu, task, rgid, egid, *a):
        return self._setreid(cpu, task, rgid, egid, self._GIDS)

    def sys_setresuid(self, cpu, task, r, e, s, *a):
        return self._setresid(cpu, task, (r, e, s), self._UIDS)

    def sys_setresgid(self, cpu, task, r, e, s, *a):
        return self._setresid(cpu, task, (r, e, s), self._GIDS)

    def sys_setfsuid(self, cpu, task, uid, *a):
        return self._setfsid(cpu, task, uid, self._UIDS)

    def sys_setfsgid(self, cpu, task, gid, *a):
        return self._setfsid(cpu, task, gid, self._GIDS)

    def sys_getgroups(self, cpu, task, size, ptr, *a):
        """getgroups: size 0 asks for the count; a smaller array than the list is EINVAL."""
        groups = cred_of(task).groups
        size = s64(size) if size >> 31 == 0 else (size & 0xFFFFFFFF) - (1 << 32)
        if size < 0:
            return -E.EINVAL
        cpu.charge(self.cost.syscall_body)
        if size == 0:
            return len(groups)
        if size < len(groups):
            return -E.EINVAL
        if groups:
            if task.mm.find(ptr) is None:
                return -E.EFAULT
            task.mm.write(ptr, b"".join(g.to_bytes(4, "little") for g in groups))
        return len(groups)

    def sys_setgroups(self, cpu, task, size, ptr, *a):
        """setgroups: CAP_SETGID (root) only; at most NGROUPS_MAX; kept sorted (groups_sort)."""
        size = _u32(size)
        if cred_of(task).euid != 0:    # may_setgroups comes before the size check
            return -E.EPERM
        if size >= 1 << 31 or size > NGROUPS_MAX:
            return -E.EINVAL
        raw = b""
        if size:
            if task.mm.find(ptr) is None or task.mm.find(ptr + 4 * size - 1) is None:
                return -E.EFAULT
            raw = task.mm.read(ptr, 4 * size)
        groups = tuple(sorted(int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4)))
        return self._set_cred(cpu, task, replace(cred_of(task), groups=groups))

    # ---- nice values (kernel/sys.c) -------------------------------------------------------------
    def _prio_targets(self, task, which: int, who: int) -> list["Task"] | int:
        """The tasks setpriority/getpriority act on: one thread, a process group, a user's."""
        live = [t for t in self.tasks.values() if t.alive]
        if which == PRIO_PROCESS:
            t = task if who == 0 else self.tasks.get(who)
            return [t] if t is not None and t.alive else []
        if which == PRIO_PGRP:
            pgrp = self._pgrp_of(task) if who == 0 else who
            return [t for t in live if self._pgrp_of(t) == pgrp]
        if which == PRIO_USER:
            uid = cred_of(task).uid if who == 0 else who
            return [t for t in live if cred_of(t).uid == uid]
        return -E.EINVAL

    def _pgrp_of(self, task) -> int:
        return self.pgid_of(task)

    def sys_getpriority(self, cpu, task, which, who, *a):
        """getpriority returns 20 - nice of the highest-priority target (1..40: no negative
        return values that would look like errors; glibc subtracts it back)."""
        targets = self._prio_targets(task, _u32(which) if _u32(which) < 3 else 3, s64(who) & 0xFFFFFFFF)
        if isinstance(targets, int):
            return targets
        cpu.charge(self.cost.syscall_body)
        if not targets:
            return -E.ESRCH
        return max(20 - t.nice for t in targets)

    def sys_setpriority(self, cpu, task, which, who, niceval, *a):
        """setpriority: the nice value clamped to -20..19 (root may lower it)."""
        targets = self._prio_targets(task, _u32(which) if _u32(which) < 3 else 3, s64(who) & 0xFFFFFFFF)
        if isinstance(targets, int):
            return targets
        n = (niceval & 0xFFFFFFFF) - ((niceval & 0x80000000) << 1)
        n = min(max(n, MIN_NICE), MAX_NICE)
        cpu.charge(self.cost.syscall_body)
        if not targets:
            return -E.ESRCH
        c = cred_of(task)
        for t in targets:
            tc = cred_of(t)
            if c.euid != 0 and (c.euid not in (tc.uid, tc.euid) or n < t.nice):
                return -E.EACCES if n < t.nice else -E.EPERM      # set_one_prio
            t.nice = n
        return 0

    # ---- scheduling policies (kernel/sched/syscalls.c) ------------------------------------------
    def _sched_target(self, task, pid: int) -> "Task | int":
        pid = s64(pid) if pid >> 31 == 0 else (pid & 0xFFFFFFFF) - (1 << 32)
        if pid < 0:
            return -E.EINVAL
        t = task if pid == 0 else self.tasks.get(pid)
        if t is None or not t.alive:
            return -E.ESRCH
        return t

    def sys_sched_getscheduler(self, cpu, task, pid, *a):
        t = self._sched_target(task, pid)
        if isinstance(t, int):
            return t
        cpu.charge(self.cost.syscall_body)
        return t.sched_policy | (SCHED_RESET_ON_FORK if t.sched_reset_on_fork else 0)

    def sys_sched_getparam(self, cpu, task, pid, param, *a):
        if not param:
            return -E.EINVAL
        t = self._sched_target(task, pid)
        if isinstance(t, int):
            return t
        if task.mm.find(param) is None:
            return -E.EFAULT
        task.mm.write_u32(param, t.rt_priority)
        cpu.charge(self.cost.syscall_body)
        return 0

    def _setscheduler(self, cpu, task, pid, policy: int | None, param) -> int:
        """do_sched_setscheduler / __sched_setscheduler's checks: FIFO and RR take a priority
        1..99, the fair policies 0; SCHED_DEADLINE only through sched_setattr."""
        if not param or (s64(pid) if pid >> 31 == 0 else -1) < 0:
            return -E.EINVAL
        if task.mm.find(param) is None:
            return -E.EFAULT
        prio = task.mm.read_u32(param)
        t = self._sched_target(task, pid)
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
        if me.euid != 0 and (rt or me.euid not in (tc.uid, tc.euid)):      # check_same_owner
            return -E.EPERM             # no CAP_SYS_NICE (RLIMIT_RTPRIO is 0 by default)
        t.sched_policy, t.rt_priority, t.sched_reset_on_fork = policy, prio, reset
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_sched_setscheduler(self, cpu, task, pid, policy, param, *a):
        return self._setscheduler(cpu, task, pid, _u32(policy), param)

    def sys_sched_setparam(self, cpu, task, pid, param, *a):
        return self._setscheduler(cpu, task, pid, None, param)

    def _prio_limit(self, cpu, policy, hi: bool) -> int:
        cpu.charge(self.cost.syscall_body)
        policy = _u32(policy)
        if policy in (SCHED_FIFO, SCHED_RR):
            return MAX_RT_PRIO - 1 if hi else 1
        if policy in (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_DEADLINE):
            return 0
        return -E.EINVAL

    def sys_sched_get_priority_max(self, cpu, task, policy, *a):
        return self._prio_limit(cpu, policy, True)

    def sys_sched_get_priority_min(self, cpu, task, policy, *a):
        return self._prio_limit(cpu, policy, False)

    def sys_sched_rr_get_interval(self, cpu, task, pid, interval, *a):
        """The round-robin time slice: RR_TIMESLICE for SCHED_RR, 0 for FIFO, and for the fair
        class the task's slice in whole jiffies (get_rr_interval_fair: NS_TO_JIFFIES)."""
        t = self._sched_target(task, pid)
        if isinstance(t, int):
            return t
        if t.sched_policy == SCHED_RR:
            ns = RR_TIMESLICE_NS
        elif t.sched_policy == SCHED_FIFO:
            ns = 0
        else:
            jiffy = 10**9 // self.clock.hz
            ns = BASE_SLICE_NS // jiffy * jiffy
        if task.mm.find(interval) is None:
            return -E.EFAULT
        task.mm.write(interval, (ns // 10**9).to_bytes(8, "little") + (ns % 10**9).to_bytes(8, "little"))
        cpu.charge(self.cost.syscall_body)
        return 0

    # ---- personality, time ------------------------------------------------------------------------
    def sys_personality(self, cpu, task, persona, *a):
        """personality(0xffffffff) only reads; anything else is stored (set_personality) and the
        old value returned.  emukern acts on none of the flags (no address randomisation to turn
        off, no other ABI)."""
        old = task.personality
        if _u32(persona) != PER_LINUX_MASK:
            task.personality = _u32(persona)
        cpu.charge(self.cost.syscall_body)
        return old

    def sys_gettimeofday(self, cpu, task, tv, tz, *a):
        """gettimeofday: CLOCK_REALTIME in microseconds (the same clock clock_gettime reads), and
        a zero timezone (sys_tz is all zeros unless settimeofday set it)."""
        ns = int(self.clock.ns(cpu.now))
        if tv:
            if task.mm.find(tv) is None:
                return -E.EFAULT
            task.mm.write(tv, (ns // 10**9).to_bytes(8, "little") + (ns % 10**9 // 1000).to_bytes(8, "little"))
        if tz:
            if task.mm.find(tz) is None:
                return -E.EFAULT
            task.mm.write(tz, bytes(8))
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_riscv_flush_icache(self, cpu, task, start, end, flags, *a):
        """arch/riscv/kernel/sys_riscv.c: EINVAL for flags other than SYS_RISCV_FLUSH_ICACHE_LOCAL;
        otherwise 0.  Nothing to flush here: Unicorn drops the translations of code a store
        writes (self-modifying code is caught when it happens), which is what fence.i and this
        call give a RISC-V program."""
        if self.config.arch != "riscv64":
            return -E.ENOSYS            # 259 is an arch-specific slot that only RISC-V fills
        if flags & ~1:
            return -E.EINVAL
        cpu.charge(self.cost.syscall_body)
        return 0

    # ---- the sync family (fs/sync.c) ----------------------------------------------------------------
    def _fsync(self, cpu, task, fd) -> int:
        """vfs_fsync_range: EBADF for no descriptor, EINVAL for a file without ->fsync (pipes,
        sockets, terminals, /proc and /dev files, eventfd/epoll); a file of the root is written
        straight through to the host already, so there is nothing to flush."""
        from emukern.kernel.fs.file import DirFile, HostFile
        from emukern.kernel.fs.vfs import ROOT_DEV
        f = task.files.get(s64(fd) if fd >> 31 == 0 else -1)
        if f is None:
            return -E.EBADF
        cpu.charge(self.cost.syscall_body)
        if isinstance(f, HostFile) or (isinstance(f, DirFile) and f.node.dev == ROOT_DEV):
            return 0
        return -E.EINVAL

    def sys_fsync(self, cpu, task, fd, *a):
        return self._fsync(cpu, task, fd)

    def sys_fdatasync(self, cpu, task, fd, *a):
        return self._fsync(cpu, task, fd)

    def sys_sync(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_syncfs(self, cpu, task, fd, *a):
        """syncfs: any open descriptor's file system (pipefs and the rest included) syncs: 0."""
        if task.files.get(s64(fd) if fd >> 31 == 0 else -1) is None:
            return -E.EBADF
        cpu.charge(self.cost.syscall_body)
        return 0

    # ---- statfs (fs/statfs.c) ------------------------------------------------------------------------
    def _statfs_bytes(self, dev: int | None, pipe: bool = False) -> bytes:
        """asm-generic struct statfs (64-bit: 120 bytes) of the file system ``dev`` names, with
        fixed figures: a 4 KiB-block root of 8 Mi blocks, half free; procfs and devtmpfs as the
        kernel fills them (f_blocks 0 / tmpfs-like)."""
        from emukern.kernel.fs.vfs import DEV_DEV, PROC_DEV, ROOT_DEV
        ro = 0 if getattr(self.vfs, "writable", False) else ST_RDONLY
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

    def sys_statfs(self, cpu, task, path_ptr, buf, *a):
        path = self._user_path(task, path_ptr)
        if isinstance(path, int):
            return path
        node = self.vfs.lookup(task, path)
        if isinstance(node, int):
            return node
        if task.mm.find(buf) is None:
            return -E.EFAULT
        task.mm.write(buf, self._statfs_bytes(node.dev))
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_fstatfs(self, cpu, task, fd, buf, *a):
        from emukern.kernel.fs.file import VfsFile
        f = task.files.get(s64(fd) if fd >> 31 == 0 else -1)
        if f is None:
            return -E.EBADF
        if task.mm.find(buf) is None:
            return -E.EFAULT
        dev = f.node.dev if isinstance(f, VfsFile) else None
        task.mm.write(buf, self._statfs_bytes(dev, pipe=isinstance(f, PipeEnd)))
        cpu.charge(self.cost.syscall_body)
        return 0

    # ---- preadv / pwritev (fs/read_write.c) ----------------------------------------------------------
    def _prw(self, cpu, task, fd, iov, iovcnt, pos, flags, write: bool, v2: bool) -> Any:
        """do_preadv/do_pwritev: a positioned vector read/write (pos -1 with the v2 calls: at the
        file position, as readv/writev); a pipe or other unseekable file is ESPIPE, a negative
        position EINVAL, an unknown RWF_* flag EOPNOTSUPP."""
        from emukern.kernel.fs.file import DirFile, VfsFile
        pos = s64(pos)
        if v2 and flags & ~RWF_SUPPORTED:
            return -EOPNOTSUPP
        if v2 and pos == -1:
            if write:
                return self.sys_writev(cpu, task, fd, iov, iovcnt)
            return self.sys_readv(cpu, task, fd, iov, iovcnt)
        if pos < 0:
            return -E.EINVAL
        f = task.files.get(s64(fd))
        if f is None or not (f.writable if write else f.readable):
            return -E.EBADF
        if not isinstance(f, VfsFile):
            return -E.ESPIPE            # no FMODE_PREAD / FMODE_PWRITE
        if isinstance(f, DirFile) and not write:
            return -E.EISDIR
        vec = self._vec(task, iov, iovcnt)
        if isinstance(vec, int):
            return vec
        off = [pos]

        def one(base: int, n: int, res: Any) -> Any:
            at = off[0]
            r = (self._do_write(cpu, task, fd, base, n, res, at) if write
                 else self._do_read(cpu, task, fd, base, n, res, at))
            if isinstance(r, int) and r > 0:
                off[0] += r
            return r
        return self._each_iov_long(task, vec, one)

    def sys_preadv(self, cpu, task, fd, iov, iovcnt, pos_l, pos_h, *a):
        return self._prw(cpu, task, fd, iov, iovcnt, pos_l, 0, False, False)

    def sys_pwritev(self, cpu, task, fd, iov, iovcnt, pos_l, pos_h, *a):
        return self._prw(cpu, task, fd, iov, iovcnt, pos_l, 0, True, False)

    def sys_preadv2(self, cpu, task, fd, iov, iovcnt, pos_l, pos_h, flags, *a):
        return self._prw(cpu, task, fd, iov, iovcnt, pos_l, flags, False, True)

    def sys_pwritev2(self, cpu, task, fd, iov, iovcnt, pos_l, pos_h, flags, *a):
        return self._prw(cpu, task, fd, iov, iovcnt, pos_l, flags, True, True)

    # ---- close_range (fs/file.c) -----------------------------------------------------------------------
    def sys_close_range(self, cpu, task, first, last, flags, *a):
        """close_range: EINVAL for unknown flags or first > last; CLOSE_RANGE_UNSHARE first gives
        the task a table of its own (unshare_fd) when threads or CLONE_FILES children share it;
        CLOSE_RANGE_CLOEXEC marks instead of closing."""
        first, last = _u32(first), _u32(last)
        if flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) or first > last:
            return -E.EINVAL
        if flags & CLOSE_RANGE_UNSHARE and any(t.files is task.files for t in self.tasks.values()
                                               if t is not task and t.alive):
            task.files = task.files.dup_table()
        fds = sorted(fd for fd in task.files.fds if first <= fd <= last)
        cpu.charge(self.cost.syscall_body)
        if flags & CLOSE_RANGE_CLOEXEC:
            task.files.cloexec.update(fds)
            return 0
        for fd in fds:
            self.sys_close(cpu, task, fd)
        return 0
