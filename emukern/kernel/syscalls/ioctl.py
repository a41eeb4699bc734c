"""ioctl <-> fs/ioctl.c (and the terminal ioctls of drivers/tty/tty_io.c, tty_ioctl.c).

``sys_ioctl`` answers EBADF for a bad descriptor and ENOTTY for anything that is not a
terminal.  The one terminal a guest can have is its stdio under ``emukern run`` when the host's
own descriptor is one (``host_fd``): TCGETS gives the host terminal's modes and TIOCGWINSZ its
size, so isatty() is true and libc line-buffers as on Linux; the TCSETS family is accepted and
not passed on (a guest never changes the host's terminal).  Stdio captured into a buffer (the
Python API) is no terminal: libc buffers it fully, as it always did.
"""
from __future__ import annotations

import fcntl
import struct
import termios
from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.files import OutputFile, StdinFile
from emukern.kernel.fs.uapi import ENOTTY
from emukern.errors import MemoryFault
from emukern.kernel.syscalls.stat import host_stdio_kind

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

# asm-generic ioctls.h (riscv64 and arm64 alike)
TCGETS, TCSETS, TCSETSW, TCSETSF = 0x5401, 0x5402, 0x5403, 0x5404
TIOCGWINSZ = 0x5413
NCCS = 19                     # the kernel's struct termios (not glibc's 32-entry c_cc)


def _termios_bytes(fd: int) -> bytes:
    """The kernel's struct termios (c_iflag, c_oflag, c_cflag, c_lflag, c_line, c_cc[19]) of
    the host terminal ``fd``; the flag bits are the same on the host (x86-64) and both guests."""
    iflag, oflag, cflag, lflag, _ispeed, _ospeed, cc = termios.tcgetattr(fd)
    ccb = bytes(c[0] if isinstance(c, bytes) else c for c in cc[:NCCS])
    return struct.pack("<IIIIB", iflag, oflag, cflag, lflag, 0) + ccb.ljust(NCCS, b"\0")


def _winsize_bytes(fd: int) -> bytes:
    """struct winsize of the host terminal ``fd`` (24x80 if the host will not say)."""
    try:
        return fcntl.ioctl(fd, termios.TIOCGWINSZ, bytes(8))[:8]
    except OSError:
        return struct.pack("<HHHH", 24, 80, 0, 0)


def _tty_ioctl(k: "Kernel", task, fd: int, request: int, arg: int) -> int:
    """tty_ioctl for the host terminal behind a guest's stdio."""
    try:
        if request == TCGETS:
            task.mm.write(arg, _termios_bytes(fd))
            return 0
        if request == TIOCGWINSZ:
            task.mm.write(arg, _winsize_bytes(fd))
            return 0
    except MemoryFault:
        return -E.EFAULT
    except (OSError, termios.error):
        return -E.EIO
    if request in (TCSETS, TCSETSW, TCSETSF):
        return 0
    return -ENOTTY


def sys_ioctl(k: "Kernel", cpu, task, fd, request, arg, *a):
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if f is None:
        return -E.EBADF
    own = getattr(f, "unlocked_ioctl", None)     # a file kind with ioctls of its own (inotify's)
    if own is not None:
        return own(k, cpu, task, request & 0xFFFFFFFF, arg)
    if isinstance(f, (OutputFile, StdinFile)) and f.host_fd is not None and host_stdio_kind(f.host_fd) == "tty":
        cpu.charge(k.cost.syscall_body)
        return _tty_ioctl(k, task, f.host_fd, request & 0xFFFFFFFF, arg)
    return -ENOTTY         # not a terminal: libc buffers the stream fully
