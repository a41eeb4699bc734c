"""AF_UNIX sockets <-> net/unix/af_unix.c (socketpair and unnamed sockets).

What is modelled:
- ``socket``/``socketpair`` of AF_UNIX with SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET (SOCK_RAW is
  turned into SOCK_DGRAM, as unix_create does), SOCK_NONBLOCK and SOCK_CLOEXEC.  Any other family
  is EAFNOSUPPORT (a family that is not built in), a bad type EINVAL (__sock_create) or
  ESOCKTNOSUPPORT (unix_create), a protocol other than 0/PF_UNIX EPROTONOSUPPORT.
- the data path: read/write/readv/writev, sendto/recvfrom, sendmsg/recvmsg with iovecs.
  Stream sockets (unix_stream_sendmsg / unix_stream_read_generic) are a byte stream cut into skbs
  of at most sk_sndbuf/2 - 64 bytes; datagram and seqpacket sockets (unix_dgram_sendmsg /
  unix_dgram_recvmsg) keep message boundaries, a short buffer truncates (MSG_TRUNC).
- buffer limits: a sender blocks while the skbs it has queued on its peer (sk_wmem_alloc, each
  counted as its payload plus SKB_OVERHEAD bytes, an approximation of skb->truesize) reach its
  sk_sndbuf, 212992 bytes by default (net.core.wmem_default).
- MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL (stream), MSG_NOSIGNAL (else EPIPE and SIGPIPE on a stream
  socket (seqpacket and dgram: EPIPE only, as unix_dgram_sendmsg) whose peer is gone or that was shut down for writing), MSG_TRUNC.
- shutdown, which also shuts the peer's opposite direction (unix_shutdown); close of the last
  descriptor (unix_release_sock) gives the peer EOF/EPIPE and wakes it.
- getsockopt/setsockopt at SOL_SOCKET; poll/epoll masks as unix_poll / unix_dgram_poll.

Not modelled (left ENOSYS / ignored): bind/listen/connect/accept (named and abstract sockets),
ancillary data (SCM_RIGHTS, SCM_CREDENTIALS: recvmsg reports msg_controllen 0), SO_RCVTIMEO.
A signal that interrupts a stream send after part of it was queued ends it with -ERESTARTSYS
rather than the partial count.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.files import File, WaitQueue
from emukern.kernel.sysret import BLOCK, s64
from typing import TYPE_CHECKING
from emukern.kernel import errno as E
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.syscalls import read_write as syscalls_read_write
from emukern.kernel.sysret import BLOCK
from emukern.kernel.sysret import s64
from typing import Any
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

EAFNOSUPPORT, ESOCKTNOSUPPORT, EPROTONOSUPPORT, ENOTSOCK = 97, 94, 93, 88
EOPNOTSUPP, ENOPROTOOPT, ENOTCONN, EMSGSIZE, EISCONN, ECONNRESET = 95, 92, 107, 90, 106, 104
ECONNREFUSED = 111

AF_UNIX = 1
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET = 1, 2, 3, 5
SOCK_MAX = 11
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, 0o2000000
MSG_PEEK, MSG_TRUNC, MSG_DONTWAIT, MSG_EOR, MSG_WAITALL, MSG_NOSIGNAL = 2, 0x20, 0x40, 0x80, 0x100, 0x4000
MSG_CTRUNC, MSG_CMSG_CLOEXEC = 8, 0x40000000
SHUT_RD, SHUT_WR, SHUT_RDWR = 0, 1, 2
RCV_SHUTDOWN, SEND_SHUTDOWN = 1, 2
SHUTDOWN_MASK = 3

SOL_SOCKET = 1
SO_TYPE, SO_ERROR, SO_SNDBUF, SO_RCVBUF, SO_PASSCRED, SO_PEERCRED = 3, 4, 7, 8, 16, 17
SO_ACCEPTCONN, SO_PROTOCOL, SO_DOMAIN = 30, 38, 39
SO_KEEPALIVE, SO_BROADCAST, SO_REUSEADDR, SO_SNDBUFFORCE, SO_RCVBUFFORCE = 9, 6, 2, 32, 33

EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP = 0x1, 0x4, 0x8, 0x10
EPOLLRDNORM, EPOLLWRNORM, EPOLLWRBAND, EPOLLRDHUP = 0x40, 0x100, 0x200, 0x2000

S_IFSOCK = 0o140000
WMEM_DEFAULT = RMEM_DEFAULT = 212992       # net.core.wmem_default / rmem_default
WMEM_MAX = RMEM_MAX = 212992               # net.core.wmem_max / rmem_max
SOCK_MIN_SNDBUF, SOCK_MIN_RCVBUF = 4608, 2304
SKB_OVERHEAD = 576                         # ~ sizeof(sk_buff) + skb_shared_info, per skb


class Skb:
    __slots__ = ("data", "owner", "truesize")

    def __init__(self, data: bytes, owner: "UnixSocket") -> None:
        self.data = bytearray(data)
        self.owner = owner
        self.truesize = len(data) + SKB_OVERHEAD
        owner.wmem += self.truesize


class UnixSocket(File):
    """A socket and its ``struct unix_sock`` in one: the open file of socket()/socketpair()."""
    kind = "socket"
    readable = True
    writable = True
    stat_mode = S_IFSOCK | 0o777

    def __init__(self, stype: int, nonblock: bool, ino: int, creds: tuple[int, int, int]) -> None:
        super().__init__()
        self.type = stype
        self.nonblock = nonblock
        self.ino = ino
        self.peer: UnixSocket | None = None
        self.rq: deque[Skb] = deque()
        self.shutdown = 0
        self.dead = False
        self.err = 0
        self.wmem = 0
        self.sndbuf = WMEM_DEFAULT
        self.rcvbuf = RMEM_DEFAULT
        self.passcred = False
        self.opts: dict[int, int] = {}
        self.creds = creds                  # (pid, uid, gid) at socket creation: SO_PEERCRED
        self.peercred: tuple[int, int, int] | None = None
        self.wq = WaitQueue("unix_sock")

    # ---- file operations --------------------------------------------------------------------
    def kernel_read(self, k, cpu, task, buf, count):
        return unix_recv(k, cpu, task, self, [(buf, count)], 0, None)[0]

    def kernel_write(self, k, cpu, task, buf, count):
        return unix_send(k, cpu, task, self, [(buf, count)], 0)

    def kernel_readv(self, k, cpu, task, vec):
        """readv: one recvmsg over every buffer (File's vector hook)."""
        return self.rw_iov(k, cpu, task, vec, False)

    def kernel_writev(self, k, cpu, task, vec):
        """writev: one sendmsg over every buffer (a datagram is one message)."""
        return self.rw_iov(k, cpu, task, vec, True)

    def rw_iov(self, k, cpu, task, vec, write: bool):
        """readv/writev: one sendmsg/recvmsg over all the buffers (sock_read_iter)."""
        if write:
            return unix_send(k, cpu, task, self, vec, 0)
        return unix_recv(k, cpu, task, self, vec, 0, None)[0]

    def setfl(self, flags: int) -> int:
        self.nonblock = bool(flags & 0o4000)
        return 0

    def connection_based(self) -> bool:
        return self.type in (SOCK_STREAM, SOCK_SEQPACKET)

    def writable_now(self) -> bool:
        """unix_writable: the queued skbs take at most a quarter of sk_sndbuf."""
        return self.wmem << 2 <= self.sndbuf

    def poll(self) -> int:
        # unix_poll (stream) and unix_dgram_poll (dgram, seqpacket)
        mask = 0
        if self.err:
            mask |= EPOLLERR
        if self.shutdown == SHUTDOWN_MASK:
            mask |= EPOLLHUP
        if self.shutdown & RCV_SHUTDOWN:
            mask |= EPOLLRDHUP | EPOLLIN | EPOLLRDNORM
        if self.rq:
            mask |= EPOLLIN | EPOLLRDNORM
        if self.connection_based() and self.peer is None:
            mask |= EPOLLHUP                 # TCP_CLOSE: never connected
        if self.writable_now():
            mask |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND
        return mask

    def poll_queues(self) -> list[WaitQueue]:
        qs = [self.wq]
        if self.peer is not None:
            qs.append(self.peer.wq)
        return qs

    def on_close(self) -> list[WaitQueue]:
        """unix_release_sock: the peer sees SHUTDOWN_MASK (EOF, EPIPE) and ECONNRESET when we
        leave unread data behind (stream/seqpacket); our queued skbs are freed."""
        wqs = [self.wq]
        self.dead = True
        self.shutdown = SHUTDOWN_MASK
        peer = self.peer
        if peer is not None:
            if self.connection_based():          # a dgram peer only finds us dead on send
                peer.shutdown = SHUTDOWN_MASK
                if self.rq:
                    peer.err = ECONNRESET
            wqs.append(peer.wq)
        for skb in self.rq:
            skb.owner.wmem -= skb.truesize
            wqs.append(skb.owner.wq)
        self.rq.clear()
        return wqs


def _iov_total(vec: list[tuple[int, int]]) -> int:
    return sum(n for _b, n in vec)


def _gather(task, vec: list[tuple[int, int]], start: int, n: int) -> bytes:
    """n bytes of the iovecs from offset start (copy_from_iter)."""
    out = bytearray()
    off = 0
    for base, length in vec:
        if n <= 0:
            break
        if off + length <= start:
            off += length
            continue
        s = max(0, start - off)
        take = min(length - s, n)
        if take > 0:
            out += task.mm.read(base + s, take)
            n -= take
        off += length
    return bytes(out)


def _scatter(task, vec: list[tuple[int, int]], data: bytes, start: int = 0) -> None:
    off = 0
    pos = 0
    for base, length in vec:
        if pos >= len(data):
            break
        if off + length <= start:
            off += length
            continue
        s = max(0, start - off)
        take = min(length - s, len(data) - pos)
        if take > 0:
            task.mm.write(base + s, data[pos:pos + take])
            pos += take
        off += length


# ---- creation (__sys_socket, __sock_create, unix_create) -------------------------------
def _unix_create(k: "Kernel", cpu, task, family, stype, protocol) -> Any:
    family, protocol = s64(family) & 0xFFFFFFFF, s64(protocol)
    stype &= 0xFFFFFFFF
    flags = stype & ~0xF
    stype &= 0xF
    if flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK):
        return -E.EINVAL
    if family >= 46:                       # NPROTO
        return -EAFNOSUPPORT
    if stype >= SOCK_MAX:
        return -E.EINVAL
    if family != AF_UNIX:
        return -EAFNOSUPPORT               # no such family built into this kernel
    if protocol and protocol != AF_UNIX:
        return -EPROTONOSUPPORT
    if stype == SOCK_RAW:
        stype = SOCK_DGRAM
    if stype not in (SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET):
        return -ESOCKTNOSUPPORT
    return stype, flags


