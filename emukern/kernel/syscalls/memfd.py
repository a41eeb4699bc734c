"""memfd_create <-> mm/memfd.c.

``sys_memfd_create`` checks the flags and the name and installs an anonymous shmem-like file
(kernel/mm/vma.py's ``_memfd_file_class``): sparse, with each written page charged to the
machine's guest memory limit.  MFD_HUGETLB is EINVAL (no hugetlbfs), and seals are
not modelled.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.mm.vma import (
    MFD_ALLOW_SEALING,
    MFD_CLOEXEC,
    MFD_EXEC,
    MFD_HUGE_MASK,
    MFD_HUGETLB,
    MFD_NAME_MAX_LEN,
    MFD_NOEXEC_SEAL,
    _memfd_file_class,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_memfd_create(k: "Kernel", cpu, task, uname, flags, *a):
    """mm/memfd.c memfd_create: unknown flags, MFD_EXEC with MFD_NOEXEC_SEAL, or a name
    longer than 249 bytes: EINVAL; a bad name pointer: EFAULT.  MFD_HUGETLB is EINVAL here
    (emukern has no hugetlbfs).  Seals are not modelled (MFD_ALLOW_SEALING is accepted)."""
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
    f = _memfd_file_class()(bytes(name).decode("utf-8", "surrogateescape"), k.mem)
    return task.files.install(f, cloexec=bool(flags & MFD_CLOEXEC))
