"""Secret memory (mm/secretmem.c): the file memfd_secret returns and what its pages refuse.

A secretmem file's pages belong to the processes that map it and to nobody else: Linux takes
them out of the kernel's direct map, so no path that reaches user memory on another process's
behalf (get_user_pages: /proc/PID/mem, process_vm_readv/writev, ptrace's PEEK/POKE, vmsplice)
can pin them, and the file has no read or write operations at all.  emukern keeps the pages in
the same host memfd as any shared memfd mapping; what makes them secret is that every such path
asks :func:`vma_is_secretmem` first and answers as Linux's failed pin does (EIO or EFAULT, see
the callers).

The mapping rules are secretmem_mmap's: MAP_SHARED only (EINVAL otherwise), and the pages are
locked for as long as they are mapped (VM_LOCKED), so they count against RLIMIT_MEMLOCK like
mlock's (mlock_future_ok: EAGAIN past the limit unless the task holds CAP_IPC_LOCK).  The size
is set once, by ftruncate (or fallocate) of an empty file: a second size change is EINVAL
(secretmem_setattr); fallocate itself is EOPNOTSUPP, as the file has no fallocate operation,
and pread/pwrite are ESPIPE (a pseudo file opened without FMODE_PREAD/FMODE_PWRITE).
"""
from __future__ import annotations

import weakref
from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.cred import CAP_IPC_LOCK, capable
from emukern.kernel.mm.vma import VM_LOCKED, _lock_ranges, _memfd_file_class, locked_bytes
from emukern.kernel.resource import RLIMIT_MEMLOCK, rlimit

SECRETMEM_NAME = "/secretmem (deleted)"     # d_path of the unlinked secretmem dentry

# the host buffers that hold secret pages; a mapping split by mprotect shares its buffer, and a
# MAP_SHARED buffer is the same object in a forked child, so one entry covers them all
SECRETMEM_BUFS: "weakref.WeakSet[Any]" = weakref.WeakSet()


def vma_is_secretmem(m: Any) -> bool:
    """Whether the mapping ``m`` holds secret pages (no one but its own process reaches them)."""
    return m is not None and m.buf in SECRETMEM_BUFS


def range_has_secretmem(mm: Any, addr: int, length: int) -> bool:
    """Whether any mapped page of [addr, addr + length) is secret."""
    if not SECRETMEM_BUFS:
        return False                             # (nearly every run: no walk at all)
    end = addr + length
    for m in mm.mappings:
        if m.start < end and addr < m.end and m.buf in SECRETMEM_BUFS:
            return True
    return False


def _capable_ipc_lock(task: Any) -> bool:
    """mlock_future_ok's capable(CAP_IPC_LOCK): a task that dropped it (memfd_secret's selftest
    does, through libcap) is held to RLIMIT_MEMLOCK."""
    return capable(task, CAP_IPC_LOCK)


def secretmem_mmap_check(k: Any, task: Any, flags: int, length: int) -> int:
    """secretmem_mmap's refusals before anything is mapped: 0, -EINVAL or -EAGAIN."""
    if not flags & 0x01 or flags & 0x02:         # MAP_SHARED, not MAP_PRIVATE
        return -E.EINVAL
    if not _capable_ipc_lock(task):
        size = -(-length // 4096) * 4096
        if locked_bytes(task.mm) + size > rlimit(k, task, RLIMIT_MEMLOCK):
            return -E.EAGAIN                     # mlock_future_ok
    return 0


def secretmem_mapped(mm: Any, start: int, size: int) -> None:
    """The mapping at [start, start + size) now holds secret pages: mark its buffer and lock it
    (VM_LOCKED, so VmLck, smaps's Locked and later mlock_future_ok checks count it)."""
    m = mm.find(start)
    if m is not None:
        SECRETMEM_BUFS.add(m.buf)
    _lock_ranges(mm, start, start + size, True, VM_LOCKED)


_CLASS: Any = None


def secretmem_file_class() -> Any:
    """SecretmemFile, built on first use over the memfd file (which is itself built lazily)."""
    global _CLASS
    if _CLASS is not None:
        return _CLASS

    class SecretmemFile(_memfd_file_class()):   # type: ignore[misc]
        """A memfd whose bytes only its mappings reach: read/write EINVAL (no such file
        operations: vfs_read/vfs_write without FMODE_CAN_READ/WRITE), pread/pwrite ESPIPE (see
        ``no_pread``), one size change."""

        secretmem = True
        fallocate_unsupported = True
        no_pread = True          # a pseudo file without FMODE_PREAD/PWRITE: pread/pwrite ESPIPE

        def __init__(self, pool: Any) -> None:
            super().__init__("secretmem", pool, seals=0)
            self.node.path = SECRETMEM_NAME
            self.node.mode = 0o100600            # alloc_anon_inode's 0600, made S_IFREG

        def read(self, count: int) -> bytes | int:
            return -E.EINVAL

        def write(self, data: bytes) -> int:
            return -E.EINVAL

        def pread(self, count: int, off: int) -> bytes | int:
            return -E.EINVAL

        def pwrite(self, data: bytes, off: int) -> int:
            return -E.EINVAL

        def truncate(self, length: int) -> int:
            if self.length:
                return -E.EINVAL                 # secretmem_setattr: the size is set once
            return super().truncate(length)

        def mmap_bytes(self, count: int, off: int) -> bytes:
            return b""                           # (never used: a private mapping is refused first)

    _CLASS = SecretmemFile
    return _CLASS