def _new_sock(k: "Kernel", cpu, task, stype, flags) -> UnixSocket:
    return UnixSocket(stype, bool(flags & SOCK_NONBLOCK), fs_namei.get_next_ino(k, cpu), (task.tgid, 0, 0))


def _sockfd(k: "Kernel", task, fd) -> Any:
    """sockfd_lookup: EBADF for no descriptor, ENOTSOCK for one that is not a socket."""
    f = task.files.get(s64(fd) if s64(fd) >= -(1 << 31) else -1)
    if f is None:
        return -E.EBADF
    if not isinstance(f, UnixSocket):
        return -ENOTSOCK
    return f


# ---- sending ---------------------------------------------------------------------------
def _pipe_err(k: "Kernel", cpu, task, flags) -> int:
    if not flags & MSG_NOSIGNAL:
        signal_generate.force_sig(k, cpu, task, E.SIGPIPE, None, "send on a unix socket with its peer gone")
    return -E.EPIPE


def unix_send(k: "Kernel", cpu, task, sk: UnixSocket, vec, flags, namelen: int = 0) -> Any:
    cpu.charge(k.cost.syscall_body)
    total = _iov_total(vec)
    nonblock = sk.nonblock or bool(flags & MSG_DONTWAIT)
    if sk.type == SOCK_STREAM:
        return _unix_stream_send(k, cpu, task, sk, vec, total, flags, nonblock, namelen)
    return _unix_dgram_send(k, cpu, task, sk, vec, total, flags, nonblock, namelen)


