"""AF_UNIX sockets <-> net/unix/af_unix.c.

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
  sk_sndbuf, 212992 bytes by default (net.core.wmem_default).  Every queued skb is also charged
  to the machine's memory pool (--mem-limit, the same budget as guest mappings) until it is
  read or freed, so many sockets each holding a full buffer cannot grow the host's memory past
  the limit: the allocation fails and the sender gets ENOBUFS (a stream send that queued some
  bytes first returns those), as from Linux's failed alloc_skb_with_frags.
- MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL (stream), MSG_NOSIGNAL (else EPIPE and SIGPIPE on a stream
  socket (seqpacket and dgram: EPIPE only, as unix_dgram_sendmsg) whose peer is gone or that was shut down for writing), MSG_TRUNC.
- shutdown, which also shuts the peer's opposite direction (unix_shutdown); close of the last
  descriptor (unix_release_sock) gives the peer EOF/EPIPE and wakes it.
- getsockopt/setsockopt at SOL_SOCKET; poll/epoll masks as unix_poll / unix_dgram_poll.

- names and connections: bind (path, abstract, automatic names: unix_bind.py), listen with
  its backlog (a full accept queue makes connect wait, or EAGAIN when non-blocking), connect of
  stream/seqpacket (a server-side socket queued on the listener) and of datagram sockets,
  accept4 with SOCK_NONBLOCK/SOCK_CLOEXEC, sendto/recvfrom addresses, getsockname/getpeername.
- ancillary data (scm.py): SCM_RIGHTS (files in flight hold a reference; MSG_CTRUNC,
  MSG_CMSG_CLOEXEC) and SCM_CREDENTIALS (SO_PASSCRED, explicit credentials checked).
- a datagram receiver that is not the sender's peer takes at most net.unix.max_dgram_qlen
  (512) messages before senders wait.

- the in-flight garbage collector (unix_gc): sockets that only queued SCM_RIGHTS skbs of such
  sockets hold are freed when the last descriptor of one closes (run at once, not as Linux's
  deferred work).

- SO_PASSPIDFD (the sender's pid also arrives as a pidfd, SCM_PIDFD) and SO_PEERPIDFD: either
  flag asks for the sender's credentials, as SO_PASSCRED does (``may_passcred``).

- MSG_OOB on stream sockets: the urgent byte, its mark in the queue, recv(MSG_OOB).  Not
  modelled there: SO_OOBINLINE, SIOCATMARK, SIGURG, EPOLLPRI.

Not modelled: SO_RCVTIMEO/SO_SNDTIMEO,
permission checks on a socket inode (connect needs write permission in Linux).
A signal that interrupts a stream send after part of it was queued ends it with -ERESTARTSYS
rather than the partial count.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.cred import cred_of
from emukern.kernel.files import FdTable, File, WaitQueue
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.net import net_namespace, unix_bind
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.syscalls import read_write as syscalls_read_write
from emukern.kernel.sysret import BLOCK, s64
from emukern.machine.memory import OutOfMemory

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

EAFNOSUPPORT, ESOCKTNOSUPPORT, EPROTONOSUPPORT, ENOTSOCK = 97, 94, 93, 88
EOPNOTSUPP, ENOPROTOOPT, ENOTCONN, EMSGSIZE, EISCONN, ECONNRESET = 95, 92, 107, 90, 106, 104
ECONNREFUSED, ENOBUFS = 111, 105

AF_UNIX = 1
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET = 1, 2, 3, 5
SOCK_MAX = 11
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, 0o2000000
MSG_OOB = 1
MSG_PEEK, MSG_TRUNC, MSG_DONTWAIT, MSG_EOR, MSG_WAITALL, MSG_NOSIGNAL = 2, 0x20, 0x40, 0x80, 0x100, 0x4000
MSG_CTRUNC, MSG_CMSG_CLOEXEC = 8, 0x40000000
SHUT_RD, SHUT_WR, SHUT_RDWR = 0, 1, 2
RCV_SHUTDOWN, SEND_SHUTDOWN = 1, 2
SHUTDOWN_MASK = 3

SOL_SOCKET = 1
SO_TYPE, SO_ERROR, SO_SNDBUF, SO_RCVBUF, SO_PASSCRED, SO_PEERCRED = 3, 4, 7, 8, 16, 17
SO_ACCEPTCONN, SO_PROTOCOL, SO_DOMAIN = 30, 38, 39
SO_PASSPIDFD, SO_PEERPIDFD = 76, 77
SO_KEEPALIVE, SO_BROADCAST, SO_REUSEADDR, SO_SNDBUFFORCE, SO_RCVBUFFORCE = 9, 6, 2, 32, 33

EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP = 0x1, 0x4, 0x8, 0x10
EPOLLRDNORM, EPOLLWRNORM, EPOLLWRBAND, EPOLLRDHUP = 0x40, 0x100, 0x200, 0x2000

S_IFSOCK = 0o140000
WMEM_DEFAULT = RMEM_DEFAULT = 212992       # net.core.wmem_default / rmem_default
WMEM_MAX = RMEM_MAX = 212992               # net.core.wmem_max / rmem_max
SOCK_MIN_SNDBUF, SOCK_MIN_RCVBUF = 4608, 2304
SKB_OVERHEAD = 576                         # ~ sizeof(sk_buff) + skb_shared_info, per skb


SCM_RIGHTS, SCM_CREDENTIALS = 1, 2
OVERFLOW_ID = 65534            # overflowuid/overflowgid: what an unset uid/gid reads as
MAX_DGRAM_QLEN = 512           # net.unix.max_dgram_qlen: a socket's sk_max_ack_backlog at birth


class Skb:
    """One queued message (struct sk_buff with its UNIXCB): the bytes, the sending socket
    (charged for it: sk_wmem_alloc), the files it carries (SCM_RIGHTS, each holding a reference
    while in flight) and the sender's credentials (pid, uid, gid) or None."""
    __slots__ = ("data", "owner", "truesize", "fds", "creds")

    def __init__(self, data: bytes, owner: "UnixSocket", fds: list[File] | None = None,
                 creds: tuple[int, int, int] | None = None) -> None:
        self.truesize = len(data) + SKB_OVERHEAD
        if owner.pool is not None:
            # the machine's memory limit: past it the allocation fails (OutOfMemory), and the
            # sender gets ENOBUFS as from a failed alloc_skb_with_frags
            owner.pool.charge(self.truesize, "unix socket buffer")
        self.data = bytearray(data)
        self.owner = owner
        owner.wmem += self.truesize
        self.fds = fds
        self.creds = creds
        if fds:
            for f in fds:
                f.refs += 1           # the in-flight reference (scm_fp_dup / get_file)
                if isinstance(f, UnixSocket):
                    f.inflight += 1   # unix_inflight: what the garbage collector counts


