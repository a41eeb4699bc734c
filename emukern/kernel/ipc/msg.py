"""ipc/msg.c: System V message queues.

A queue holds (type, bytes) messages in arrival order and a byte budget (``msg_qbytes``,
MSGMNB by default).  Senders that do not fit and receivers that find nothing sleep on the
queue's wait queue; every send, receive and IPC_SET wakes all of them to look again (Linux
hands a message straight to a waiting receiver; the messages seen are the same).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from emukern.kernel.files import WaitQueue
from emukern.kernel.ipc.util import KernIpcPerm

MSG_NOERROR, MSG_EXCEPT, MSG_COPY = 0o10000, 0o20000, 0o40000
MSG_STAT, MSG_INFO, MSG_STAT_ANY = 11, 12, 13
MSQID64_DS = struct.Struct("<48sqqqQQQii8x8x")     # 120 bytes
LONG_MAX = (1 << 63) - 1


@dataclass(eq=False)
class MsgQueue:
    """``struct msg_queue``."""

    perm: KernIpcPerm
    qbytes: int
    ctime: int
    msgs: list[tuple[int, bytes]] = field(default_factory=list)
    cbytes: int = 0
    stime: int = 0
    rtime: int = 0
    lspid: int = 0
    lrpid: int = 0
    wq: WaitQueue = field(default_factory=lambda: WaitQueue("msg"))

    def fits(self, size: int) -> bool:
        """msg_fits_inqueue: the bytes, and the count (one per byte of budget at most)."""
        return self.cbytes + size <= self.qbytes and 1 + len(self.msgs) <= self.qbytes

    def find(self, msgtyp: int, flg: int) -> int:
        """find_msg: the index of the message msgrcv's type selects, -1 if none.  0: the
        first; > 0: the first of that type (or, with MSG_EXCEPT, of any other); < 0: the
        first of the lowest type not above |msgtyp|; MSG_COPY: the msgtyp'th message."""
        if flg & MSG_COPY:
            return msgtyp if 0 <= msgtyp < len(self.msgs) else -1
        if msgtyp == 0:
            return 0 if self.msgs else -1
        if msgtyp > 0:
            for i, (t, _) in enumerate(self.msgs):
                if (t != msgtyp) if flg & MSG_EXCEPT else (t == msgtyp):
                    return i
            return -1
        bound = LONG_MAX if msgtyp == -(1 << 63) else -msgtyp
        best, best_t = -1, None
        for i, (t, _) in enumerate(self.msgs):
            if t <= bound and (best_t is None or t < best_t):
                best, best_t = i, t
        return best

    def stat_bytes(self) -> bytes:
        return MSQID64_DS.pack(self.perm.pack(), self.stime, self.rtime, self.ctime, self.cbytes,
                               len(self.msgs), self.qbytes, self.lspid, self.lrpid)
