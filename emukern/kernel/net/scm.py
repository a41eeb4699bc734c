"""Ancillary data of unix sockets <-> net/core/scm.c (__scm_send, put_cmsg, scm_detach_fds)
and scm_recv_unix.

The control buffer is a list of ``struct cmsghdr`` (64-bit: cmsg_len u64, cmsg_level and
cmsg_type s32, the data, each header aligned to 8 bytes).  At SOL_SOCKET a sender may give
SCM_RIGHTS (descriptors: the receiver gets new descriptors for the same open files) and
SCM_CREDENTIALS (a ``struct ucred`` it may claim: its own pid and ids, or anything when
privileged).  A receiver gets SCM_CREDENTIALS when it set SO_PASSCRED, then SCM_RIGHTS, then
(SO_PASSPIDFD) SCM_PIDFD: a new pidfd for the process whose pid the credentials carry.

Not modelled: the in-flight garbage collector (a socket sent over itself and closed keeps its
files until the machine ends, where Linux's unix_gc would free the cycle) and the per-user
in-flight limit (ETOOMANYREFS).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.cred import CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN, capable, cred_of
from emukern.kernel.files import File
from emukern.kernel.fs.pidfs import PidFdFile
from emukern.kernel.net import unix as net_unix

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

SOL_SOCKET = 1
SCM_RIGHTS, SCM_CREDENTIALS, SCM_PIDFD = 1, 2, 4
CMSG_HDR = 16                       # sizeof(struct cmsghdr)
SCM_MAX_FD = 253
UCRED_SIZE = 12
OPTMEM_MAX = 131072                 # net.core.optmem_max: the largest control buffer copied in
INT_MAX = 0x7FFFFFFF
ENOBUFS = 105
MSG_CTRUNC, MSG_CMSG_CLOEXEC = 8, 0x40000000
OVERFLOW_ID = 65534


def cmsg_align(n: int) -> int:
    return (n + 7) & ~7


def scm_send(k: "Kernel", task, control: int, controllen: int) -> tuple[list[File] | None, tuple[int, int, int] | None] | int:
    """____sys_sendmsg's control copy + __scm_send: (files, credentials) or -errno.
    A length over INT_MAX or over optmem_max is ENOBUFS before anything is read."""
    if controllen > INT_MAX or controllen >= OPTMEM_MAX:
        return -ENOBUFS            # (sock_kmalloc takes less than optmem_max)
    if controllen == 0:
        return None, None
    buf = bytes(task.mm.read(control, controllen))
    files: list[File] = []
    creds = None
    off = 0
    while controllen - off >= CMSG_HDR:                     # CMSG_FIRSTHDR / CMSG_NXTHDR
        clen = int.from_bytes(buf[off:off + 8], "little")
        level = int.from_bytes(buf[off + 8:off + 12], "little", signed=True)
        ctype = int.from_bytes(buf[off + 12:off + 16], "little", signed=True)
        if clen < CMSG_HDR or clen > controllen - off:      # CMSG_OK
            return -E.EINVAL
        data = buf[off + CMSG_HDR:off + clen]
        if level == SOL_SOCKET:
            if ctype == SCM_RIGHTS:
                num = len(data) // 4
                if num > SCM_MAX_FD or len(files) + num > SCM_MAX_FD:
                    return -E.EINVAL
                for i in range(num):
                    fd = int.from_bytes(data[4 * i:4 * i + 4], "little", signed=True)
                    f = task.files.get(fd) if fd >= 0 else None
                    if f is None:
                        return -E.EBADF
                    files.append(f)
            elif ctype == SCM_CREDENTIALS:
                if clen != CMSG_HDR + UCRED_SIZE:
                    return -E.EINVAL
                pid, uid, gid = (int.from_bytes(data[i:i + 4], "little") for i in (0, 4, 8))
                err = _scm_check_creds(k, task, pid, uid, gid)
                if err:
                    return err
                creds = (pid, uid, gid)
            else:
                return -E.EINVAL
        nxt = off + cmsg_align(clen)
        if nxt + CMSG_HDR > controllen:
            break
        off = nxt
    return (files or None), creds


def _scm_check_creds(k: "Kernel", task, pid: int, uid: int, gid: int) -> int:
    """scm_check_creds: one's own tgid (else CAP_SYS_ADMIN) and one of one's own uids (else
    CAP_SETUID) and gids (else CAP_SETGID); then the pid must exist (ESRCH)."""
    c = cred_of(task)
    if not ((pid == task.tgid or capable(task, CAP_SYS_ADMIN))
            and (uid in (c.uid, c.euid, c.suid) or capable(task, CAP_SETUID))
            and (gid in (c.gid, c.egid, c.sgid) or capable(task, CAP_SETGID))):
        return -E.EPERM
    if pid not in k.tasks:
        return -E.ESRCH
    return 0


class CmsgWriter:
    """put_cmsg's cursor over the receiver's control buffer."""

    def __init__(self, task, control: int, controllen: int) -> None:
        self.task = task
        self.ptr = control
        self.left = controllen
        self.used = 0
        self.flags = 0

    def put(self, level: int, ctype: int, data: bytes) -> None:
        """put_cmsg: a header and as much of the data as fits (MSG_CTRUNC when cut)."""
        if not self.ptr or self.left < CMSG_HDR:
            self.flags |= MSG_CTRUNC
            return
        cmlen = CMSG_HDR + len(data)
        if self.left < cmlen:
            self.flags |= MSG_CTRUNC
            cmlen = self.left
        hdr = cmlen.to_bytes(8, "little") + level.to_bytes(4, "little") + ctype.to_bytes(4, "little")
        self.task.mm.write(self.ptr, hdr + data[:cmlen - CMSG_HDR])
        self._advance(min(cmsg_align(CMSG_HDR + len(data)), self.left))

    def _advance(self, n: int) -> None:
        self.ptr += n
        self.left -= n
        self.used += n


def scm_recv_unix(k: "Kernel", task, sk: Any, w: CmsgWriter, creds, files: list[File] | None,
                  flags: int) -> list[Any]:
    """scm_recv_unix: SCM_CREDENTIALS when SO_PASSCRED is set, then the files as new
    descriptors (scm_detach_fds: as many as fit, MSG_CTRUNC for the rest, which are closed
    again).  With no control buffer at all, anything there was to say is MSG_CTRUNC.
    Returns the wait queues the closed leftovers wake."""
    if not w.ptr:
        if sk.may_passcred() or files:
            w.flags |= MSG_CTRUNC
        return net_unix.drop_files(files)
    if sk.passcred:
        pid, uid, gid = creds if creds is not None else (0, OVERFLOW_ID, OVERFLOW_ID)
        w.put(SOL_SOCKET, SCM_CREDENTIALS,
              pid.to_bytes(4, "little") + uid.to_bytes(4, "little") + gid.to_bytes(4, "little"))
    if not files:
        if sk.passpidfd:
            scm_pidfd_recv(k, task, w, creds)
        return []
    fdmax = (w.left - CMSG_HDR) // 4 if w.left > CMSG_HDR else 0
    fdmax = min(fdmax, len(files))
    fds: list[int] = []
    for f in files[:fdmax]:
        fd = task.files.install(f, cloexec=bool(flags & MSG_CMSG_CLOEXEC))
        if fd < 0:
            break
        fds.append(fd)
    if fds:
        data = b"".join(fd.to_bytes(4, "little") for fd in fds)
        hdr = (CMSG_HDR + len(data)).to_bytes(8, "little") + SOL_SOCKET.to_bytes(4, "little") \
            + SCM_RIGHTS.to_bytes(4, "little")
        w.task.mm.write(w.ptr, hdr + data)
        w._advance(min(cmsg_align(CMSG_HDR + len(data)), w.left))
    if len(fds) < len(files) or fdmax <= 0:
        w.flags |= MSG_CTRUNC
    if sk.passpidfd:
        scm_pidfd_recv(k, task, w, creds)
    return net_unix.drop_files(files)       # the in-flight references (installed ones hold their own)


def pidfd_prepare(k: "Kernel", task, pid: int) -> int:
    """pidfd_prepare(pid, 0): a new close-on-exec pidfd in ``task`` for the process ``pid``, or
    -EINVAL when no thread-group leader holds that number any more (reaped, or a thread's id)."""
    t = k.tasks.get(pid) if pid > 0 else None
    if t is None or not t.is_thread_leader:
        return -E.EINVAL
    return task.files.install(PidFdFile(k, t, False), cloexec=True)


def scm_pidfd_recv(k: "Kernel", task, w: CmsgWriter, creds) -> None:
    """scm_pidfd_recv: SCM_PIDFD with a pidfd for the sender's pid, or the negative errno
    pidfd_prepare gave in its place (the receiver sees why).  No room for the int: MSG_CTRUNC
    and no descriptor made; a message that carried no pid gets nothing."""
    if w.left < CMSG_HDR + 4:
        w.flags |= MSG_CTRUNC
        return
    if creds is None or not creds[0]:
        return
    fd = pidfd_prepare(k, task, creds[0])
    w.put(SOL_SOCKET, SCM_PIDFD, (fd & 0xFFFFFFFF).to_bytes(4, "little"))
