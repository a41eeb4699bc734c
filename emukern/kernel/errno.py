"""Linux errno values (asm-generic/errno-base.h, errno.h) used by emukern's syscalls."""
EPERM, ENOENT, ESRCH, EINTR, EIO = 1, 2, 3, 4, 5
EBADF, ECHILD, EAGAIN, ENOMEM, EACCES, EFAULT = 9, 10, 11, 12, 13, 14
EEXIST, ENODEV, ENOTDIR, EISDIR, EINVAL, EMFILE = 17, 19, 20, 21, 22, 24
ESPIPE, EPIPE, ERANGE, ENOSYS, ETIMEDOUT = 29, 32, 34, 38, 110
ENXIO, E2BIG, EBUSY, ENFILE = 6, 7, 16, 23

NAMES = {v: k for k, v in dict(globals()).items() if k.isupper() and isinstance(v, int)}

# signals
SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGKILL, SIGSEGV, SIGPIPE, SIGCHLD = 4, 5, 6, 7, 9, 11, 13, 17
SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
                7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
                13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD",
                18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU",
                23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF",
                28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
                **{n: "SIGRTMIN" if n == 32 else f"SIGRTMIN+{n - 32}" for n in range(32, 65)}}
