"""The Linux syscall ABI shared by RISC-V and arm64 (asm-generic numbers).

Handlers return the value for a0/x0 (negative errno on failure) or :data:`BLOCK` to sleep; a
blocked syscall is re-run from the start when the task is woken, like Linux's wait loops.  The
long read/write loops may also return ``PREEMPTED`` (kernel/preempt.py): switched out at a
preemption point, the call continues from its recorded progress when switched back in.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.files import (OutputFile, Pipe, PipeEnd, StdinFile, SysctlFile, WaitQueue)
from emukern.kernel import preempt as P
from emukern.kernel.fs.file import DevZero, HostFile, VfsFile, write_kernel_bytes
from emukern.kernel.resource import copy_rlimits
from emukern.kernel.epoll import EpollMixin, EventFdFile
from emukern.kernel.fs import FS_SYSCALL_NAMES
from emukern.kernel.net import NET_SYSCALL_NAMES
from emukern.kernel.net.unix import UnixSocketMixin
from emukern.kernel.fs.meta import FSMETA_SYSCALL_NAMES, FsMetaMixin
from emukern.kernel.select import SELECT_SYSCALL_NAMES, SelectMixin
from emukern.kernel.signalfd import SIGNALFD_SYSCALL_NAMES, SignalFdMixin
from emukern.kernel.timerfd import TIMERFD_SYSCALL_NAMES, TimerFdMixin
from emukern.kernel.mm_syscalls import MM_SYSCALL_NAMES, MmSyscallsMixin
from emukern.kernel.signal import copy_signals, flush_signal_handlers
from emukern.kernel.syscalls_fs import FileSyscallsMixin
from emukern.kernel.syscalls_misc import MISC_SYSCALL_NAMES, MiscSyscallsMixin, copy_process_attrs
from emukern.kernel.sysret import BLOCK, U64, s64
from emukern.kernel.task import Task, TaskState
from emukern.kernel.uaccess import copy_from_user, copy_from_user_chunk, copy_to_user, copy_to_user_chunk
from emukern.machine.memory import PAGE, SHARED_ANON, OutOfMemory, page_up

if TYPE_CHECKING:
    from emukern.kernel.sched import Scheduler
    from emukern.machine.cpu_base import Cpu



# clone flags
CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND = 0x100, 0x200, 0x400, 0x800
CLONE_THREAD, CLONE_SETTLS, CLONE_PARENT_SETTID = 0x10000, 0x80000, 0x100000
CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID = 0x200000, 0x1000000
# futex
FUTEX_WAIT, FUTEX_WAKE, FUTEX_PRIVATE = 0, 1, 128
FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET = 9, 10
# mmap
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS = 1, 2, 0x10, 0x20
O_ACCMODE, O_WRONLY, O_RDWR, O_NONBLOCK, O_CLOEXEC = 3, 1, 2, 0x800, 0x80000
AT_FDCWD = -100
WNOHANG = 1

SYSCALL_NAMES = {
    56: "openat", 57: "close", 59: "pipe2", 63: "read", 64: "write", 93: "exit", 94: "exit_group",
    96: "set_tid_address", 98: "futex", 99: "set_robust_list", 101: "nanosleep", 113: "clock_gettime",
    115: "clock_nanosleep", 122: "sched_setaffinity", 123: "sched_getaffinity", 124: "sched_yield",
    129: "kill", 131: "tgkill", 134: "rt_sigaction", 135: "rt_sigprocmask", 160: "uname", 167: "prctl",
    168: "getcpu", 172: "getpid", 173: "getppid", 174: "getuid", 175: "geteuid", 176: "getgid",
    177: "getegid", 178: "gettid", 214: "brk", 215: "munmap", 220: "clone", 221: "execve", 222: "mmap",
    226: "mprotect", 260: "wait4", 278: "getrandom",
    # what a static glibc/musl start-up and stdio use (emukern/kernel/syscalls_fs.py and below)
    23: "dup", 24: "dup3", 25: "fcntl", 29: "ioctl", 62: "lseek", 65: "readv", 66: "writev",
    78: "readlinkat", 79: "newfstatat", 80: "fstat", 132: "sigaltstack", 233: "madvise",
    261: "prlimit64", 293: "rseq", 163: "getrlimit", 164: "setrlimit",
    117: "ptrace",                   # emukern/kernel/ptrace.py
    270: "process_vm_readv", 271: "process_vm_writev",     # emukern/kernel/process_vm.py
    # epoll and eventfd (emukern/kernel/epoll.py)
    19: "eventfd2", 20: "epoll_create1", 21: "epoll_ctl", 22: "epoll_pwait", 441: "epoll_pwait2",
    # signals (emukern/kernel/signal.py)
    102: "getitimer", 103: "setitimer", 130: "tkill", 133: "rt_sigsuspend", 136: "rt_sigpending",
    137: "rt_sigtimedwait", 138: "rt_sigqueueinfo", 139: "rt_sigreturn", 154: "setpgid",
    155: "getpgid", 156: "getsid", 157: "setsid", 73: "ppoll", 107: "timer_create",
    108: "timer_gettime", 109: "timer_getoverrun", 110: "timer_settime", 111: "timer_delete",
    95: "waitid",
}
SYSCALL_NAMES.update(FS_SYSCALL_NAMES)
SYSCALL_NAMES.update(MISC_SYSCALL_NAMES)       # emukern/kernel/syscalls_misc.py
SYSCALL_NAMES.update(SELECT_SYSCALL_NAMES)     # emukern/kernel/select.py
SYSCALL_NAMES.update(NET_SYSCALL_NAMES)       # AF_UNIX sockets (emukern/kernel/net/unix.py)
SYSCALL_NAMES.update(FSMETA_SYSCALL_NAMES)     # emukern/kernel/fs/meta.py
SYSCALL_NAMES.update(TIMERFD_SYSCALL_NAMES)    # emukern/kernel/timerfd.py
SYSCALL_NAMES.update(SIGNALFD_SYSCALL_NAMES)   # emukern/kernel/signalfd.py
SYSCALL_NAMES.update(MM_SYSCALL_NAMES)         # emukern/kernel/mm_syscalls.py
SYSCALL_NUMBERS = {v: k for k, v in SYSCALL_NAMES.items()}


def prot_str(prot: int) -> str:
    return ("r" if prot & PROT_READ else "-") + ("w" if prot & PROT_WRITE else "-") + ("x" if prot & PROT_EXEC else "-")



class SyscallsMixin(FileSyscallsMixin, EpollMixin, MiscSyscallsMixin, SelectMixin, MmSyscallsMixin,
                    UnixSocketMixin, FsMetaMixin, TimerFdMixin, SignalFdMixin):
    """Generic syscalls; mixed into :class:`emukern.kernel.kernel.Kernel`."""

    # (attributes provided by Kernel)
    cost: Any
    config: Any
    tasks: dict
    percpu: list
    cpus: list
    clock: Any
    arch: Any
    sysctl: Any
    sched: "Scheduler"                                    # kernel.sched (kernel/sched.py)
    _dispatch: dict[int, list[Any]]                       # build_syscall_table()
    unknown_syscalls: Counter[int]                        # numbers that got -ENOSYS
    futex_queues: dict[tuple[int, int], WaitQueue]        # (mm, uaddr) -> the futex's waiters
    child_wait: dict[int, WaitQueue]                      # tgid -> its wait4 sleepers
    _to_release: list[Task]                               # reaped tasks to release_task later

    if TYPE_CHECKING:       # what the syscalls call on the rest of the kernel (Kernel, SignalMixin)
        def force_sig(self, cpu: "Cpu", task: Task, sig: int, trap: Any, why: str) -> None: ...
        def wait_task_stopped_continued(self, task: Task, child: Task, options: int, status_ptr: int) -> int: ...
        def get_next_ino(self, cpu: "Cpu") -> int: ...
        def alloc_tid(self) -> int: ...
        def mmput(self, mm: Any) -> None: ...
        def exit_notify(self, cpu: "Cpu", task: Task) -> bool: ...

    def syscall_name(self, nr: int) -> str:
        return SYSCALL_NAMES.get(nr, f"syscall_{nr}")

    def build_syscall_table(self) -> dict[int, list[Any]]:
        """nr -> [name, bound handler, entries, completions, cycles], built once (the dispatch is
        on every syscall's path).  The last three are counts Kernel.syscall_entry keeps for the
        calls it takes: entered (a trap), returned on its short path (by name), and those
        returns' cycles.  A list item costs a fraction of a Counter's += (measured ~5 times
        less), so the short path counts here and the kernel's Counters (trap_counts,
        trap_cycles, syscall_counts) fold these in when they are read."""
        table = {}
        for nr, name in SYSCALL_NAMES.items():
            fn = getattr(self, "sys_" + name, None)
            if fn is not None:
                table[nr] = [name, fn, 0, 0, 0]
        return table

    def _call_syscall(self, cpu: "Cpu", task: Task, nr: int, args: tuple[int, ...]) -> tuple[str, Any]:
        """(name, return value) through the dispatch table: an unknown number is -ENOSYS (and
        counted), a bad user pointer -EFAULT, an allocation the host refuses -ENOMEM."""
        entry = self._dispatch.get(nr)
        if entry is None:
            self.unknown_syscalls[nr] += 1
            return f"syscall_{nr}", -E.ENOSYS
        name, fn = entry[0], entry[1]
        a0, a1, a2, a3, a4, a5 = args
        try:
            # (six positional arguments: a call with *args costs twice as much here)
            return name, fn(cpu, task, a0, a1, a2, a3, a4, a5)
        except MemoryFault:
            return name, -E.EFAULT
        except OutOfMemory:
            return name, -E.ENOMEM

    # ---- process ids -----------------------------------------------------------------------------
    def sys_getpid(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        return task.tgid

    def sys_getppid(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        leader = self.tasks.get(task.tgid, task)
        return leader.parent.tgid if leader.parent is not None else 0

    def sys_gettid(self, cpu, task, *a):
        cpu.charge(self.cost.syscall_body)
        return task.tid

    def sys_getcpu(self, cpu, task, cpup, nodep, *a):
        cpu.charge(self.cost.syscall_body)
        if cpup:
            task.mm.write_u32(cpup, cpu.index)
        if nodep:
            task.mm.write_u32(nodep, 0)
        return 0

    def sys_set_tid_address(self, cpu, task, tidptr, *a):
        task.clear_child_tid = tidptr
        cpu.charge(self.cost.syscall_body)
        return task.tid

    def sys_set_robust_list(self, cpu, task, *a):
        return 0

    def sys_madvise(self, cpu, task, addr, length, advice, *a):
        return 0 if self.arch.untagged_addr(addr) % PAGE == 0 else -E.EINVAL

    def sys_rseq(self, cpu, task, *a):
        return -E.ENOSYS          # restartable sequences are not modelled; libcs fall back

    def sys_getrlimit(self, cpu, task, resource, rlim, *a):
        return self.sys_prlimit64(cpu, task, 0, resource, 0, rlim)

    def sys_setrlimit(self, cpu, task, resource, rlim, *a):
        if not rlim:
            return -E.EFAULT
        return self.sys_prlimit64(cpu, task, 0, resource, rlim, 0)

    def sys_prlimit64(self, cpu, task, pid, resource, new, old, *a):
        """kernel/sys.c prlimit64 (glibc's getrlimit/setrlimit use it): kernel/resource.py."""
        from emukern.kernel.resource import do_prlimit
        pid = s64(pid)
        target = task if pid == 0 else self.tasks.get(pid)
        if target is None or not target.alive:
            return -E.ESRCH
        pair = None
        if new:
            raw = copy_from_user(self, cpu, task, new, 16)
            pair = (int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little"))
        got = do_prlimit(self, target, target, resource & U64, pair)
        if isinstance(got, int):
            return got
        if old:
            task.mm.write(old, got[0].to_bytes(8, "little") + got[1].to_bytes(8, "little"))
        cpu.charge(self.cost.syscall_body)
        return 0

    # ---- files -----------------------------------------------------------------------------------
    def sys_write(self, cpu, task, fd, buf, count, *a):
        return self._do_write(cpu, task, fd, buf, count)

    def _do_write(self, cpu, task, fd, buf, count, res=None, off=None):
        f = task.files.get(s64(fd))
        if f is None or not f.writable:
            return -E.EBADF
        if isinstance(f, EventFdFile):
            return self.eventfd_write(cpu, task, f, buf, count & U64)
        count &= U64
        if not self.arch.access_ok(task, buf, count):
            return -E.EFAULT                    # vfs_write's access_ok, a zero count included
        r = f.kernel_write(self, cpu, task, buf, count)     # a plug-in kind (File.kernel_write)
        if r is not None:
            return r
        if count > 1 << 31:
            count = 1 << 31
        if isinstance(f, (PipeEnd, HostFile)):
            # the long loops a preemption can stop midway (kernel/preempt.py)
            return P.run_long(task, res, lambda r: self._write_iter(cpu, task, f, buf, count, r, off))
        data = copy_from_user(self, cpu, task, buf, count)     # charges the copy itself
        cpu.charge(self.cost.syscall_body)
        n = write_kernel_bytes(f, data, off)
        if n is not None:
            return n
        if isinstance(f, SysctlFile):
            from emukern.kernel.sysctl import proc_sys_write
            return proc_sys_write(f, data)
        return -E.EBADF

    def _write_iter(self, cpu, task, f, buf, count, res, off=None):
        """generic_perform_write (a host file: a page at a time, cond_resched() after each) or
        pipe_write; continues from ``res`` when the call was preempted inside."""
        if isinstance(f, PipeEnd):
            return self._pipe_write(cpu, task, f.pipe, buf, count, res)
        if P.fresh(res):
            cpu.charge(self.cost.syscall_body)

        def chunk(o: int, n: int) -> Any:
            data = copy_from_user_chunk(self, cpu, task, buf + o, n, res, "write")
            if data is P.PREEMPTED:
                return data
            return f.write(data) if off is None else f.pwrite(data, off + o)
        return P.page_loop(self, cpu, task, res, count, chunk, P.COND_RESCHED, "generic_perform_write")

    def sys_read(self, cpu, task, fd, buf, count, *a):
        return self._do_read(cpu, task, fd, buf, count)

    def _do_read(self, cpu, task, fd, buf, count, res=None, off=None):
        f = task.files.get(s64(fd))
        if f is None or not f.readable:
            return -E.EBADF
        if isinstance(f, EventFdFile):
            return self.eventfd_read(cpu, task, f, buf, count & U64)
        count &= U64
        if not self.arch.access_ok(task, buf, count):
            return -E.EFAULT                    # vfs_read's access_ok, a zero count included
        if count and task.mm.find(buf) is None:
            return -E.EFAULT
        r = f.kernel_read(self, cpu, task, buf, count)      # a plug-in kind (File.kernel_read)
        if r is not None:
            return r
        if isinstance(f, PipeEnd):
            return P.run_long(task, res, lambda r: self._pipe_read(cpu, task, f.pipe, buf, count, r))
        if isinstance(f, (HostFile, DevZero)) and count:
            return P.run_long(task, res, lambda r: self._read_iter(cpu, task, f, buf, count, r, off))
        if isinstance(f, StdinFile):
            data = f.data[f.pos: f.pos + count]
            f.pos += len(data)
        elif isinstance(f, VfsFile):
            got = f.read(count) if off is None else f.pread(count, off)
            if isinstance(got, int):
                return got
            data = got
        elif isinstance(f, SysctlFile):
            text = f.entry.render()
            data = text[f.pos: f.pos + count]
            f.pos += len(data)
        else:
            return -E.EBADF
        copy_to_user(self, cpu, task, buf, data)               # charges the copy itself
        cpu.charge(self.cost.syscall_body)
        return len(data)

    def _read_iter(self, cpu, task, f, buf, count, res, off=None):
        """filemap_read (a host file: cond_resched() before each batch of up to 31 pages) or
        read_iter_zero (/dev/zero: cond_resched() after each page), a page per chunk."""
        if P.fresh(res):
            cpu.charge(self.cost.syscall_body)
        from emukern.kernel.fs.file import MAX_IO
        count = min(count, MAX_IO)

        def chunk(o: int, n: int) -> Any:
            if res.part is not None:                 # the page read before the preemption
                data = bytes(res.part)
            else:
                got = f.read(n) if off is None else f.pread(n, off + o)
                if isinstance(got, int):
                    return got
                data = got
            if not data:
                return 0
            # (/dev/zero fills user memory with clear_user: never kernel-mode vector)
            r = copy_to_user_chunk(self, cpu, task, buf + o, data, res, "read", not isinstance(f, DevZero))
            if r is P.PREEMPTED:
                res.part = bytearray(data)
                return r
            res.part = None
            return len(data)
        batch = P.FOLIO_BATCH if isinstance(f, HostFile) else 1
        return P.page_loop(self, cpu, task, res, count, chunk, P.COND_RESCHED,
                           "filemap_read" if batch > 1 else "read_iter_zero", pages_per_point=batch)

    def _pipe_lock(self, cpu, task, p: Pipe, why: str) -> bool:
        """__pipe_lock (mutex_lock): False (the task sleeps on the mutex) while another task holds
        it — one preempted inside pipe_read/pipe_write."""
        owner = p.mutex_owner
        if owner is not None and owner is not task and owner.alive:
            self.sched.sleep_on(cpu, task, p.lockwait, why)
            return False
        p.mutex_owner = task
        return True

    def _pipe_unlock(self, cpu, p: Pipe) -> None:
        p.mutex_owner = None
        if p.lockwait.waiters:
            self.sched.wake_queue(p.lockwait, cpu.now)

    def _pipe_read(self, cpu, task, p: Pipe, buf, count, res) -> Any:
        """pipe_read: a page at a time under pipe->mutex; no cond_resched() inside (only the full
        model preempts the copy), the mutex's might_sleep() at the top (voluntary)."""
        if not count:
            return 0                        # a zero-length read returns at once
        if P.fresh(res):
            if not p.buf:
                if p.writers == 0:
                    return 0
                self.sched.sleep_on(cpu, task, p.rwait, "pipe_read")
                return BLOCK
            if P.preempt_point(self, cpu, task, P.MIGHT_RESCHED, "pipe_read"):
                return P.preempted(self, task, P.MIGHT_RESCHED)
            if not self._pipe_lock(cpu, task, p, "pipe_lock"):
                return BLOCK
            cpu.charge(self.cost.pipe_op)

        def chunk(o: int, n: int) -> Any:
            n = min(n, len(p.buf))
            if n <= 0:
                return 0
            r = copy_to_user_chunk(self, cpu, task, buf + o, bytes(p.buf[:n]), res, "pipe_read")
            if r is P.PREEMPTED:
                return r
            del p.buf[:n]
            return n
        got = P.page_loop(self, cpu, task, res, count, chunk, P.IRQ, "pipe_read")
        if got is P.PREEMPTED:
            return got
        self._pipe_unlock(cpu, p)
        self.sched.wake_queue(p.wwait, cpu.now)
        if got >= 0:
            cpu.charge(self.cost.syscall_body)
        return got

    def _pipe_write(self, cpu, task, p: Pipe, buf, count, res) -> Any:
        """pipe_write: a page at a time under pipe->mutex (copy_page_from_iter per page), with no
        cond_resched() inside; a full pipe takes what fits (emukern's pipes give a short write)."""
        if not count:
            return 0                        # a null write succeeds before any check
        if P.fresh(res):
            if p.readers == 0:
                self.force_sig(cpu, task, E.SIGPIPE, None, "write to a pipe with no readers")
                # (send_sig: a handler or SIG_IGN decides; the write itself fails with EPIPE)
                return -E.EPIPE
            if len(p.buf) >= 65536:
                self.sched.sleep_on(cpu, task, p.wwait, "pipe_write")
                return BLOCK
            if P.preempt_point(self, cpu, task, P.MIGHT_RESCHED, "pipe_write"):
                return P.preempted(self, task, P.MIGHT_RESCHED)
            if not self._pipe_lock(cpu, task, p, "pipe_lock"):
                return BLOCK
            cpu.charge(self.cost.syscall_body + self.cost.pipe_op)

        def chunk(o: int, n: int) -> Any:
            n = min(n, 65536 - len(p.buf))
            if n <= 0:
                return 0
            data = copy_from_user_chunk(self, cpu, task, buf + o, n, res, "pipe_write")
            if data is P.PREEMPTED:
                return data
            p.buf += data
            return len(data)
        got = P.page_loop(self, cpu, task, res, count, chunk, P.IRQ, "pipe_write")
        if got is P.PREEMPTED:
            return got
        self._pipe_unlock(cpu, p)
        if got > 0:
            self.sched.wake_queue(p.rwait, cpu.now)
        return got

    def sys_openat(self, cpu, task, dirfd, path_ptr, flags, mode, *a):
        return self.do_sys_openat(cpu, task, dirfd, path_ptr, flags, mode)   # kernel/syscalls_fs.py

    def sys_close(self, cpu, task, fd, *a):
        ret, wqs = task.files.close(s64(fd))
        for wq in wqs:
            self.sched.wake_queue(wq, cpu.now)
        return ret

    def sys_pipe2(self, cpu, task, fds_ptr, flags, *a):
        if flags & ~(O_NONBLOCK | O_CLOEXEC):
            return -E.EINVAL
        if task.mm.find(fds_ptr) is None:
            return -E.EFAULT
        p = Pipe(ino=self.get_next_ino(cpu))
        rfd = task.files.install(PipeEnd(p, write=False))
        wfd = task.files.install(PipeEnd(p, write=True))
        task.mm.write(fds_ptr, rfd.to_bytes(4, "little") + wfd.to_bytes(4, "little"))
        cpu.charge(self.cost.pipe_op)
        return 0

    # ---- memory --------------------------------------------------------------------------------
    def sys_brk(self, cpu, task, addr, *a):
        mm = task.mm
        if addr == 0 or addr < mm.brk_start:
            return mm.brk
        old_top, new_top = page_up(mm.brk), page_up(addr)
        if new_top > old_top:
            if mm.overlaps(old_top, new_top - old_top):
                return mm.brk
            try:
                mm.map(old_top, new_top - old_top, "rw-", "[heap]")
            except OutOfMemory:
                return mm.brk             # Linux: brk fails by returning the old break
        elif new_top < old_top:
            mm.unmap(new_top, old_top - new_top)
        mm.brk = addr
        cpu.charge(self.cost.mmap_op)
        return mm.brk

    def sys_mmap(self, cpu, task, addr, length, prot, flags, fd, off, *a):
        cpu.charge(self.cost.mmap_op)
        if length == 0 or length > 1 << 40:
            return -E.EINVAL if length == 0 else -E.ENOMEM
        data, name = b"", "[anon]"
        if not flags & (MAP_PRIVATE | MAP_SHARED):
            return -E.EINVAL
        if not flags & MAP_ANONYMOUS:
            got = self.mmap_file(task, fd, length, prot, flags, off)     # kernel/syscalls_fs.py
            if isinstance(got, int):
                return got
            data, name = got
        if name == "[anon]" and flags & MAP_SHARED and not flags & MAP_PRIVATE:
            # shmem_zero_setup: shared anonymous memory (also MAP_SHARED of /dev/zero) is one
            # buffer in every process forked from here; /proc/PID/maps names it so
            name = SHARED_ANON
        size = page_up(length)
        if flags & MAP_FIXED:
            if addr % PAGE:
                return -E.EINVAL
            if addr + size > self.arch.STACK_TOP:
                return -E.ENOMEM      # above TASK_SIZE: machine-owned pages live there
            task.mm.unmap(addr, size)
            start = addr
        elif flags & 0x100000:        # MAP_FIXED_NOREPLACE: exactly there, or EEXIST
            if addr % PAGE:
                return -E.EINVAL
            if addr + size > self.arch.STACK_TOP:
                return -E.ENOMEM
            if task.mm.overlaps(addr, size):
                return -E.EEXIST
            start = addr
        else:
            start = self.get_unmapped_area(task.mm, addr, size)
            if start < PAGE:
                return -E.ENOMEM
        task.mm.map(start, size, prot_str(prot), name, data)
        return start

    def get_unmapped_area(self, mm, addr: int, size: int) -> int:
        """mm/mmap.c get_unmapped_area: a hint (page-aligned up) is taken when the whole range is
        free, at or above mmap_min_addr (64 KiB) and below where the stack may grow; otherwise
        the layout's search (top-down, or bottom-up in the legacy layout: kernel/mm_layout.py)."""
        if addr:
            hint = page_up(addr)
            limit = getattr(mm, "stack_limit", self.arch.STACK_TOP)
            if 0x10000 <= hint and hint + size <= limit and not mm.overlaps(hint, size):
                return hint
        return mm.find_free(size)

    def sys_munmap(self, cpu, task, addr, length, *a):
        addr = self.arch.untagged_addr(addr)
        if addr % PAGE or length == 0:
            return -E.EINVAL
        task.mm.unmap(addr, length)
        cpu.charge(self.cost.mmap_op)
        return 0

    def sys_mprotect(self, cpu, task, addr, length, prot, *a):
        addr = self.arch.untagged_addr(addr)
        if addr % PAGE:
            return -E.EINVAL
        if prot & PROT_WRITE and self.shared_readonly_in(task, addr, length):   # kernel/syscalls_fs.py
            return -E.EACCES
        task.mm.protect(addr, length, prot_str(prot))
        cpu.charge(self.cost.mmap_op)
        return 0

    # ---- time ------------------------------------------------------------------------------------
    def sys_clock_gettime(self, cpu, task, clk, ts, *a):
        if clk > 11:
            return -E.EINVAL
        ns = int(self.clock.ns(cpu.now))
        task.mm.write(ts, (ns // 10**9).to_bytes(8, "little") + (ns % 10**9).to_bytes(8, "little"))
        cpu.charge(self.cost.syscall_body)
        return 0

    def _sleep(self, cpu, task, req_ptr, absolute: bool) -> Any:
        if task.woken_value == -E.ETIMEDOUT:        # the timer fired: sleep is over
            task.woken_value = None
            return 0
        req = task.mm.read(req_ptr, 16)
        sec, nsec = int.from_bytes(req[:8], "little", signed=True), int.from_bytes(req[8:], "little", signed=True)
        if sec < 0 or not 0 <= nsec < 10**9:
            return -E.EINVAL
        ns = sec * 10**9 + nsec
        target = self.clock.cycles_for_ns(ns) if absolute else cpu.now + self.clock.cycles_for_ns(ns)
        if target <= cpu.now:
            return 0
        task.waitqueues = []
        task.sigstate.sleep_target = target       # for the remaining time if a signal interrupts
        self.sched.add_timer(task, target)
        self.sched.block_current(cpu, task, "nanosleep")
        return BLOCK

    def sys_nanosleep(self, cpu, task, req, rem, *a):
        return self._sleep(cpu, task, req, absolute=False)

    def sys_clock_nanosleep(self, cpu, task, clk, flags, req, rem, *a):
        return self._sleep(cpu, task, req, absolute=bool(flags & 1))

    def sys_sched_yield(self, cpu, task, *a):
        pc = self.percpu[cpu.index]
        cpu.charge(self.cost.syscall_body)
        if pc.rq:
            pc.need_resched = True
        return 0

    def sys_getrandom(self, cpu, task, buf, count, flags, *a):
        # deterministic "randomness": same run, same bytes
        count = min(count & U64, 256)
        data = bytes((task.tid * 131 + i * 17 + 7) & 0xFF for i in range(count))
        task.mm.write(buf, data)
        return count

    def sys_uname(self, cpu, task, buf, *a):
        fields = ["Linux", "emukern", "6.12.0-emukern", "#1 SMP emukern", self.arch.uname_machine, "(none)"]
        task.mm.write(buf, b"".join(f.encode().ljust(65, b"\0") for f in fields))
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_prctl(self, cpu, task, option, a2, a3, a4, a5, *a):
        cpu.charge(self.cost.syscall_body)
        if option == 15:           # PR_SET_NAME
            task.comm = task.mm.read_cstr(a2, 16)[:15].decode("utf-8", "replace")
            return 0
        if option == 16:           # PR_GET_NAME
            task.mm.write(a2, task.comm.encode()[:15].ljust(16, b"\0"))
            return 0
        ret = self.arch.prctl(cpu, task, option, a2, a3, a4, a5)
        return -E.EINVAL if ret is None else ret

    # ---- scheduling ----------------------------------------------------------------------------
    def sys_sched_setaffinity(self, cpu, task, pid, size, mask_ptr, *a):
        target = task if pid == 0 else self.tasks.get(pid)
        if target is None or not target.alive:
            return -E.ESRCH
        if size == 0:
            return -E.EINVAL
        raw = int.from_bytes(task.mm.read(mask_ptr, min(size, 8)), "little")
        allowed = frozenset(i for i in range(len(self.percpu)) if raw >> i & 1)
        if not allowed:
            return -E.EINVAL
        target.affinity = allowed
        cpu.charge(self.cost.syscall_body * 5)
        if target is task and cpu.index not in allowed:
            # migrate: go back to the scheduler, which re-queues us on an allowed CPU
            self.percpu[cpu.index].need_resched = True
            task.state = TaskState.RUNNABLE
        return 0

    def sys_sched_getaffinity(self, cpu, task, pid, size, mask_ptr, *a):
        target = task if pid == 0 else self.tasks.get(pid)
        if target is None or not target.alive:
            return -E.ESRCH
        if size < 8 or size % 8:
            return -E.EINVAL
        n = len(self.percpu)
        allowed = target.affinity or frozenset(range(n))
        mask = sum(1 << i for i in allowed)
        task.mm.write(mask_ptr, mask.to_bytes(8, "little"))
        return 8

    # ---- futex ---------------------------------------------------------------------------------
    def sys_futex(self, cpu, task, uaddr, op, val, timeout, uaddr2, val3, *a):
        cmd = op & ~FUTEX_PRIVATE & 0x7F          # FUTEX_CLOCK_REALTIME (256) falls away too
        cpu.charge(self.cost.futex_op)
        if uaddr % 4:
            return -E.EINVAL
        key = (id(task.mm), uaddr)
        if cmd in (FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET) and val3 & 0xFFFFFFFF == 0:
            return -E.EINVAL
        absolute = cmd == FUTEX_WAIT_BITSET       # the bitset form takes an absolute timeout
        if cmd == FUTEX_WAIT_BITSET:
            cmd = FUTEX_WAIT                       # every waiter matches every bitset (no bitset
        elif cmd == FUTEX_WAKE_BITSET:             # user in emukern narrows its wake-ups)
            cmd = FUTEX_WAKE
        if cmd == FUTEX_WAIT:
            if task.woken_value is not None:            # woken by FUTEX_WAKE
                task.woken_value = None
                return 0
            cur = task.mm.read_u32(uaddr)
            if cur != (val & 0xFFFFFFFF):
                return -E.EAGAIN
            wq = self.futex_queues.setdefault(key, WaitQueue("futex"))
            wq.add(task)
            task.waitqueues = [wq]
            if timeout:
                ts = task.mm.read(timeout, 16)
                sec, nsec = int.from_bytes(ts[:8], "little", signed=True), int.from_bytes(ts[8:], "little", signed=True)
                if sec < 0 or not 0 <= nsec < 10**9:
                    wq.remove(task)
                    return -E.EINVAL          # timespec64_valid
                ns = sec * 10**9 + nsec       # (add_timer saturates: 2^40 s sleeps forever)
                wake = self.clock.cycles_for_ns(ns) + (0 if absolute else cpu.now)
                if wake <= cpu.now:
                    wq.remove(task)
                    return -E.ETIMEDOUT
                self.sched.add_timer(task, wake)
            self.sched.block_current(cpu, task, "futex")
            return BLOCK
        if cmd == FUTEX_WAKE:
            wq = self.futex_queues.get(key)
            if wq is None:
                return 0
            return self.sched.wake_queue(wq, cpu.now, nr=max(0, s64(val)), value=0)
        return -E.ENOSYS

    # ---- process lifecycle ---------------------------------------------------------------------
    def sys_clone(self, cpu, task, flags, newsp, ptid, tls, ctid, *a):
        if len([t for t in self.tasks.values() if t.alive]) >= self.config.max_tasks:
            return -E.EAGAIN
        if flags & CLONE_THREAD and not (flags & CLONE_VM and flags & CLONE_SIGHAND):
            return -E.EINVAL
        cpu.charge(self.cost.fork)
        tid = self.alloc_tid()
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
        ctx = self.arch.clone_context(ctx, newsp, tls if flags & CLONE_SETTLS else None)
        child.ctx = ctx
        child.thread = self.arch.new_thread_state(child, task, exec_=False)
        self.fs_fork(task, child, flags)                 # cwd and umask (kernel/syscalls_fs.py)
        copy_signals(child, task, flags)
        copy_rlimits(self, child, task, bool(flags & CLONE_THREAD))     # kernel/resource.py
        copy_process_attrs(child, task)          # creds, nice, policy (kernel/syscalls_misc.py)
        if flags & CLONE_CHILD_CLEARTID:
            child.clear_child_tid = ctid
        if flags & CLONE_PARENT_SETTID:
            task.mm.write_u32(ptid, tid)
        if flags & CLONE_CHILD_SETTID:
            mm.write_u32(ctid, tid)
        self.tasks[tid] = child
        if not flags & CLONE_THREAD:
            # a child belongs to the thread group (any thread may wait4 for it); threads are
            # not children, so wait4 never sees them
            self.tasks.get(task.tgid, task).children.append(child)
        child.cpu = cpu.index
        self.sched.enqueue(child, self.sched.select_cpu(child, new=True), cpu.now)
        return tid

    def sys_ptrace(self, cpu, task, request, pid, addr, data, *a):
        from emukern.kernel.ptrace import sys_ptrace      # kernel/ptrace.py
        cpu.charge(self.cost.syscall_body)
        return sys_ptrace(self, cpu, task, request, pid, addr, data)

    def sys_process_vm_readv(self, cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, *a):
        from emukern.kernel.process_vm import process_vm_rw     # mm/process_vm_access.c
        return process_vm_rw(self, cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, write=False)

    def sys_process_vm_writev(self, cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, *a):
        from emukern.kernel.process_vm import process_vm_rw
        return process_vm_rw(self, cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, write=True)

    def sys_execve(self, cpu, task, path_ptr, argv_ptr, envp_ptr, *a):
        from emukern.kernel.exec import do_execve        # kernel/exec.py (fs/exec.c)
        return do_execve(self, cpu, task, path_ptr, argv_ptr, envp_ptr)

    def sys_exit(self, cpu, task, code, *a):
        self.do_exit(cpu, task, (code & 0xFF) << 8)
        return 0

    def sys_exit_group(self, cpu, task, code, *a):
        self.do_group_exit(cpu, task, (code & 0xFF) << 8)
        return 0

    def do_group_exit(self, cpu, task, status: int, signaled: bool = False) -> None:
        """Kill every thread of the group; the leader carries the status."""
        code = status & 0xFF if signaled else status       # the signal, | 0x80 when a core was dumped
        for t in list(self.tasks.values()):
            if t.tgid == task.tgid and t.alive and t is not task:
                self._remove_from_queues(t)
                self.do_exit(cpu, t, code, current=False)
        self.do_exit(cpu, task, code)
        leader = self.tasks.get(task.tgid)
        if leader is not None:
            leader.exit_code = code
            leader.term_signal = status & 0x7F if signaled else 0

    def _remove_from_queues(self, t: Task) -> None:
        for wq in t.waitqueues:
            wq.remove(t)
        for pc in self.percpu:
            if t in pc.rq:
                pc.rq.remove(t)
            if pc.curr is t and pc.index != -1:
                pc.need_resched = True
                self.cpus[pc.index].stop()

    def do_exit(self, cpu, task, status: int, current: bool = True) -> None:
        if not task.alive:
            return
        task.exit_code = status
        if task.clear_child_tid and task.mm.users > 1:
            try:
                task.mm.write_u32(task.clear_child_tid, 0)
                wq = self.futex_queues.get((id(task.mm), task.clear_child_tid))
                if wq:
                    self.sched.wake_queue(wq, cpu.now, nr=1, value=0)
            except MemoryFault:
                pass
        self.mmput(task.mm)   # (exit_mm: the last user frees it)
        if task.files is not None:
            others = [t for t in self.tasks.values() if t is not task and t.alive and t.files is task.files]
            if not others:
                for wq in task.files.close_all():
                    self.sched.wake_queue(wq, cpu.now)
        self.arch.exit_thread(cpu, task)
        from emukern.kernel.ptrace import exit_ptrace
        exit_ptrace(self, cpu, task)          # a dying tracer detaches its tracees
        task.ptrace = None                    # ... and a dying tracee leaves its tracer's list
        # children of an exiting process are reparented to init (or reaped if init is gone)
        reap = self.exit_notify(cpu, task)    # (SIGCHLD to the parent)
        if task.is_thread_leader:
            task.state = TaskState.ZOMBIE if task.parent is not None and not reap else TaskState.DEAD
            if task.parent is not None:
                wq = self.child_wait.get(task.parent.tgid)
                if wq:
                    self.sched.wake_queue(wq, cpu.now)
        else:
            task.state = TaskState.DEAD
            self._to_release.append(task)
        if current and self.percpu[cpu.index].curr is task:
            self.sched.account(cpu, task)
            self.percpu[cpu.index].need_resched = True
            cpu.stop()
        self._remove_from_queues(task)

    def sys_wait4(self, cpu, task, pid, status_ptr, options, rusage, *a):
        pid = s64(pid)
        parent = self.tasks.get(task.tgid, task)
        kids = [c for c in parent.children if c.state != TaskState.DEAD and (pid <= 0 or c.tid == pid)]
        from emukern.kernel.ptrace import ptrace_tracees, wait_task_traced
        traced = [t for t in ptrace_tracees(self, task.tgid) if pid <= 0 or t.tid == pid]
        if not kids and not traced:
            return -E.ECHILD
        for c in kids:
            if c.state == TaskState.ZOMBIE and not any(t.alive for t in self.tasks.values() if t.tgid == c.tgid):
                err = self.put_child_rusage(task, c, rusage)      # (before release_task)
                self.release_zombie(task, c)
                if status_ptr:
                    task.mm.write_u32(status_ptr, c.exit_code)
                return err or c.tid
            jc = self.wait_task_stopped_continued(task, c, options, status_ptr)
            if jc:                      # WUNTRACED / WCONTINUED (kernel/signal/jobctl.py)
                return self.put_child_rusage(task, c, rusage) or jc
        # a tracee in a ptrace-stop is reported to its tracer even without WUNTRACED
        got = wait_task_traced(self, task, traced, status_ptr)
        if got:
            tracee = self.tasks.get(got)
            return (self.put_child_rusage(task, tracee, rusage) if tracee is not None else 0) or got
        if options & WNOHANG:
            return 0
        wq = self.child_wait.setdefault(parent.tgid, WaitQueue("wait4"))
        self.sched.sleep_on(cpu, task, wq, "wait4")
        return BLOCK
