"""Sockets for the guest: AF_UNIX socketpair/socket and the data path (net/unix/af_unix.c) in
unix.py.  Their syscall numbers (asm-generic unistd.h, the same on arm64 and riscv64)."""
from __future__ import annotations

NET_SYSCALL_NAMES = {
    198: "socket", 204: "getsockname", 205: "getpeername", 199: "socketpair", 206: "sendto", 207: "recvfrom", 208: "setsockopt",
    209: "getsockopt", 210: "shutdown", 211: "sendmsg", 212: "recvmsg",
}