def free_skb(skb: Skb) -> None:
    """kfree_skb's accounting: the sender's sk_wmem_alloc and the machine's memory pool."""
    skb.owner.wmem -= skb.truesize
    if skb.owner.pool is not None:
        skb.owner.pool.uncharge(skb.truesize)


def alloc_skb(data: bytes, owner: "UnixSocket", fds: list[File] | None = None,
              creds: tuple[int, int, int] | None = None) -> Skb | None:
    """sock_alloc_send_pskb's allocation: None when the machine's memory is used up."""
    try:
        return Skb(data, owner, fds, creds)
    except OutOfMemory:
        return None


def drop_files(files: list[File] | None) -> list[WaitQueue]:
    """fput of in-flight files: the last reference closes the file (and wakes its waiters)."""
    wqs: list[WaitQueue] = []
    for f in files or ():
        f.refs -= 1
        if f.refs == 0:
            wqs += f.on_close()
    return wqs


class RecvMeta:
    """What a receive hands back beside the bytes (struct scm_cookie + msg_name): the sender's
    address, its credentials, the files received."""
    __slots__ = ("addr", "creds", "fds")

    def __init__(self) -> None:
        self.addr: bytes | None = None
        self.creds: tuple[int, int, int] | None = None
        self.fds: list[File] | None = None


