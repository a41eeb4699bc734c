"""/dev/shm: a tmpfs kept in the kernel <-> mm/shmem.c (shmem_get_inode, shmem_write_begin,
shmem_setattr, shmem_mmap) as a distribution mounts it at /dev/shm.

glibc's shm_open opens /dev/shm/NAME (O_CREAT|O_NOFOLLOW|O_CLOEXEC) and shm_unlink unlinks it,
so this directory is all POSIX shared memory needs.  It belongs to the machine, not to the
guest's root: it works with no root at all and with a read-only one, and nothing in it ever
reaches the host's file system.

Each file's bytes live in a host memfd that is sparse and larger than any file may grow
(``CAPACITY``), so host memory is only what was written or touched.  The file's own size is
kept beside it: reads stop there, and a shrinking ftruncate frees the pages past it (the memfd
is cut down, then set back to its capacity, which reads as zeros).  A MAP_SHARED mapping is a
host mapping of the same memfd (``shared_view``), so every process that maps the file, or that
fork()ed from one that did, sees the same pages as read/write do.

Memory accounting: a page the guest fills with write/pwrite is charged to the machine's memory
pool (--mem-limit) until it is truncated away or its file is gone (unlinked and closed);
past the limit the write fails with ENOSPC, as a full tmpfs does.  Pages touched only through
a mapping are not charged again: the mapping itself was charged by its size (mmap).  ftruncate
to grow a file charges nothing (tmpfs files are sparse).

Not modelled: rename, hard links and subdirectories in /dev/shm (EPERM), file seals, mappings
past the end of the file reading zeros instead of raising SIGBUS.
"""
from __future__ import annotations

import mmap
import os
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.fs.file import HostFile, MAX_IO
from emukern.kernel.fs.vfs import S_IFDIR, S_IFREG, Node
from emukern.machine.memory import OutOfMemory

if TYPE_CHECKING:
    from emukern.machine.memory import MemoryPool

SHM_MOUNT = "/dev/shm"
TMPFS_DEV = 0x17                  # st_dev of this tmpfs mount
CAPACITY = 1 << 40                # the largest file (memfd's limit too): EFBIG past it
PAGE = 4096
EFBIG, ENOSPC = 27, 28


class ShmInode:
    """A tmpfs inode: the memfd holding its bytes, its size, the pages charged for it."""

    def __init__(self, name: str, mode: int, ino: int, pool: "MemoryPool | None") -> None:
        self.name = name
        self.mode = mode
        self.ino = ino
        self.pool = pool
        self.fd = os.memfd_create("emukern-shm", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, CAPACITY)
        self.size = 0
        self.pages: set[int] = set()       # page indices charged to the pool
        self.opens = 0
        self.linked = True

    def node(self) -> Node:
        n = Node(f"{SHM_MOUNT}/{self.name}", S_IFREG | self.mode, dev=TMPFS_DEV, size=self.size,
                 extra={"shm_inode": self})
        n.opener = lambda flags, n=n: ShmFile(n, flags, self)
        return n

    def charge(self, off: int, n: int) -> bool:
        new = [p for p in range(off // PAGE, (off + n + PAGE - 1) // PAGE) if p not in self.pages]
        if new and self.pool is not None:
            try:
                self.pool.charge(len(new) * PAGE, f"{SHM_MOUNT}/{self.name}")
            except OutOfMemory:
                return False
        self.pages.update(new)
        return True

    def truncate(self, length: int) -> None:
        if length < self.size:
            os.ftruncate(self.fd, length)          # frees the pages past it ...
            os.ftruncate(self.fd, CAPACITY)        # ... which now read as zeros
            keep = (length + PAGE - 1) // PAGE
            gone = [p for p in self.pages if p >= keep]
            self.pages.difference_update(gone)
            if gone and self.pool is not None:
                self.pool.uncharge(len(gone) * PAGE)
        self.size = length

    def maybe_free(self) -> None:
        """The last open closed on an unlinked file: its pages go (mappings keep theirs)."""
        if not self.linked and self.opens == 0 and self.fd >= 0:
            if self.pages and self.pool is not None:
                self.pool.uncharge(len(self.pages) * PAGE)
            self.pages.clear()
            os.close(self.fd)
            self.fd = -1

    def shared_view(self, off: int, length: int) -> mmap.mmap:
        """A host MAP_SHARED mapping of the file's pages [off, off+length)."""
        return mmap.mmap(self.fd, length, flags=mmap.MAP_SHARED,
                         prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=off)


class ShmFile(HostFile):
    """An open /dev/shm file: the regular-file paths of HostFile over the inode's memfd (its
    own duplicate descriptor), with the size the inode keeps."""

    kind = "shm"

    def __init__(self, node: Node, flags: int, inode: ShmInode) -> None:
        super().__init__(node, flags, os.dup(inode.fd))
        self.inode = inode
        inode.opens += 1
        if flags & 0o1000 and self.writable:       # O_TRUNC
            inode.truncate(0)

    def size(self) -> int:
        return self.inode.size

    def pread(self, count: int, off: int) -> bytes | int:
        n = max(0, min(count, MAX_IO, self.inode.size - off))
        return super().pread(n, off) if n else b""

    def pwrite(self, data: bytes, off: int) -> int:
        if off + len(data) > CAPACITY:
            return -EFBIG
        if not self.inode.charge(off, len(data)):
            return -ENOSPC
        n = super().pwrite(data, off)
        if n > 0 and off + n > self.inode.size:
            self.inode.size = off + n
        return n

    def truncate(self, length: int) -> int:
        if length > CAPACITY:
            return -EFBIG
        self.inode.truncate(length)
        return 0

    def on_close(self) -> list[Any]:
        wqs = super().on_close()
        self.inode.opens -= 1
        self.inode.maybe_free()
        return wqs


class ShmFs:
    """The /dev/shm directory: name -> inode."""

    def __init__(self, pool: "MemoryPool | None") -> None:
        self.pool = pool
        self.files: dict[str, ShmInode] = {}
        self.last_ino = 1                      # this mount's own inode numbers (the root's is 1)

    def root(self) -> Node:
        return Node(SHM_MOUNT, S_IFDIR | 0o1777, dev=TMPFS_DEV, size=40 + 20 * len(self.files),
                    children=lambda: {name: i.node() for name, i in self.files.items()},
                    extra={"shmfs": self})

    def create(self, name: str, mode: int) -> Node | int:
        """shmem_mknod of a regular file (O_CREAT); the name is new (the walk said ENOENT)."""
        if name in self.files:
            return -E.EEXIST
        self.last_ino += 1
        inode = self.files[name] = ShmInode(name, mode & 0o7777, self.last_ino, self.pool)
        node = inode.node()
        node.created = True
        return node

    def unlink(self, name: str) -> int:
        inode = self.files.pop(name, None)
        if inode is None:
            return -E.ENOENT
        inode.linked = False
        inode.maybe_free()
        return 0
