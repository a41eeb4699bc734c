"""cachestat <-> mm/filemap.c (Linux 6.5, syscall 451 on every architecture).

``sys_cachestat`` reports how many pages of a byte range of a file sit in the page cache, in
Linux's order of checks: a closed descriptor (EBADF), an unreadable range struct (EFAULT), a
caller that may neither write the file nor owns it (EPERM: the page cache of a file one may only
read is a side channel), flags other than 0 (EINVAL).

emukern keeps no page cache: a root file's bytes are read from the host every time and a write
reaches the host at once.  So the model answers with what a kernel that never evicts would: every
page of a regular file below its size is cached and clean (nothing waits for writeback, so an
fsync has nothing left to do), a tmpfs file or memfd holds exactly the pages it has been given,
and anything without a mapping of its own (a pipe, /dev/null, a /proc file) has no pages.
Nothing is ever evicted.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.cred import CAP_FOWNER, capable, cred_of
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs.file import HostFile, VfsFile
from emukern.kernel.signal.defs import s32

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

PAGE_SHIFT = 12
ULONG_MAX = (1 << 64) - 1
S_IFMT, S_IFREG = 0o170000, 0o100000
# struct cachestat_range {u64 off, len}; struct cachestat {u64 nr_cache, nr_dirty,
# nr_writeback, nr_evicted, nr_recently_evicted}
_RANGE = struct.Struct("<QQ")
_STAT = struct.Struct("<QQQQQ")


def _cached_pages(f: Any) -> set[int] | range:
    """The page indexes of ``f``'s file that the page cache holds (see the module's note)."""
    kind = getattr(f, "kind", "")
    if kind == "memfd":
        return set(f.pages)                  # the pages written or faulted (holes hold none)
    shm = f.node.extra.get("shm_inode") if isinstance(f, VfsFile) else None
    if shm is not None:
        return shm.pages                     # a /dev/shm file: the pages it was charged for
    if isinstance(f, HostFile) and f.node.mode & S_IFMT == S_IFREG and f.fd >= 0:
        return range((f.size() + (1 << PAGE_SHIFT) - 1) >> PAGE_SHIFT)
    return range(0)


def _can_do_cachestat(k: "Kernel", task, f: Any) -> bool:
    """Opened for writing, or the caller owns the file or is root (file_owner_or_capable)."""
    if getattr(f, "writable", False):
        return True
    fsuid = cred_of(task).fsuid
    if capable(task, CAP_FOWNER):
        return True
    node = getattr(f, "node", None)
    meta = fs_meta.meta_of(k, node, f) if node is not None else None
    return meta is not None and meta.get("uid") == fsuid


def sys_cachestat(k: "Kernel", cpu, task, fd, range_ptr, cstat_ptr, flags, *a):
    cpu.charge(k.cost.syscall_body)
    f = task.files.get(s32(fd & 0xFFFFFFFF))
    if f is None:
        return -E.EBADF
    try:
        off, length = _RANGE.unpack(task.mm.read(range_ptr, _RANGE.size))
    except MemoryFault:
        return -E.EFAULT
    if not _can_do_cachestat(k, task, f):
        return -E.EPERM
    if flags & 0xFFFFFFFF:
        return -E.EINVAL
    first = off >> PAGE_SHIFT
    last = ULONG_MAX if length == 0 else ((off + length - 1) & ULONG_MAX) >> PAGE_SHIFT
    pages = _cached_pages(f)
    if isinstance(pages, range):
        n = max(0, min(last + 1, pages.stop) - max(first, pages.start))
    else:
        n = sum(1 for p in pages if first <= p <= last)
    try:
        task.mm.write(cstat_ptr, _STAT.pack(n, 0, 0, 0, 0))
    except MemoryFault:
        return -E.EFAULT
    return 0