class UnixSocket(File):
    """A socket and its ``struct unix_sock`` in one: the open file of socket()/socketpair()/
    accept().  ``peer`` set is TCP_ESTABLISHED (a connected datagram socket too); ``listening``
    is TCP_LISTEN, with the not yet accepted server-side sockets ("embryos") in ``acceptq``."""
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
        self.inflight = 0                   # references to this socket in queued skbs (SCM_RIGHTS)
        self.pool: Any = None               # the machine's MemoryPool its skbs are charged to
        self.sndbuf = WMEM_DEFAULT
        self.rcvbuf = RMEM_DEFAULT
        self.passcred = False
        self.passpidfd = False              # SO_PASSPIDFD: an SCM_PIDFD with each message
        self.opts: dict[int, int] = {}
        self.creds = creds                  # (pid, uid, gid) at socket creation: SO_PEERCRED
        self.peercred: tuple[int, int, int] | None = None
        self.wq = WaitQueue("unix_sock")
        # naming and connection set-up (unix_bind.py, unix_listen, unix_stream_connect)
        self.addr: bytes | None = None      # the sockaddr_un getsockname reports (unix_address)
        self.bound_key: Any = None          # where the name table holds us
        self.names: Any = None              # that table
        self.listening = False
        self.max_backlog = MAX_DGRAM_QLEN   # sk_max_ack_backlog
        self.acceptq: deque[UnixSocket] = deque()
        self.peer_wait = WaitQueue("unix_peer_wait")   # connect()s waiting for room in acceptq
        self.embryo = False                 # made by connect, not accepted yet (no struct socket)
        self.net: Any = None                # its network namespace (net_namespace.Net), for good
        self.oob_skb: Skb | None = None     # the unread urgent byte's skb (MSG_OOB), in rq

    def may_passcred(self) -> bool:
        """Either SO_PASSCRED or SO_PASSPIDFD: both need the sender's identity on each skb (and
        a name, so the receiver can tell who sent it: the autobind before connect/send)."""
        return self.passcred or self.passpidfd

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

    def splice_read(self, k, cpu, task, count, nonblock):
        """sock_splice_read -> unix_stream_splice_read (a datagram socket: copy_splice_read,
        one message): a receive into the kernel, MSG_DONTWAIT for SPLICE_F_NONBLOCK."""
        it = KernelIter(b"", count)
        got = unix_recv(k, cpu, task, self, it, MSG_DONTWAIT if nonblock else 0, None)[0]
        if not isinstance(got, int) or got < 0:
            return got
        return it.data[:got]

    def splice_write(self, k, cpu, task, data, nonblock):
        """splice_to_socket: one sendmsg of the pipe's bytes (MSG_SPLICE_PAGES), MSG_DONTWAIT
        when the socket is O_NONBLOCK; a peer that is gone raises SIGPIPE as write does."""
        return unix_send(k, cpu, task, self, KernelIter(data), MSG_DONTWAIT if nonblock else 0)

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
        if self.listening:
            # a pending connection is the listener's readable data; a listener never writes
            return mask | (EPOLLIN | EPOLLRDNORM if self.acceptq else 0)
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
        return self.release(embryo=False)

    def release(self, embryo: bool) -> list[WaitQueue]:
        """unix_release_sock: the name is unhashed; the peer sees SHUTDOWN_MASK (EOF, EPIPE)
        and ECONNRESET when we leave unread data behind or were never accepted (stream/
        seqpacket); our queued skbs are freed with the files they carry, and a listener's
        unaccepted connections are released the same way."""
        if self.dead:
            return []         # (already released: the garbage collector closed it first)
        wqs = [self.wq, self.peer_wait]
        self.dead = True
        if self.net is not None:
            self.net.inuse[net_namespace.proto_name(self.type)] -= 1    # (unix_sock_destructor)
        self.shutdown = SHUTDOWN_MASK
        if self.names is not None:
            self.names.release(self)
        peer = self.peer
        if peer is not None:
            if self.connection_based():          # a dgram peer only finds us dead on send
                peer.shutdown = SHUTDOWN_MASK
                if self.rq or embryo:
                    peer.err = ECONNRESET
            wqs.append(peer.wq)
        for skb in list(self.rq):
            free_skb(skb)
            wqs.append(skb.owner.wq)
            fds, skb.fds = skb.fds, None
            _uninflight(fds)
            wqs += drop_files(fds)
        self.rq.clear()
        while self.acceptq:
            wqs += self.acceptq.popleft().release(embryo=True)
        self.listening = False
        return wqs


class KernelIter(list):
    """An iov_iter over bytes the kernel holds (ITER_BVEC), in place of the user's iovecs: what
    splice and sendfile hand sendmsg/recvmsg.  One pseudo-buffer of ``size`` bytes, so the
    length arithmetic of the user-memory paths applies unchanged; a send takes its bytes from
    ``data``, a receive leaves them there."""

    def __init__(self, data: bytes, size: int | None = None) -> None:
        super().__init__([(0, len(data) if size is None else size)])
        self.data = data


def _iov_total(vec: list[tuple[int, int]]) -> int:
    return sum(n for _b, n in vec)


def _gather(task, vec: list[tuple[int, int]], start: int, n: int) -> bytes:
    """n bytes of the iovecs from offset start (copy_from_iter)."""
    if isinstance(vec, KernelIter):
        return bytes(vec.data[start:start + n])
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
    if isinstance(vec, KernelIter):
        vec.data = bytes(data)
        return
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


