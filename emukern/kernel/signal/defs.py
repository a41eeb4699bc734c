"""The user-ABI numbers of signals (asm-generic/signal.h, siginfo.h, include/linux/errno.h's
restart codes) and Linux's default actions (include/linux/signal.h)."""
from __future__ import annotations

from typing import Any

from emukern.kernel import errno as E

NSIG = 64
SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE = 1, 2, 3, 4, 5, 6, 7, 8
SIGKILL, SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM = 9, 10, 11, 12, 13, 14, 15
SIGSTKFLT, SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU = 16, 17, 18, 19, 20, 21, 22
SIGURG, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGWINCH, SIGIO, SIGPWR, SIGSYS = range(23, 32)
SIGRTMIN = 32

SIG_DFL, SIG_IGN = 0, 1
# asm-generic/signal.h (riscv64 and arm64 share it; only arm64 defines SA_RESTORER)
SA_NOCLDSTOP, SA_NOCLDWAIT, SA_SIGINFO = 0x1, 0x2, 0x4
SA_UNSUPPORTED, SA_EXPOSE_TAGBITS = 0x400, 0x800
SA_RESTORER = 0x04000000
SA_ONSTACK, SA_RESTART, SA_NODEFER, SA_RESETHAND = 0x08000000, 0x10000000, 0x40000000, 0x80000000
SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK = 0, 1, 2
SS_ONSTACK, SS_DISABLE, SS_AUTODISARM = 1, 2, 1 << 31
# si_code values (asm-generic/siginfo.h)
SI_USER, SI_KERNEL, SI_QUEUE, SI_TIMER, SI_TKILL = 0, 0x80, -1, -2, -6
ILL_ILLOPC, SEGV_MAPERR, SEGV_ACCERR, BUS_ADRALN, BUS_ADRERR, TRAP_BRKPT = 1, 1, 2, 1, 2, 1
CLD_EXITED, CLD_KILLED, CLD_DUMPED, CLD_TRAPPED, CLD_STOPPED, CLD_CONTINUED = 1, 2, 3, 4, 5, 6
# wait options (uapi linux/wait.h) and RLIMIT_CORE (asm-generic/resource.h)
WNOHANG, WUNTRACED, WSTOPPED, WEXITED, WCONTINUED, WNOWAIT = 1, 2, 2, 4, 8, 0x01000000
RLIMIT_CORE = 4
POLLIN, POLLPRI, POLLOUT, POLLERR, POLLHUP, POLLNVAL = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20
POLLRDNORM, POLLWRNORM = 0x40, 0x100
RLIM_INFINITY = (1 << 64) - 1
ELF_EXEC_PAGESIZE = 4096            # binfmt_elf's min_coredump: a smaller RLIMIT_CORE writes no core
# the syscall restart codes (include/linux/errno.h): never seen by user space
ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK = 512, 513, 514, 516
ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF = 0, 1, 2

SIG_WAKE: Any = object()           # task.woken_value of a task a signal woke (signal_wake_up)


def _mask(*sigs: int) -> int:
    m = 0
    for s in sigs:
        m |= 1 << (s - 1)
    return m


def s32(v: int) -> int:
    """An ``int`` syscall argument: the low 32 bits, sign-extended (arm64 passes w-registers)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def sigmask(sig: int) -> int:
    return 1 << (sig - 1)


# Linux's default actions (include/linux/signal.h: SIG_KERNEL_*_MASK); everything else, real-time
# signals included, terminates.
SIG_KERNEL_ONLY = _mask(SIGKILL, SIGSTOP)
SIG_KERNEL_COREDUMP = _mask(SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU,
                            SIGXFSZ, SIGSYS)
SIG_KERNEL_IGNORE = _mask(SIGCONT, SIGCHLD, SIGWINCH, SIGURG)
SIG_KERNEL_STOP = _mask(SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU)
# synchronous signals are dequeued first (kernel/signal.c: SYNCHRONOUS_MASK)
SYNCHRONOUS_MASK = _mask(SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS)
ALL_SIGS = (1 << NSIG) - 1

SIGNAL_NAMES = E.SIGNAL_NAMES
SIGNAL_NUMBERS = {v: k for k, v in SIGNAL_NAMES.items()}


def signal_name(sig: int) -> str:
    return SIGNAL_NAMES.get(sig, str(sig))


def parse_signal(name: str) -> int:
    """'SIGUSR1', 'usr1' or '10' -> 10; ValueError otherwise (the debugger's ``break signal``)."""
    n = name.strip().upper()
    if n.isdigit() and 1 <= int(n) <= NSIG:
        return int(n)
    if not n.startswith("SIG"):
        n = "SIG" + n
    if n in SIGNAL_NUMBERS:
        return SIGNAL_NUMBERS[n]
    raise ValueError(f"unknown signal {name!r}")


def default_action(sig: int) -> str:
    m = sigmask(sig)
    if m & SIG_KERNEL_IGNORE:
        return "ignore"
    if m & SIG_KERNEL_STOP:
        return "stop"
    if m & SIG_KERNEL_COREDUMP:
        return "core"
    return "terminate"
