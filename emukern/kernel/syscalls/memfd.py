"""memfd_create <-> mm/memfd.c.

``sys_memfd_create`` checks the flags and the name and installs an anonymous shmem-like file
(kernel/mm/vma.py's ``_memfd_file_class``): sparse, with each written page charged to the
machine's guest memory limit.  MFD_HUGETLB is EINVAL (no hugetlbfs).  A MAP_SHARED mapping
moves the file's bytes into a sparse host memfd (``share``) so that every mapping and read/write
see the same pages.  Seals (memfd_add_seals, memfd_fcntl): F_ADD_SEALS/F_GET_SEALS, with
F_SEAL_SEAL set from the start unless MFD_ALLOW_SEALING; F_SEAL_WRITE is EBUSY while a shared
writable mapping exists, and the sealed operations are EPERM (mm/shmem.c's checks, in vma.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.mm.vma import (
    MFD_ALLOW_SEALING,
    MFD_CLOEXEC,
    MFD_EXEC,
    MFD_HUGE_MASK,
    MFD_HUGETLB,
    MFD_NAME_MAX_LEN,
    MFD_NOEXEC_SEAL,
    F_SEAL_EXEC,
    F_SEAL_FUTURE_WRITE,
    F_SEAL_GROW,
    F_SEAL_SEAL,
    F_SEAL_SHRINK,
    F_SEAL_WRITE,
    _memfd_file_class,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_memfd_create(k: "Kernel", cpu, task, uname, flags, *a):
    """mm/memfd.c memfd_create: unknown flags, MFD_EXEC with MFD_NOEXEC_SEAL, or a name
    longer than 249 bytes: EINVAL; a bad name pointer: EFAULT.  MFD_HUGETLB is EINVAL here
    (emukern has no hugetlbfs).  Without MFD_ALLOW_SEALING the file starts sealed against
    more seals; MFD_NOEXEC_SEAL drops the execute bits and seals them off (F_SEAL_EXEC)."""
    cpu.charge(k.cost.syscall_body)
    flags &= 0xFFFFFFFF
    if flags & ~(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | MFD_NOEXEC_SEAL | MFD_EXEC
                 | MFD_HUGE_MASK):
        return -E.EINVAL
    if flags & MFD_HUGE_MASK and not flags & MFD_HUGETLB:
        return -E.EINVAL
    if flags & MFD_EXEC and flags & MFD_NOEXEC_SEAL:
        return -E.EINVAL
    if flags & MFD_HUGETLB:
        return -E.EINVAL
    name = bytearray()
    try:
        while len(name) <= MFD_NAME_MAX_LEN:
            c = task.mm.read(uname + len(name), 1)
            if c == b"\0":
                break
            name += c
    except MemoryFault:             # the name is not readable
        return -E.EFAULT
    if len(name) > MFD_NAME_MAX_LEN:
        return -E.EINVAL
    # the file's pages are charged to the machine's guest memory, as shmem's are to the memcg
    seals = F_SEAL_SEAL
    if flags & MFD_NOEXEC_SEAL:
        seals = F_SEAL_EXEC
    elif flags & MFD_ALLOW_SEALING:
        seals = 0
    f = _memfd_file_class()(bytes(name).decode("utf-8", "surrogateescape"), k.mem, seals)
    if flags & MFD_NOEXEC_SEAL:
        f.node.mode &= ~0o111
    return task.files.install(f, cloexec=bool(flags & MFD_CLOEXEC))


# ---- seals (mm/memfd.c memfd_fcntl) -----------------------------------------------------------
F_ADD_SEALS, F_GET_SEALS = 1033, 1034        # (F_LINUX_SPECIFIC_BASE + 9, + 10)
F_ALL_SEALS = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE | F_SEAL_EXEC


def memfd_fcntl(k: "Kernel", cpu, task, f, cmd: int, arg: int) -> int:
    """F_ADD_SEALS / F_GET_SEALS: a file that cannot carry seals is EINVAL; adding needs a
    writable description (EPERM) and no F_SEAL_SEAL (EPERM); F_SEAL_WRITE is EBUSY while the
    file has a shared writable mapping (mapping_deny_writable)."""
    cpu.charge(k.cost.syscall_body)
    seals = getattr(f, "seals", None)
    if seals is None or getattr(f, "kind", "") != "memfd":
        return -E.EINVAL
    if cmd == F_GET_SEALS:
        return seals
    arg &= 0xFFFFFFFF
    if not f.writable:
        return -E.EPERM
    if arg & ~F_ALL_SEALS:
        return -E.EINVAL
    if arg & F_SEAL_EXEC and memfd_mode(k, f) & 0o111:
        # sealing an executable memfd against chmod also seals it against writes: it can never
        # be both writable and executable (W^X from the moment of the seal)
        arg |= F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE
    if seals & F_SEAL_SEAL:
        return -E.EPERM
    if arg & F_SEAL_WRITE and not seals & F_SEAL_WRITE and f.has_writable_mappings():
        return -E.EBUSY
    f.seals = seals | arg
    return 0


def memfd_mode(k: "Kernel", f) -> int:
    """The memfd's permission bits as fstat shows them (a chmod is kept in fs/meta.py's table)."""
    return fs_meta._meta_entry(k, f.node)["mode"] & 0o7777


def memfd_setattr_mode(k: "Kernel", f, mode: int) -> int:
    """shmem_setattr's seal check: with F_SEAL_EXEC no chmod may change an execute bit (EPERM)."""
    seals = getattr(f, "seals", None)
    if seals is None or getattr(f, "kind", "") != "memfd" or not seals & F_SEAL_EXEC:
        return 0
    return -E.EPERM if (memfd_mode(k, f) ^ mode) & 0o111 else 0