def _unix_stream_send(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock, namelen) -> Any:
    """unix_stream_sendmsg: skbs of at most sndbuf/2 - 64 bytes; sock_alloc_send_pskb sleeps
    while our queued skbs fill sk_sndbuf.  A re-run after a wake-up continues where the
    blocked pass stopped (the progress is kept on the task, keyed by the call)."""
    key = (id(sk), tuple(vec))
    prog = getattr(task, "unix_send_progress", None)
    sent = prog[1] if prog is not None and prog[0] == key else 0
    task.unix_send_progress = None
    if flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_EOR | 0x800 | 0x8000 | MSG_CMSG_CLOEXEC):
        return -EOPNOTSUPP                 # MSG_OOB and the rest
    if namelen:
        return -EISCONN if sk.peer is not None else -EOPNOTSUPP
    other = sk.peer
    if other is None:
        return -ENOTCONN
    if sk.shutdown & SEND_SHUTDOWN:
        return sent or _pipe_err(k, cpu, task, flags)
    while sent < total:
        if other.dead or other.shutdown & RCV_SHUTDOWN:
            return sent or _pipe_err(k, cpu, task, flags)
        if sk.wmem >= sk.sndbuf:
            if nonblock:
                return sent or -E.EAGAIN
            task.unix_send_progress = (key, sent)
            k.sched.sleep_on(cpu, task, sk.wq, "unix_stream_sendmsg")
            return BLOCK
        size = min(total - sent, (sk.sndbuf >> 1) - 64)
        data = _gather(task, vec, sent, size)
        other.rq.append(Skb(data, sk))
        cpu.charge(k.cost.pipe_op)
        sent += size
        k.sched.wake_queue(other.wq, cpu.now)     # sk_data_ready
    return sent


