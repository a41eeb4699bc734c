"""brk / mmap / munmap / remap_file_pages <-> mm/mmap.c (brk is mm/mmap.c's too).

``sys_mmap`` maps anonymous memory or a file (``mmap_file``): MAP_PRIVATE copies the file's
pages.  A MAP_SHARED mapping of a file is a host mapping of the host file holding its pages,
shared with read/write, with every other mapping and across fork: the root file's own host
descriptor (kernel/fs/file.py's ``new_file_view``), or the host memfd of a /dev/shm file or a
memfd.  ``sys_brk`` grows or shrinks the [heap] mapping and, as Linux, returns the
old break when it cannot.  The address search is kernel/mm/mmap.py's ``get_unmapped_area``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel.mm.mm_struct import DROPPABLE_BUFS, map_deny_write_exec
from emukern.kernel import errno as E
from emukern.kernel.fs.file import HostFile
from emukern.kernel.fs.shmfs import CAPACITY as SHM_CAPACITY, ShmFile
from emukern.kernel.mm import mmap as mm_mmap
from emukern.kernel.mm import vma as mm_vma
from emukern.kernel.mm import seal as mm_seal
from emukern.kernel.mm import secretmem as mm_secretmem
from emukern.kernel.mm.vma import F_SEAL_FUTURE_WRITE, F_SEAL_WRITE
from emukern.kernel.syscalls import MAP_ANONYMOUS, MAP_FIXED, MAP_PRIVATE, MAP_SHARED, prot_str
from emukern.kernel.syscalls import read_write as syscalls_read_write
from emukern.kernel.fs.uapi import _s32
from emukern.machine.memory import PAGE, SHARED_ANON, SHARED_PREFIX, Mapping, OutOfMemory, page_up
from emukern.kernel.fs.file import DevZero

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# the mapping type field of mmap's flags, and Linux 6.11's MAP_DROPPABLE type; the flags a
# droppable mapping may not have
MAP_TYPE, MAP_DROPPABLE = 0x0F, 0x08
MAP_GROWSDOWN, MAP_LOCKED, MAP_HUGETLB = 0x100, 0x2000, 0x40000


# ---- memory --------------------------------------------------------------------------------
def sys_brk(k: "Kernel", cpu, task, addr, *a):
    mm = task.mm
    if addr == 0 or addr < mm.brk_start:
        return mm.brk
    old_top, new_top = page_up(mm.brk), page_up(addr)
    if new_top > old_top:
        if mm.overlaps(old_top, new_top - old_top):
            return mm.brk
        try:
            mm.map(old_top, new_top - old_top, "rw-", "[heap]")
        except OutOfMemory:
            return mm.brk             # Linux: brk fails by returning the old break
    elif new_top < old_top:
        mm.unmap(new_top, old_top - new_top)
    mm.brk = addr
    cpu.charge(k.cost.mmap_op)
    return mm.brk


def sys_mmap(k: "Kernel", cpu, task, addr, length, prot, flags, fd, off, *a):
    cpu.charge(k.cost.mmap_op)
    if length == 0 or length > 1 << 40:
        return -E.EINVAL if length == 0 else -E.ENOMEM
    data, name = b"", "[anon]"
    droppable = flags & MAP_TYPE == MAP_DROPPABLE
    if droppable:
        # anonymous memory the kernel may empty under pressure: never file-backed, locked,
        # huge or a stack; otherwise private memory (pages dropped, not copied by fork)
        if not flags & MAP_ANONYMOUS or flags & (MAP_LOCKED | MAP_HUGETLB | MAP_GROWSDOWN):
            return -E.EINVAL
        flags = flags & ~MAP_TYPE | MAP_PRIVATE
    if not flags & (MAP_PRIVATE | MAP_SHARED):
        return -E.EINVAL
    shm = None
    secret = False
    if not flags & MAP_ANONYMOUS:
        secret = getattr(task.files.get(_s32(fd)), "secretmem", False)
        if secret:
            err = mm_secretmem.secretmem_mmap_check(k, task, flags, length)
            if err:
                return err
    if not flags & MAP_ANONYMOUS and flags & MAP_SHARED and not flags & MAP_PRIVATE:
        shm = task.files.get(_s32(fd))
        if isinstance(shm, ShmFile):        # shmem_mmap: the file's own pages (fs/shmfs.py)
            if off % PAGE or off >> 63 or off + page_up(length) > SHM_CAPACITY:
                return -E.EINVAL
            if not shm.readable or (prot & 2 and not shm.writable):
                return -E.EACCES
            name = SHARED_PREFIX + shm.node.path
        elif shm is not None and getattr(shm, "kind", "") == "memfd":
            # shmem_mmap of a memfd: its pages move into a host memfd, mapped shared here
            if off % PAGE or off >> 63 or off + page_up(length) > SHM_CAPACITY:
                return -E.EINVAL
            if not shm.readable or (prot & 2 and not shm.writable):
                return -E.EACCES
            if prot & 2 and shm.seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE):
                return -E.EPERM             # memfd_check_seals_mmap
            err = shm.share()
            if err:
                return err
            name = SHARED_PREFIX + shm.node.path
        elif isinstance(shm, HostFile) and shm.fd >= 0 and not hasattr(shm, "mmap_bytes"):
            # a regular file of the root: a host MAP_SHARED mapping of the file itself, so
            # stores reach the file and every other mapping of it (fs/file.py)
            if off % PAGE or off >> 63:
                return -E.EINVAL
            if not shm.readable or (prot & 2 and not shm.writable):
                return -E.EACCES                     # do_mmap: no FMODE_WRITE, no shared writes
            name = SHARED_PREFIX + shm.node.path
        else:
            shm = None
    if not flags & MAP_ANONYMOUS and shm is None:
        got = mmap_file(k, task, fd, length, prot, flags, off)     # kernel/fs/namei.py
        if isinstance(got, int):
            return got
        data, name = got
    if name == "[anon]" and flags & MAP_SHARED and not flags & MAP_PRIVATE:
        # shmem_zero_setup: shared anonymous memory (also MAP_SHARED of /dev/zero) is one
        # buffer in every process forked from here; /proc/PID/maps names it so
        name = SHARED_ANON
    if map_deny_write_exec(task.mm, None, prot):
        return -E.EACCES          # mmap_region: writable and executable under MDWE
    size = page_up(length)
    if flags & MAP_FIXED:
        if addr % PAGE:
            return -E.EINVAL
        if addr + size > k.arch.STACK_TOP:
            return -E.ENOMEM      # above TASK_SIZE: machine-owned pages live there
        if mm_seal.range_sealed(task.mm, addr, addr + size):
            return -E.EPERM       # mmap_region's unmap of what lies there meets a sealed vma
        task.mm.unmap(addr, size)
        start = addr
    elif flags & 0x100000:        # MAP_FIXED_NOREPLACE: exactly there, or EEXIST
        if addr % PAGE:
            return -E.EINVAL
        if addr + size > k.arch.STACK_TOP:
            return -E.ENOMEM
        if task.mm.overlaps(addr, size):
            return -E.EEXIST
        start = addr
    else:
        start = mm_mmap.get_unmapped_area(k, task.mm, addr, size)
        if start < PAGE:
            return -E.ENOMEM
    if shm is not None and not isinstance(shm, ShmFile) and getattr(shm, "kind", "") != "memfd":
        # the root file's own pages: a host mapping of the file, counted in the address space
        # but not charged to the machine's memory (the host's page cache holds them)
        try:
            view = shm.shared_view(off, size)
        except OSError as e:                              # the host refused the mapping
            return -E.ENODEV if e.errno == E.ENODEV else -E.ENOMEM
        mm_vma._charge(task.mm, size, name, view)
        mm_vma._insert(task.mm, Mapping(start, size, prot_str(prot), name, view))
        return start
    m = task.mm.map(start, size, prot_str(prot), name, data)
    if droppable:
        DROPPABLE_BUFS.add(m.buf)
    if shm is not None:
        try:
            if isinstance(shm, ShmFile):
                m.buf = shm.inode.shared_view(off, size)  # every mapping of it: the same pages
            else:
                # a shared mapping of a writable description may become writable (mprotect):
                # it counts as a writer (is_shared_maywrite) unless sealed, which clears
                # VM_MAYWRITE
                m.buf = shm.shared_view(off, size, shm.writable and not shm.seals & (
                    F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
        except OSError:                                   # the host refused the mapping
            task.mm.unmap(start, size)
            return -E.ENOMEM
    if secret:
        mm_secretmem.secretmem_mapped(task.mm, start, size)
    return start


# the top of the user range munmap accepts where the arch has no access_ok limit of its own:
# 48-bit virtual addresses, what Debian's riscv64 kernel hands out by default (arm64's access_ok
# says the same with its TASK_SIZE_MAX); emukern maps nothing above 2^38 either way
USER_VA_LIMIT = 1 << 48


def sys_munmap(k: "Kernel", cpu, task, addr, length, *a):
    addr = k.arch.untagged_addr(addr)
    if addr % PAGE or length == 0:
        return -E.EINVAL
    # do_vmi_munmap: a range that runs past TASK_SIZE (or whose page-rounded length wraps) is
    # EINVAL, not "unmap everything" -- stress-ng's mmap stressor checks munmap(0, ~0) fails
    if not k.arch.access_ok(task, addr, length) or addr > USER_VA_LIMIT or length > USER_VA_LIMIT - addr:
        return -E.EINVAL
    if mm_seal.range_sealed(task.mm, addr, addr + page_up(length)):
        return -E.EPERM           # a sealed vma in the range: nothing is unmapped
    task.mm.unmap(addr, length)
    cpu.charge(k.cost.mmap_op)
    return 0


# ---- file-backed mmap (mm/mmap.c do_mmap with a file) -------------------------------------------
DEV_ZERO_PRIVATE = "file:/dev/zero"      # a private mapping of /dev/zero: anonymous pages, a file name
def mmap_file(k: "Kernel", task, fd, length, prot, flags, off) -> tuple[bytes, str] | int:
    """The bytes and name of a private file mapping, or -errno.  MAP_PRIVATE copies the file's
    pages (copy-on-write has the same result: the guest's stores never reach the file).  Bytes
    past the end of the file read as zero.  A MAP_SHARED mapping reaches here only for files
    with no host file of their own to map (synthetic ones): read-only copies, writable ENODEV."""
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    if off % 4096 or off >> 63:
        return -E.EINVAL
    if isinstance(f, DevZero):
        # mmap of /dev/zero is anonymous memory; a private one still names /dev/zero as its
        # file (mmap_zero leaves vm_file set: /proc/PID/maps and map_files/ show it), a shared
        # one becomes shmem (sys_mmap names it)
        return b"", ("[anon]" if flags & 1 and not flags & 2 else DEV_ZERO_PRIVATE)
    if not isinstance(f, HostFile):
        return -E.ENODEV                             # pipes, directories, /proc files
    if not f.readable:
        return -E.EACCES                             # every mapping needs read access
    shared = bool(flags & 1) and not flags & 2
    if shared and prot & 2:
        return -E.EACCES if not f.writable else -E.ENODEV
    size = f.size()
    want = max(0, min(length, size - off))
    data = b""
    mmap_bytes = getattr(f, "mmap_bytes", None)
    if mmap_bytes is not None:
        # a sparse shmem file (memfd): no bigger than the mapping's own charge can be, and no
        # host bytes for its holes
        pool = k.mem
        if pool.limit is not None and page_up(length) > pool.limit - pool.used:
            return -E.ENOMEM
        return mmap_bytes(want, off), ("shared:" if shared else "file:") + f.node.path
    if want:
        got = f.pread(want, off) if want <= (1 << 24) else syscalls_read_write._pread_all(f, want, off)
        if isinstance(got, int):
            return got
        data = got
    return data, ("shared:" if shared else "file:") + f.node.path


def sys_remap_file_pages(k: "Kernel", cpu, task, start, size, prot, pgoff, flags, *a):
    """mm/mmap.c remap_file_pages: Linux 6.x emulates it with mmap of a shared file mapping;
    prot must be 0, and the range must lie in one VM_SHARED vma, else EINVAL.  Not modelled:
    emukern does not re-point part of a shared file mapping at another file offset, so a valid
    call is answered as Linux does for a non-shared one: EINVAL."""
    cpu.charge(k.cost.mmap_op)
    return -E.EINVAL
