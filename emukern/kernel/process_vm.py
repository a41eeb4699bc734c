"""process_vm_readv / process_vm_writev (mm/process_vm_access.c): copy between the caller's
iovecs and another process's memory without going through the target.

As Linux does it:

* ``flags`` must be 0 (EINVAL); either iovec count above UIO_MAXIOV (1024) is EINVAL; the local
  iovecs are read first (EFAULT), and when they hold no bytes the call returns 0 before anything
  else is looked at; then the remote iovecs (EFAULT), and a remote side without bytes is 0 too.
* The target: ESRCH for no such process (or one whose memory is gone, a zombie); the access
  check is ptrace's PTRACE_MODE_ATTACH_REALCREDS, which every emukern process passes (one user).
* The copy goes remote iovec by remote iovec, a page at a time (the pages
  pin_user_pages_remote pins): the remote page is read (readv) or written (writev, FOLL_WRITE
  without FOLL_FORCE: a read-only page is a fault) through the target's page tables, the local
  side through copy_to_user / copy_from_user.  The first fault on either side ends the call: the
  bytes copied before it are the result, or EFAULT when there are none.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.mm.secretmem import SECRETMEM_BUFS, vma_is_secretmem
from emukern.kernel.mm.uaccess import copy_from_user, copy_to_user

if TYPE_CHECKING:
    from emukern.kernel.task import Task

UIO_MAXIOV = 1024
PAGE = 4096
_MAX_RW_COUNT = (1 << 31) - PAGE       # INT_MAX & PAGE_MASK: import_iovec's total cap


def _iovecs(task: "Task", addr: int, count: int) -> list[tuple[int, int]] | int:
    """iovec_from_user: ``count`` (base, len) pairs, or -errno."""
    if count > UIO_MAXIOV:
        return -E.EINVAL
    if not count:
        return []
    try:
        raw = task.mm.read(addr, 16 * count)
    except MemoryFault:
        return -E.EFAULT
    out = []
    for i in range(count):
        base = int.from_bytes(raw[16 * i:16 * i + 8], "little")
        length = int.from_bytes(raw[16 * i + 8:16 * i + 16], "little")
        if length >> 63:
            return -E.EINVAL                 # a negative ssize_t length
        out.append((base, length))
    return out


def _capped(vec: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """import_iovec: the total is cut to MAX_RW_COUNT."""
    out, left = [], _MAX_RW_COUNT
    for base, length in vec:
        n = min(length, left)
        out.append((base, n))
        left -= n
    return out


def process_vm_rw(k: Any, cpu: Any, task: "Task", pid: int, lvec: int, liovcnt: int, rvec: int,
                  riovcnt: int, flags: int, write: bool) -> int:
    """The body of both syscalls (``write``: process_vm_writev)."""
    if flags:
        return -E.EINVAL
    local = _iovecs(task, lvec, liovcnt & 0xFFFF_FFFF_FFFF_FFFF)
    if isinstance(local, int):
        return local
    local = _capped(local)
    if not sum(n for _, n in local):
        return 0
    remote = _iovecs(task, rvec, riovcnt & 0xFFFF_FFFF_FFFF_FFFF)
    if isinstance(remote, int):
        return remote
    if not any(n for _, n in remote):
        return 0
    pid &= 0xFFFF_FFFF
    pid = pid - (1 << 32) if pid >> 31 else pid
    target = k.tasks.get(pid) if pid > 0 else None
    if target is None or not target.alive or target.mm is None:
        return -E.ESRCH
    cpu.charge(k.cost.syscall_body)
    rmm = target.mm
    chunks = [(b, n) for b, n in local if n]
    li, loff = 0, 0               # the local iovec in progress and the bytes of it done
    total = 0
    for rbase, rlen in remote:
        done = 0
        while done < rlen and li < len(chunks):
            raddr = rbase + done
            lbase, llen = chunks[li]
            # one remote page at a time, no more than the local iovec has room for
            n = min(rlen - done, PAGE - raddr % PAGE, llen - loff)
            if SECRETMEM_BUFS and vma_is_secretmem(rmm.find(raddr)):
                return total if total else -E.EFAULT     # get_user_pages cannot pin secretmem
            try:
                if write:
                    data = copy_from_user(k, cpu, task, lbase + loff, n)
                    rmm.write(raddr, data, "w")
                else:
                    data = rmm.read(raddr, n, "r")
                    copy_to_user(k, cpu, task, lbase + loff, data)
            except MemoryFault:
                return total if total else -E.EFAULT
            total += n
            done += n
            loff += n
            if loff == llen:
                li, loff = li + 1, 0
        if li == len(chunks):
            break
    return total