def _unix_dgram_send(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock, namelen) -> Any:
    """unix_dgram_sendmsg (and unix_seqpacket_sendmsg): one skb per call."""
    if flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_EOR | 0x800 | 0x8000 | MSG_CMSG_CLOEXEC):
        return -EOPNOTSUPP
    if sk.type == SOCK_SEQPACKET:
        if sk.peer is None:
            return -ENOTCONN
        if namelen:
            return -EOPNOTSUPP
    elif namelen:
        return -EOPNOTSUPP if sk.peer is None else -EISCONN     # no named sockets here
    if total > sk.sndbuf - 32:
        return -EMSGSIZE
    other = sk.peer
    if other is None:
        return -ENOTCONN
    # (the dgram path sends no SIGPIPE, seqpacket included: plain EPIPE)
    if sk.type == SOCK_SEQPACKET and (sk.shutdown & SEND_SHUTDOWN):
        return -E.EPIPE
    if other.dead:
        if sk.type == SOCK_SEQPACKET:
            return -E.EPIPE
        sk.peer = None                       # unix_dgram_disconnected
        return -ECONNREFUSED
    if other.shutdown & RCV_SHUTDOWN:
        return -E.EPIPE
    if sk.wmem >= sk.sndbuf:
        if nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, sk.wq, "unix_dgram_sendmsg")
        return BLOCK
    other.rq.append(Skb(_gather(task, vec, 0, total), sk))
    cpu.charge(k.cost.pipe_op)
    k.sched.wake_queue(other.wq, cpu.now)
    return total


# ---- receiving -------------------------------------------------------------------------
def _consume(k: "Kernel", cpu, sk: UnixSocket, skb: Skb) -> None:
    sk.rq.remove(skb)
    skb.owner.wmem -= skb.truesize
    k.sched.wake_queue(skb.owner.wq, cpu.now)      # unix_write_space


