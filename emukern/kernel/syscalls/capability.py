"""kernel/capability.c's capget and capset, with the capability rules of security/commoncap.c
that these calls and prctl apply (``cap_capset``, ``cap_task_prctl``).

The sets live in the task's credentials (emukern/kernel/cred.py: ``Cred.cap_*``): capget reads
them, capset replaces effective/permitted/inheritable under Linux's rules, and prctl reads and
changes the bounding set, the ambient set and the securebits.  The set*id calls and execve adjust
them too (kernel/syscalls/sys.py, kernel/exec.py).
"""
from __future__ import annotations

import struct
from dataclasses import replace
from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.cred import (
    CAP_FULL,
    CAP_LAST_CAP,
    CAP_SETPCAP,
    SECBIT_KEEP_CAPS,
    SECURE_ALL_BITS,
    SECURE_ALL_LOCKS,
    SECURE_KEEP_CAPS,
    SECURE_NO_CAP_AMBIENT_RAISE,
    capable,
    cred_of,
    issecure,
)
from emukern.kernel.mm.uaccess import copy_from_user, copy_to_user

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

__all__ = ["CAP_LAST_CAP", "CAP_FULL", "sys_capget", "sys_capset", "cap_task_prctl"]

# the header versions (include/uapi/linux/capability.h): v1 carries one 32-bit word per set,
# v2 (deprecated) and v3 two; the kernel answers an unknown version with v3 in the header
CAP_VERSION_1, CAP_VERSION_2, CAP_VERSION_3 = 0x19980330, 0x20071026, 0x20080522
WORDS = {CAP_VERSION_1: 1, CAP_VERSION_2: 2, CAP_VERSION_3: 2}

# prctl options (include/uapi/linux/prctl.h) that security/commoncap.c answers
PR_CAPBSET_READ, PR_CAPBSET_DROP = 23, 24
PR_GET_KEEPCAPS, PR_SET_KEEPCAPS = 7, 8
PR_GET_SECUREBITS, PR_SET_SECUREBITS = 27, 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_IS_SET, PR_CAP_AMBIENT_RAISE, PR_CAP_AMBIENT_LOWER, PR_CAP_AMBIENT_CLEAR_ALL = 1, 2, 3, 4
CAP_PRCTL_OPTIONS = frozenset((PR_CAPBSET_READ, PR_CAPBSET_DROP, PR_GET_KEEPCAPS, PR_SET_KEEPCAPS,
                               PR_GET_SECUREBITS, PR_SET_SECUREBITS, PR_CAP_AMBIENT))


def _cap_validate_magic(k: "Kernel", cpu, task, hdrp: int) -> int:
    """The number of 32-bit words per set the header's version asks for, or -errno; an unknown
    version gets v3 written back so the caller learns what this kernel speaks (-EINVAL)."""
    version = struct.unpack("<I", copy_from_user(k, cpu, task, hdrp, 4))[0]
    words = WORDS.get(version)
    if words is None:
        copy_to_user(k, cpu, task, hdrp, struct.pack("<I", CAP_VERSION_3))
        return -E.EINVAL
    return words


def sys_capget(k: "Kernel", cpu, task, hdrp, datap, *a):
    cpu.charge(k.cost.syscall_body)
    try:
        version, pid = struct.unpack("<Ii", copy_from_user(k, cpu, task, hdrp, 8))
        words = WORDS.get(version)
        if words is None:
            # tell the caller which version this kernel speaks; a probe (no data pointer) succeeds
            copy_to_user(k, cpu, task, hdrp, struct.pack("<I", CAP_VERSION_3))
            return 0 if datap == 0 else -E.EINVAL
        if datap == 0:
            return 0
        if pid < 0:
            return -E.EINVAL
        # any live thread's id names it (find_task_by_vpid), not only a thread group's leader
        target = task if pid == 0 else k.tasks.get(pid)
        if target is None or not target.alive:
            return -E.ESRCH
        c = cred_of(target)
        # a v1 caller gets the low word of each set: the newer capabilities are silently left out
        out = b"".join(struct.pack("<III", (c.cap_effective >> (32 * w)) & 0xFFFFFFFF,
                                   (c.cap_permitted >> (32 * w)) & 0xFFFFFFFF,
                                   (c.cap_inheritable >> (32 * w)) & 0xFFFFFFFF) for w in range(words))
        copy_to_user(k, cpu, task, datap, out)
    except MemoryFault:
        return -E.EFAULT
    return 0


