"""Sockets for the guest: AF_UNIX socketpair/socket and the data path (net/unix/af_unix.c) in
unix.py.  Their syscall numbers (asm-generic unistd.h, the same on arm64 and riscv64)."""
from __future__ import annotations