def _new_sock(k: "Kernel", cpu, task, stype, flags, net: Any = None) -> UnixSocket:
    """unix_create1: the socket lives in ``net`` (by default its creator's network namespace)
    for good, and counts there among its protocol's sockets until it is released."""
    sk = UnixSocket(stype, bool(flags & SOCK_NONBLOCK), fs_namei.get_next_ino(k, cpu), _peer_identity(task))
    sk.pool = getattr(k, "mem", None)
    sk.net = net if net is not None else net_namespace.task_net(k, task)
    sk.net.inuse[net_namespace.proto_name(stype)] += 1
    return sk


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


def _current_creds(task) -> tuple[int, int, int]:
    c = cred_of(task)
    return (task.tgid, c.uid, c.gid)


def _skb_creds(task, sk: UnixSocket, other: UnixSocket, scm) -> tuple[int, int, int] | None:
    """maybe_add_creds: credentials given with SCM_CREDENTIALS, else the sender's own when
    either side asked for them (SO_PASSCRED) or the receiver is not accepted yet."""
    if scm is not None and scm[1] is not None:
        return scm[1]
    if sk.may_passcred() or other.may_passcred() or other.embryo:
        return _current_creds(task)
    return None


def unix_send(k: "Kernel", cpu, task, sk: UnixSocket, vec, flags, namelen: int = 0,
              addr: bytes | None = None, scm: Any = None) -> Any:
    """sendmsg on a unix socket; ``addr`` is the destination a datagram names, ``scm`` the
    parsed ancillary data (files, credentials) or None."""
    cpu.charge(k.cost.syscall_body)
    total = _iov_total(vec)
    nonblock = sk.nonblock or bool(flags & MSG_DONTWAIT)
    if sk.type == SOCK_STREAM:
        return _unix_stream_send(k, cpu, task, sk, vec, total, flags, nonblock, namelen, scm)
    return _unix_dgram_send(k, cpu, task, sk, vec, total, flags, nonblock, namelen, addr, scm)


def _unix_stream_send(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock, namelen, scm) -> Any:
    """unix_stream_sendmsg: skbs of at most sndbuf/2 - 64 bytes; sock_alloc_send_pskb sleeps
    while our queued skbs fill sk_sndbuf.  A re-run after a wake-up continues where the
    blocked pass stopped (the progress is kept on the task, keyed by the call).  Files go
    with the first skb only."""
    key = (id(sk), tuple(vec))
    prog = getattr(task, "unix_send_progress", None)
    sent = prog[1] if prog is not None and prog[0] == key else 0
    task.unix_send_progress = None
    if flags & ~(MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL | MSG_EOR | 0x800 | 0x8000 | MSG_CMSG_CLOEXEC):
        return -EOPNOTSUPP
    # MSG_OOB (CONFIG_AF_UNIX_OOB): the last byte goes alone in an skb of its own, the peer's
    # urgent mark; there must be a byte to send
    oob = bool(flags & MSG_OOB)
    if oob and total == 0:
        return -EOPNOTSUPP
    body = total - 1 if oob else total
    if namelen:
        return -EISCONN if sk.peer is not None else -EOPNOTSUPP
    other = sk.peer
    if other is None:
        return -ENOTCONN
    if sk.shutdown & SEND_SHUTDOWN:
        return sent or _pipe_err(k, cpu, task, flags)
    while sent < body:
        if other.dead or other.shutdown & RCV_SHUTDOWN:
            return sent or _pipe_err(k, cpu, task, flags)
        if sk.wmem >= sk.sndbuf:
            if nonblock or (sent and isinstance(vec, KernelIter)):
                # (a splice that queued some bytes returns them: the pipe gives up only what
                # was sent, and the caller asks again for the rest)
                return sent or -E.EAGAIN
            task.unix_send_progress = (key, sent)
            k.sched.sleep_on(cpu, task, sk.wq, "unix_stream_sendmsg")
            return BLOCK
        size = min(body - sent, (sk.sndbuf >> 1) - 64)
        data = _gather(task, vec, sent, size)
        fds = scm[0] if scm is not None and sent == 0 else None
        skb = alloc_skb(data, sk, fds, _skb_creds(task, sk, other, scm))
        if skb is None:
            return sent or -ENOBUFS
        other.rq.append(skb)
        cpu.charge(k.cost.pipe_op)
        sent += size
        k.sched.wake_queue(other.wq, cpu.now)     # sk_data_ready
    if oob:
        return _queue_oob(k, cpu, task, sk, other, vec, body, flags, scm)
    return sent