def sys_capset(k: "Kernel", cpu, task, hdrp, datap, *a):
    """capset: only the caller's own sets (another pid is EPERM, whatever the privilege); the
    words a v1 header leaves out read as zero, and bits past CAP_LAST_CAP are ignored."""
    cpu.charge(k.cost.syscall_body)
    try:
        words = _cap_validate_magic(k, cpu, task, hdrp)
        if words < 0:
            return words
        pid = struct.unpack("<i", copy_from_user(k, cpu, task, hdrp + 4, 4))[0]
        if pid != 0 and pid != task.tid:
            return -E.EPERM
        raw = copy_from_user(k, cpu, task, datap, 12 * words).ljust(24, b"\0")
    except MemoryFault:
        return -E.EFAULT
    lo_e, lo_p, lo_i, hi_e, hi_p, hi_i = struct.unpack("<6I", raw)
    effective = (lo_e | hi_e << 32) & CAP_FULL
    permitted = (lo_p | hi_p << 32) & CAP_FULL
    inheritable = (lo_i | hi_i << 32) & CAP_FULL
    return cap_capset(task, effective, permitted, inheritable)


def cap_capset(task, effective: int, permitted: int, inheritable: int) -> int:
    """commoncap's cap_capset: nothing may be gained.  A new inheritable capability must already
    be inheritable or (without CAP_SETPCAP) permitted, and never outside the bounding set; the
    new permitted set is a subset of the old one, the new effective set of the new permitted.
    Ambient capabilities that stop being both permitted and inheritable go."""
    old = cred_of(task)
    if not capable(task, CAP_SETPCAP) and inheritable & ~(old.cap_inheritable | old.cap_permitted):
        return -E.EPERM
    if inheritable & ~(old.cap_inheritable | old.cap_bset):
        return -E.EPERM
    if permitted & ~old.cap_permitted:
        return -E.EPERM
    if effective & ~permitted:
        return -E.EPERM
    task.cred = replace(old, cap_effective=effective, cap_permitted=permitted,
                        cap_inheritable=inheritable,
                        cap_ambient=old.cap_ambient & permitted & inheritable)     # commit_creds
    return 0


def _cap_valid(cap: int) -> bool:
    return 0 <= cap <= CAP_LAST_CAP


def cap_task_prctl(task, option: int, a2: int, a3: int, a4: int, a5: int) -> int:
    """commoncap's cap_task_prctl: the bounding set (read; drop with CAP_SETPCAP), the
    securebits (with CAP_SETPCAP; a locked bit cannot change and a lock cannot be undone), the
    keep-caps bit on its own, and the ambient set (a capability can be raised only while it is
    both permitted and inheritable, and not under SECBIT_NO_CAP_AMBIENT_RAISE)."""
    old = cred_of(task)
    if option == PR_CAPBSET_READ:
        return -E.EINVAL if not _cap_valid(a2) else old.cap_bset >> a2 & 1
    if option == PR_CAPBSET_DROP:
        if not capable(task, CAP_SETPCAP):
            return -E.EPERM
        if not _cap_valid(a2):
            return -E.EINVAL
        task.cred = replace(old, cap_bset=old.cap_bset & ~(1 << a2))
        return 0
    if option == PR_SET_SECUREBITS:
        bits = old.securebits
        if (((bits & SECURE_ALL_LOCKS) >> 1) & (bits ^ a2)      # a locked bit would change
                or bits & SECURE_ALL_LOCKS & ~a2                # a lock would be undone
                or a2 & ~(SECURE_ALL_LOCKS | SECURE_ALL_BITS)   # no such bit
                or not capable(task, CAP_SETPCAP)):
            return -E.EPERM
        task.cred = replace(old, securebits=a2)
        return 0
    if option == PR_GET_SECUREBITS:
        return old.securebits
    if option == PR_GET_KEEPCAPS:
        return int(issecure(old, SECURE_KEEP_CAPS))
    if option == PR_SET_KEEPCAPS:
        if a2 > 1:
            return -E.EINVAL
        if issecure(old, SECURE_KEEP_CAPS + 1):                   # SECURE_KEEP_CAPS_LOCKED
            return -E.EPERM
        bits = old.securebits | SECBIT_KEEP_CAPS if a2 else old.securebits & ~SECBIT_KEEP_CAPS
        task.cred = replace(old, securebits=bits)
        return 0
    # PR_CAP_AMBIENT
    if a2 == PR_CAP_AMBIENT_CLEAR_ALL:
        if a3 | a4 | a5:
            return -E.EINVAL
        task.cred = replace(old, cap_ambient=0)
        return 0
    if not _cap_valid(a3) or a4 or a5:
        return -E.EINVAL
    if a2 == PR_CAP_AMBIENT_IS_SET:
        return old.cap_ambient >> a3 & 1
    if a2 == PR_CAP_AMBIENT_RAISE:
        if not (old.cap_permitted >> a3 & 1 and old.cap_inheritable >> a3 & 1) \
                or issecure(old, SECURE_NO_CAP_AMBIENT_RAISE):
            return -E.EPERM
        task.cred = replace(old, cap_ambient=old.cap_ambient | 1 << a3)
        return 0
    if a2 == PR_CAP_AMBIENT_LOWER:
        task.cred = replace(old, cap_ambient=old.cap_ambient & ~(1 << a3))
        return 0
    return -E.EINVAL
