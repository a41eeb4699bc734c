"""kernel/capability.c's capget: the capability sets a process holds, as emukern's credentials
imply them.

emukern keeps no capability sets of its own: privilege is "euid 0" (emukern/kernel/cred.py), and
Linux's sets follow the uid changes the same way (cap_emulate_setxuid).  So the sets are derived:
a task whose effective uid is 0 has every capability effective; one that still has uid 0 as its
real, effective or saved uid keeps them permitted (it can get them back with seteuid(0)); the
inheritable set is empty, as it is for a root login shell.  capset is not offered: a change to the
sets would have to be kept to be honest, and emukern has nowhere to keep it.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.cred import cred_of
from emukern.kernel.mm.uaccess import copy_from_user, copy_to_user

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

# the header versions (include/uapi/linux/capability.h): v1 carries one 32-bit word per set,
# v2 (deprecated) and v3 two; the kernel answers an unknown version with v3 in the header
CAP_VERSION_1, CAP_VERSION_2, CAP_VERSION_3 = 0x19980330, 0x20071026, 0x20080522
WORDS = {CAP_VERSION_1: 1, CAP_VERSION_2: 2, CAP_VERSION_3: 2}
CAP_LAST_CAP = 40                       # CAP_CHECKPOINT_RESTORE, the last one Linux 6.12 knows
CAP_FULL = (1 << (CAP_LAST_CAP + 1)) - 1


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
        effective = CAP_FULL if c.euid == 0 else 0
        permitted = CAP_FULL if 0 in (c.uid, c.euid, c.suid) else 0
        out = b"".join(struct.pack("<III", (effective >> (32 * w)) & 0xFFFFFFFF,
                                   (permitted >> (32 * w)) & 0xFFFFFFFF, 0) for w in range(words))
        copy_to_user(k, cpu, task, datap, out)
    except MemoryFault:
        return -E.EFAULT
    return 0