def _queue_oob(k: "Kernel", cpu, task, sk, other, vec, body: int, flags, scm) -> Any:
    """queue_oob: the urgent byte as an skb of its own at the tail of the peer's queue, which
    becomes the peer's oob_skb (a newer one replaces an unread older mark).  The files go with
    it when no earlier skb of this call took them.  (SIGURG to the peer's owner is not sent:
    emukern has no F_SETOWN for sockets.)"""
    if other.dead or other.shutdown & RCV_SHUTDOWN:
        return body or _pipe_err(k, cpu, task, flags)
    fds = scm[0] if scm is not None and body == 0 else None
    skb = alloc_skb(_gather(task, vec, body, 1), sk, fds, _skb_creds(task, sk, other, scm))
    if skb is None:
        return body or -ENOBUFS
    other.rq.append(skb)
    other.oob_skb = skb
    cpu.charge(k.cost.pipe_op)
    k.sched.wake_queue(other.wq, cpu.now)
    return body + 1


def _unix_dgram_send(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock, namelen, addr, scm) -> Any:
    """unix_dgram_sendmsg (and unix_seqpacket_sendmsg): one skb per call, to the connected
    peer or to the socket a datagram's address names."""
    if flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_EOR | 0x800 | 0x8000 | MSG_CMSG_CLOEXEC):
        return -EOPNOTSUPP
    if sk.type == SOCK_SEQPACKET:
        if sk.peer is None:
            return -ENOTCONN
        if namelen:
            return -EOPNOTSUPP
    elif namelen:
        if addr is None:
            return -EOPNOTSUPP if sk.peer is None else -EISCONN
        err = unix_bind.unix_validate_addr(addr)
        if err:
            return err
    elif sk.peer is None:
        return -ENOTCONN
    if sk.may_passcred() and sk.addr is None:
        err = unix_bind.unix_autobind(k, sk)
        if err:
            return err
    if total > sk.sndbuf - 32:
        return -EMSGSIZE
    if addr is not None and namelen:
        other = unix_bind.unix_find_other(k, task, addr, sk)
        if isinstance(other, int):
            return other
        if other.peer is not None and other.peer is not sk:
            return -E.EPERM                  # unix_may_send: it is connected elsewhere
    else:
        other = sk.peer
    if other is None:
        return -ENOTCONN
    # (the dgram path sends no SIGPIPE, seqpacket included: plain EPIPE)
    if sk.type == SOCK_SEQPACKET and (sk.shutdown & SEND_SHUTDOWN):
        return -E.EPIPE
    if other.dead:
        if sk.type == SOCK_SEQPACKET:
            return -E.EPIPE
        if sk.peer is other:
            sk.peer = None                   # unix_dgram_disconnected
            return -ECONNREFUSED
        return -ECONNREFUSED                 # (a named target that died: no longer found)
    if other.shutdown & RCV_SHUTDOWN:
        return -E.EPIPE
    if other is not sk and other.peer is not sk and len(other.rq) > other.max_backlog:
        # unix_recvq_full: a receiver that is not our peer holds max_dgram_qlen messages
        if nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, other.peer_wait, "unix_wait_for_peer")
        return BLOCK
    if sk.wmem >= sk.sndbuf:
        if nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, sk.wq, "unix_dgram_sendmsg")
        return BLOCK
    skb = alloc_skb(_gather(task, vec, 0, total), sk, scm[0] if scm is not None else None,
                    _skb_creds(task, sk, other, scm))
    if skb is None:
        return -ENOBUFS
    other.rq.append(skb)
    cpu.charge(k.cost.pipe_op)
    k.sched.wake_queue(other.wq, cpu.now)
    return total


# ---- receiving -------------------------------------------------------------------------
def _consume(k: "Kernel", cpu, sk: UnixSocket, skb: Skb) -> None:
    sk.rq.remove(skb)
    free_skb(skb)
    k.sched.wake_queue(skb.owner.wq, cpu.now)      # unix_write_space
    if sk.peer_wait.waiters:
        k.sched.wake_queue(sk.peer_wait, cpu.now)  # a sender waiting for room in our queue


def _take_fds(skb: Skb, peek: bool) -> list[File] | None:
    """unix_detach_fds (the skb's references move to the receiver) or, on MSG_PEEK,
    unix_peek_fds (new references: the skb keeps its own)."""
    fds = skb.fds
    if not fds:
        return None
    if peek:
        for f in fds:
            f.refs += 1
        return list(fds)
    skb.fds = None
    _uninflight(fds)
    return fds


