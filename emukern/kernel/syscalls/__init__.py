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
from emukern.kernel.epoll import EventFdFile
from emukern.kernel.fs import FS_SYSCALL_NAMES
from emukern.kernel.net import NET_SYSCALL_NAMES

from emukern.kernel.fs.meta import FSMETA_SYSCALL_NAMES
from emukern.kernel.select import SELECT_SYSCALL_NAMES
from emukern.kernel.signalfd import SIGNALFD_SYSCALL_NAMES
from emukern.kernel.syscalls.timerfd import TIMERFD_SYSCALL_NAMES
from emukern.kernel.mm_syscalls import MM_SYSCALL_NAMES
from emukern.kernel.signal import copy_signals, flush_signal_handlers

from emukern.kernel.syscalls_misc import MISC_SYSCALL_NAMES, copy_process_attrs
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
    117: "ptrace",                   # emukern/kernel/signal/ptrace.py
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