def unix_recv(k: "Kernel", cpu, task, sk: UnixSocket, vec, flags, _name) -> tuple[Any, int]:
    """(return value, msg_flags)."""
    cpu.charge(k.cost.syscall_body)
    nonblock = sk.nonblock or bool(flags & MSG_DONTWAIT)
    total = _iov_total(vec)
    if flags & 1:                                  # MSG_OOB
        return -EOPNOTSUPP, 0
    if sk.type == SOCK_STREAM:
        return _unix_stream_recv(k, cpu, task, sk, vec, total, flags, nonblock)
    return _unix_dgram_recv(k, cpu, task, sk, vec, total, flags, nonblock)


def _unix_stream_recv(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock) -> tuple[Any, int]:
    """unix_stream_read_generic: copy across skbs; wait until at least one byte (or, with
    MSG_WAITALL, the whole length) is there, the peer shut down, or an error."""
    if sk.peer is None:
        return -E.EINVAL, 0                        # not TCP_ESTABLISHED
    if total == 0:
        return 0, 0
    target = total if flags & MSG_WAITALL else 1
    avail = sum(len(s.data) for s in sk.rq)
    if avail < target and not (flags & MSG_PEEK and avail):
        if sk.err:
            e, sk.err = sk.err, 0
            return -e, 0
        if not sk.shutdown & RCV_SHUTDOWN and not (nonblock and avail):
            if nonblock:
                return -E.EAGAIN, 0
            k.sched.sleep_on(cpu, task, sk.wq, "unix_stream_read_generic")
            return BLOCK, 0
    if not avail:
        return 0, 0                                # EOF
    copied = 0
    out = bytearray()
    for skb in list(sk.rq):
        if copied >= total:
            break
        take = min(len(skb.data), total - copied)
        out += skb.data[:take]
        copied += take
        if not flags & MSG_PEEK:
            del skb.data[:take]
            if not skb.data:
                _consume(k, cpu, sk, skb)
    _scatter(task, vec, bytes(out))
    return copied, 0


def _unix_dgram_recv(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock) -> tuple[Any, int]:
    """unix_dgram_recvmsg: one message; a short buffer takes its head (MSG_TRUNC)."""
    if sk.type == SOCK_SEQPACKET and sk.peer is None:
        return -ENOTCONN, 0
    if not sk.rq:
        if sk.err:
            e, sk.err = sk.err, 0
            return -e, 0
        if sk.shutdown & RCV_SHUTDOWN:
            return 0, 0
        if nonblock:
            return -E.EAGAIN, 0
        k.sched.sleep_on(cpu, task, sk.wq, "unix_dgram_recvmsg")
        return BLOCK, 0
    skb = sk.rq[0]
    size = len(skb.data)
    data = bytes(skb.data[:total])
    _scatter(task, vec, data)
    mflags = MSG_TRUNC if size > total else 0
    if sk.type == SOCK_SEQPACKET and size <= total:
        mflags |= MSG_EOR if False else 0
    if not flags & MSG_PEEK:
        _consume(k, cpu, sk, skb)
    return (size if flags & MSG_TRUNC else len(data)), mflags


def _msghdr(k: "Kernel", task, msg):
    raw = task.mm.read(msg, 56)
    q = lambda o: int.from_bytes(raw[o:o + 8], "little")
    name, namelen = q(0), int.from_bytes(raw[8:12], "little")
    iov, iovlen, control, controllen = q(16), q(24), q(32), q(40)
    if iovlen > 1024:
        return -EMSGSIZE
    vec = syscalls_read_write._vec(k, task, iov, iovlen) if iovlen else []    # readv's iovec parser
    return name, namelen, vec, control, controllen


def _unix_getname(k: "Kernel", cpu, task, fd, addr, addrlen, peer: bool) -> int:
    """unix_getname: an unbound socket's name is just sun_family (2 bytes); getpeername of
    an unconnected socket is ENOTCONN."""
    sk = _sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    if peer and (sk.peer is None or (sk.connection_based() and sk.peer.dead)):
        return -ENOTCONN
    n = int.from_bytes(task.mm.read(addrlen, 4), "little", signed=True)
    if n < 0:
        return -E.EINVAL
    full = AF_UNIX.to_bytes(2, "little")
    task.mm.write(addr, full[:min(n, 2)])
    task.mm.write_u32(addrlen, 2)
    return 0