def _uninflight(fds: list[File] | None) -> None:
    """unix_notinflight: the files left an skb (received, or the skb was freed)."""
    for f in fds or ():
        if isinstance(f, UnixSocket):
            f.inflight -= 1


def _held_skbs(sk: "UnixSocket") -> list[Skb]:
    """The skbs whose files a socket keeps alive: its own receive queue and, for a listener,
    those of the connections it has not accepted yet (Linux's GC makes an embryo's in-flight
    files edges of its listener: the embryo is reachable only through it)."""
    out = list(sk.rq)
    for embryo in sk.acceptq:
        out += embryo.rq
    return out


def unix_gc(start: "UnixSocket") -> list[WaitQueue]:
    """unix_gc: free the sockets that only in-flight skbs hold, when those skbs sit in the queues
    of such sockets themselves (a cycle no descriptor reaches: a socket sent over itself, two
    sockets sent to each other, then closed).

    The candidates are the sockets reachable from ``start`` through the files queued skbs carry
    whose every reference is in flight (file count == inflight).  A candidate referenced by an
    skb outside the candidates' queues is alive, and so is whatever it reaches; the rest is
    garbage: their queued skbs lose their files, which closes them."""
    seen: dict[int, UnixSocket] = {}
    todo = [start]
    while todo:
        sk = todo.pop()
        if id(sk) in seen or sk.dead or sk.inflight == 0 or sk.refs != sk.inflight:
            continue
        seen[id(sk)] = sk
        for skb in _held_skbs(sk):
            todo += [f for f in skb.fds or () if isinstance(f, UnixSocket)]
    if not seen:
        return []
    internal: dict[int, int] = {}
    for sk in seen.values():
        for skb in _held_skbs(sk):
            for f in skb.fds or ():
                if id(f) in seen:
                    internal[id(f)] = internal.get(id(f), 0) + 1
    alive = [sk for sk in seen.values() if sk.inflight > internal.get(id(sk), 0)]
    live: set[int] = set()
    while alive:
        sk = alive.pop()
        if id(sk) in live:
            continue
        live.add(id(sk))
        for skb in _held_skbs(sk):
            alive += [f for f in skb.fds or () if id(f) in seen]
    garbage = [sk for key, sk in seen.items() if key not in live]
    files: list[File] = []
    for sk in garbage:
        for skb in _held_skbs(sk):
            if skb.fds:
                _uninflight(skb.fds)
                files += skb.fds
                skb.fds = None
    return drop_files(files)


def _gc_on_close(f: File, table: Any) -> list[WaitQueue]:
    """A descriptor of a unix socket closed and what holds it now is only in flight: collect
    (Linux runs unix_gc from unix_release_sock and before a send when much is in flight)."""
    if isinstance(f, UnixSocket) and f.inflight and f.refs == f.inflight:
        return unix_gc(f)
    return []


def unix_recv(k: "Kernel", cpu, task, sk: UnixSocket, vec, flags, meta: RecvMeta | None) -> tuple[Any, int]:
    """(return value, msg_flags).  ``meta`` collects the sender's address, credentials and
    files for recvmsg/recvfrom; without it (read, readv) received files are closed again."""
    cpu.charge(k.cost.syscall_body)
    nonblock = sk.nonblock or bool(flags & MSG_DONTWAIT)
    total = _iov_total(vec)
    if flags & MSG_OOB:
        if sk.type != SOCK_STREAM:
            return -EOPNOTSUPP, 0
        return _unix_stream_recv_urg(k, cpu, task, sk, vec, total, flags)
    own = meta if meta is not None else RecvMeta()
    if sk.type == SOCK_STREAM:
        got = _unix_stream_recv(k, cpu, task, sk, vec, total, flags, nonblock, own)
    else:
        got = _unix_dgram_recv(k, cpu, task, sk, vec, total, flags, nonblock, own)
    if meta is None and own.fds:
        for wq in drop_files(own.fds):             # scm_destroy: nobody takes them
            k.sched.wake_queue(wq, cpu.now)
    return got


def _unix_stream_recv_urg(k: "Kernel", cpu, task, sk, vec, total, flags) -> tuple[Any, int]:
    """unix_stream_recv_urg: the pending urgent byte (EINVAL when there is none); read, not
    peeked, it leaves the queue at once with the files it carried (Linux keeps an emptied skb
    until the normal read passes it, which no caller can tell apart)."""
    skb = sk.oob_skb
    if skb is None:
        return -E.EINVAL, 0
    if total:
        _scatter(task, vec, bytes(skb.data[:1]))
    if not flags & MSG_PEEK:
        _drop_oob(k, cpu, sk, skb)
    return min(total, 1), MSG_OOB


def _drop_oob(k: "Kernel", cpu, sk, skb: Skb) -> None:
    """The urgent skb leaves the queue unread by a normal read (or read by MSG_OOB): the mark
    is gone and the files it carried are let go."""
    sk.oob_skb = None
    _consume(k, cpu, sk, skb)
    fds, skb.fds = skb.fds, None
    _uninflight(fds)
    for wq in drop_files(fds):
        k.sched.wake_queue(wq, cpu.now)


def _unix_stream_recv(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock, meta: RecvMeta) -> tuple[Any, int]:
    """unix_stream_read_generic: copy across skbs; wait until at least one byte (or, with
    MSG_WAITALL, the whole length) is there, the peer shut down, or an error.  A read stops
    after the skb that brought files, and (SO_PASSCRED) never joins two writers' bytes."""
    if sk.peer is None:
        return -E.EINVAL, 0                        # not TCP_ESTABLISHED
    if total == 0:
        return 0, 0
    target = total if flags & MSG_WAITALL else 1
    avail = sum(len(s.data) for s in sk.rq if s is not sk.oob_skb)   # (the urgent byte is not inline)
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
    peek = bool(flags & MSG_PEEK)
    first = True
    for skb in list(sk.rq):
        if copied >= total:
            break
        if skb is sk.oob_skb:
            # manage_oob: a read stops at the mark; one that starts there passes over the
            # urgent byte, which (without SO_OOBINLINE) a normal read never returns
            if copied:
                break
            if not peek:
                _drop_oob(k, cpu, sk, skb)
            continue
        if sk.may_passcred():
            if not first and skb.creds != meta.creds:
                break                              # never glue messages from different writers
            meta.creds = skb.creds
        if first:
            meta.addr = skb.owner.addr             # the address is copied just once
            first = False
        take = min(len(skb.data), total - copied)
        out += skb.data[:take]
        copied += take
        fds = _take_fds(skb, peek)
        if fds:
            meta.fds = fds
        if not peek:
            del skb.data[:take]
            if skb.data:
                break
            _consume(k, cpu, sk, skb)
        if fds:
            break
    _scatter(task, vec, bytes(out))
    return copied, 0


def _unix_dgram_recv(k: "Kernel", cpu, task, sk, vec, total, flags, nonblock, meta: RecvMeta) -> tuple[Any, int]:
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
    meta.addr = skb.owner.addr
    meta.creds = skb.creds
    meta.fds = _take_fds(skb, bool(flags & MSG_PEEK))
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


def move_addr_to_user(task, kaddr: bytes, uaddr: int, ulen_ptr: int) -> int:
    """move_addr_to_user: as much of the address as the user's length allows, and the whole
    length written back (a negative user length is EINVAL)."""
    n = int.from_bytes(task.mm.read(ulen_ptr, 4), "little", signed=True)
    if n < 0:
        return -E.EINVAL
    n = min(n, len(kaddr))
    if n:
        task.mm.write(uaddr, kaddr[:n])
    task.mm.write_u32(ulen_ptr, len(kaddr))
    return 0


def sock_name(sk: UnixSocket) -> bytes:
    """unix_getname's answer: the bound address, or just sun_family for an unnamed socket."""
    return sk.addr if sk.addr is not None else AF_UNIX.to_bytes(2, "little")


def _unix_getname(k: "Kernel", cpu, task, fd, addr, addrlen, peer: bool) -> int:
    """unix_getname: an unbound socket's name is just sun_family (2 bytes); getpeername of
    an unconnected socket is ENOTCONN."""
    sk = _sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    if peer and (sk.peer is None or (sk.connection_based() and sk.peer.dead)):
        return -ENOTCONN
    return move_addr_to_user(task, sock_name(sk.peer if peer else sk), addr, addrlen)


# ---- connection set-up (unix_listen, unix_stream_connect, unix_dgram_connect, unix_accept) ---
SOMAXCONN = 4096                 # net.core.somaxconn


def unix_listen(k: "Kernel", cpu, task, sk: UnixSocket, backlog: int) -> int:
    """__sys_listen + unix_listen: stream and seqpacket only (EOPNOTSUPP), bound (EINVAL),
    not connected (EINVAL); the backlog is clamped to somaxconn, and a larger one lets
    waiting connect()s try again."""
    backlog &= 0xFFFFFFFF
    if backlog > SOMAXCONN:                        # (a negative int is a huge unsigned one)
        backlog = SOMAXCONN
    if not sk.connection_based():
        return -EOPNOTSUPP
    if sk.addr is None or (sk.peer is not None and not sk.listening):
        return -E.EINVAL
    if backlog > sk.max_backlog and sk.peer_wait.waiters:
        k.sched.wake_queue(sk.peer_wait, cpu.now)
    sk.max_backlog = backlog
    sk.listening = True
    sk.creds = _peer_identity(task)                # init_peercred at listen
    return 0


def _peer_identity(task) -> tuple[int, int, int]:
    """init_peercred: what SO_PEERCRED shows the other end: pid and effective ids."""
    c = cred_of(task)
    return (task.tgid, c.euid, c.egid)


def unix_stream_connect(k: "Kernel", cpu, task, sk: UnixSocket, raw: bytes) -> Any:
    """unix_stream_connect: find the listener, wait (or EAGAIN) while its accept queue is
    over the backlog, then make the server-side socket, connected to us, and queue it."""
    err = unix_bind.unix_validate_addr(raw)
    if err:
        return err
    if sk.may_passcred() and sk.addr is None:
        err = unix_bind.unix_autobind(k, sk)
        if err:
            return err
    other = unix_bind.unix_find_other(k, task, raw, sk)
    if isinstance(other, int):
        return other
    if not other.listening or other.shutdown & RCV_SHUTDOWN:
        return -ECONNREFUSED
    if len(other.acceptq) > other.max_backlog:
        if sk.nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, other.peer_wait, "unix_wait_for_peer")
        return BLOCK
    if sk.listening:
        return -E.EINVAL
    if sk.peer is not None:
        return -EISCONN
    newsk = _new_sock(k, cpu, task, sk.type, 0, sk.net)   # (in the connecting socket's namespace)
    newsk.embryo = True
    newsk.creds = _peer_identity(task)              # the server side's peer is us
    newsk.peercred = _peer_identity(task)
    newsk.addr = other.addr                         # the accepted socket has the listener's name
    newsk.peer, sk.peer = sk, newsk
    sk.peercred = other.creds                       # copy_peercred from the listener
    other.acceptq.append(newsk)
    cpu.charge(k.cost.pipe_op)
    k.sched.wake_queue(other.wq, cpu.now)           # sk_data_ready on the listener
    return 0


def unix_dgram_connect(k: "Kernel", cpu, task, sk: UnixSocket, raw: bytes) -> Any:
    """unix_dgram_connect: AF_UNSPEC disconnects; otherwise the named socket becomes the one
    we send to (EPERM when it is connected to someone else)."""
    if len(raw) < 2:
        return -E.EINVAL
    if int.from_bytes(raw[:2], "little") == 0:      # AF_UNSPEC
        sk.peer = None
        return 0
    err = unix_bind.unix_validate_addr(raw)
    if err:
        return err
    if sk.may_passcred() and sk.addr is None:
        err = unix_bind.unix_autobind(k, sk)
        if err:
            return err
    other = unix_bind.unix_find_other(k, task, raw, sk)
    if isinstance(other, int):
        return other
    if other.peer is not None and other.peer is not sk:
        return -E.EPERM
    sk.peer = other
    sk.peercred = other.creds
    return 0


def unix_accept(k: "Kernel", cpu, task, sk: UnixSocket, flags: int) -> Any:
    """unix_accept + __sys_accept4's descriptor: the oldest pending connection, waiting for
    one unless the listener (or the call) is non-blocking.  The descriptor comes before the
    connection leaves the queue, so EMFILE loses nothing."""
    if not sk.connection_based():
        return -EOPNOTSUPP
    if not sk.listening:
        return -E.EINVAL
    if not sk.acceptq:
        if sk.shutdown & RCV_SHUTDOWN:
            return -E.EINVAL
        if sk.nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, sk.wq, "unix_accept")
        return BLOCK
    newsk = sk.acceptq[0]
    fd = task.files.install(newsk, cloexec=bool(flags & SOCK_CLOEXEC))
    if fd < 0:
        return fd
    sk.acceptq.popleft()
    newsk.embryo = False
    newsk.nonblock = bool(flags & SOCK_NONBLOCK)
    newsk.passcred = newsk.passcred or sk.passcred   # unix_sock_inherit_flags
    newsk.passpidfd = newsk.passpidfd or sk.passpidfd
    if sk.peer_wait.waiters:
        k.sched.wake_queue(sk.peer_wait, cpu.now)
    cpu.charge(k.cost.pipe_op)
    return fd


FdTable.close_hooks.append(_gc_on_close)
