"""socket / socketpair / send* / recv* / shutdown / get|setsockopt / names <-> net/socket.c.

Only AF_UNIX exists in emukern, so the family-specific work is kernel/net/unix.py's (socket
creation, the queues, credentials); this module holds the syscall entries and the SOL_SOCKET
options (sk_getsockopt / sk_setsockopt), other levels being EOPNOTSUPP.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.errors import MemoryFault
from emukern.kernel.net import scm as net_scm
from emukern.kernel.net import unix as net_unix
from emukern.kernel.net import unix_bind
from emukern.kernel.net.unix import (
    AF_UNIX,
    ENOPROTOOPT,
    EOPNOTSUPP,
    RCV_SHUTDOWN,
    RMEM_MAX,
    SEND_SHUTDOWN,
    SHUT_RD,
    SHUT_RDWR,
    SO_ACCEPTCONN,
    SO_BROADCAST,
    SO_DOMAIN,
    SO_ERROR,
    SO_KEEPALIVE,
    SO_PASSCRED,
    SO_PASSPIDFD,
    SO_PEERCRED,
    SO_PEERPIDFD,
    SO_PROTOCOL,
    SO_RCVBUF,
    SO_RCVBUFFORCE,
    SO_REUSEADDR,
    SO_SNDBUF,
    SO_SNDBUFFORCE,
    SO_TYPE,
    SOCK_CLOEXEC,
    SOCK_NONBLOCK,
    SOCK_MIN_RCVBUF,
    SOCK_MIN_SNDBUF,
    SOL_SOCKET,
    WMEM_MAX,
)
from emukern.kernel.cred import CAP_NET_ADMIN, capable, cred_of
from emukern.kernel.sysret import BLOCK, s64

ENODATA = 61
BUF_HALF_MAX = 0x7FFFFFFF // 2      # sk_setsockopt's INT_MAX / 2 (so getsockopt shows 2147483646 at most)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_socket(k: "Kernel", cpu, task, family, stype, protocol, *a):
    cpu.charge(k.cost.syscall_body)
    got = net_unix._unix_create(k, cpu, task, family, stype, protocol)
    if isinstance(got, int):
        return got
    stype, flags = got
    return task.files.install(net_unix._new_sock(k, cpu, task, stype, flags), cloexec=bool(flags & SOCK_CLOEXEC))


def sys_socketpair(k: "Kernel", cpu, task, family, stype, protocol, usockvec, *a):
    """__sys_socketpair + unix_socketpair: two sockets connected to each other, each with
    the other's credentials for SO_PEERCRED."""
    cpu.charge(k.cost.syscall_body)
    got = net_unix._unix_create(k, cpu, task, family, stype, protocol)
    if isinstance(got, int):
        return got
    stype, flags = got
    if task.mm.find(usockvec) is None or task.mm.find(usockvec + 7) is None:
        return -E.EFAULT
    a_, b_ = net_unix._new_sock(k, cpu, task, stype, flags), net_unix._new_sock(k, cpu, task, stype, flags)
    a_.peer, b_.peer = b_, a_
    a_.peercred, b_.peercred = b_.creds, a_.creds
    fd1 = task.files.install(a_, cloexec=bool(flags & SOCK_CLOEXEC))
    if fd1 < 0:
        return fd1
    fd2 = task.files.install(b_, cloexec=bool(flags & SOCK_CLOEXEC))
    if fd2 < 0:
        task.files.close(fd1)
        return fd2
    task.mm.write(usockvec, fd1.to_bytes(4, "little") + fd2.to_bytes(4, "little"))
    return 0


# ---- naming and connecting ---------------------------------------------------------------
def sys_bind(k: "Kernel", cpu, task, fd, addr, addrlen, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    cpu.charge(k.cost.syscall_body)
    raw = unix_bind.read_sockaddr(task, addr, addrlen)
    if isinstance(raw, int):
        return raw
    return unix_bind.unix_bind(k, task, sk, raw)


def sys_listen(k: "Kernel", cpu, task, fd, backlog, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    cpu.charge(k.cost.syscall_body)
    return net_unix.unix_listen(k, cpu, task, sk, backlog)


def sys_connect(k: "Kernel", cpu, task, fd, addr, addrlen, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    cpu.charge(k.cost.syscall_body)
    raw = unix_bind.read_sockaddr(task, addr, addrlen)
    if isinstance(raw, int):
        return raw
    if sk.connection_based():
        return net_unix.unix_stream_connect(k, cpu, task, sk, raw)
    return net_unix.unix_dgram_connect(k, cpu, task, sk, raw)


def sys_accept4(k: "Kernel", cpu, task, fd, upeer, upeer_len, flags, *a):
    """__sys_accept4: the flags first (EINVAL), the socket, the connection, then the peer's
    address (a bad pointer there closes the new descriptor again: EFAULT)."""
    flags &= 0xFFFFFFFF
    if flags & ~(SOCK_CLOEXEC | SOCK_NONBLOCK):
        return -E.EINVAL
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    cpu.charge(k.cost.syscall_body)
    newfd = net_unix.unix_accept(k, cpu, task, sk, flags)
    if newfd is BLOCK or newfd < 0 or not upeer:
        return newfd
    newsk = task.files.get(newfd)
    try:
        err = net_unix.move_addr_to_user(task, net_unix.sock_name(newsk.peer) if newsk.peer else
                                         AF_UNIX.to_bytes(2, "little"), upeer, upeer_len)
    except MemoryFault:
        err = -E.EFAULT
    if err:
        _ret, wqs = task.files.close(newfd)
        for wq in wqs:
            k.sched.wake_queue(wq, cpu.now)
        return err
    return newfd


def sys_accept(k: "Kernel", cpu, task, fd, upeer, upeer_len, *a):
    return sys_accept4(k, cpu, task, fd, upeer, upeer_len, 0)


# ---- the data syscalls -----------------------------------------------------------------
def sys_sendto(k: "Kernel", cpu, task, fd, buf, length, flags, addr, addrlen, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    flags &= 0xFFFFFFFF
    length &= 0xFFFFFFFFFFFFFFFF
    if length > 0x7FFFF000:
        length = 0x7FFFF000                        # MAX_RW_COUNT
    namelen = (addrlen & 0xFFFFFFFF) if addr else 0
    raw = None
    if addr:
        raw = unix_bind.read_sockaddr(task, addr, addrlen)
        if isinstance(raw, int):
            return raw
    return net_unix.unix_send(k, cpu, task, sk, [(buf, length)], flags, namelen, raw)


def sys_recvfrom(k: "Kernel", cpu, task, fd, buf, length, flags, addr, addrlen, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    length &= 0xFFFFFFFFFFFFFFFF
    if length > 0x7FFFF000:
        length = 0x7FFFF000
    meta = net_unix.RecvMeta()
    ret, _mf = net_unix.unix_recv(k, cpu, task, sk, [(buf, length)], flags & 0xFFFFFFFF, meta)
    if meta.fds:
        for wq in net_unix.drop_files(meta.fds):   # recvfrom has no control buffer
            k.sched.wake_queue(wq, cpu.now)
    if ret is not BLOCK and ret >= 0 and addr and addrlen:
        # the sender's name (nothing for an unnamed sender), as move_addr_to_user gives it
        err = net_unix.move_addr_to_user(task, meta.addr or b"", addr, addrlen)
        if err:
            return err
    return ret


def sys_sendmsg(k: "Kernel", cpu, task, fd, msg, flags, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    got = net_unix._msghdr(k, task, msg)
    if isinstance(got, int):
        return got
    name, namelen, vec, control, controllen = got
    raw = None
    if name:
        if namelen & 0x80000000:
            return -E.EINVAL
        namelen = min(namelen, unix_bind.SOCKADDR_STORAGE_SIZE)    # copy_msghdr_from_user clamps
        raw = unix_bind.read_sockaddr(task, name, namelen)
        if isinstance(raw, int):
            return raw
    scm = net_scm.scm_send(k, task, control, controllen)
    if isinstance(scm, int):
        return scm
    return net_unix.unix_send(k, cpu, task, sk, vec, flags & 0xFFFFFFFF, namelen if name else 0, raw,
                              scm if scm != (None, None) else None)


def sys_recvmsg(k: "Kernel", cpu, task, fd, msg, flags, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    got = net_unix._msghdr(k, task, msg)
    if isinstance(got, int):
        return got
    name, _namelen, vec, control, controllen = got
    flags &= 0xFFFFFFFF
    meta = net_unix.RecvMeta()
    ret, mflags = net_unix.unix_recv(k, cpu, task, sk, vec, flags, meta)
    if ret is BLOCK or ret < 0:
        return ret
    if name:
        err = net_unix.move_addr_to_user(task, meta.addr or b"", name, msg + 8)
        if err:
            return err
    w = net_scm.CmsgWriter(task, control, controllen)
    for wq in net_scm.scm_recv_unix(k, task, sk, w, meta.creds, meta.fds, flags):
        k.sched.wake_queue(wq, cpu.now)
    task.mm.write(msg + 40, w.used.to_bytes(8, "little"))      # msg_controllen: what was written
    task.mm.write_u32(msg + 48, mflags | w.flags)
    return ret


def sys_shutdown(k: "Kernel", cpu, task, fd, how, *a):
    """unix_shutdown: SHUT_RD/WR/RDWR map to mode 1/2/3; a connected stream or seqpacket
    peer gets the mirror image, and both sides are woken."""
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    how = s64(how)
    if how < SHUT_RD or how > SHUT_RDWR:
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    mode = how + 1
    sk.shutdown |= mode
    k.sched.wake_queue(sk.wq, cpu.now)
    other = sk.peer
    if other is not None and sk.connection_based():
        peer_mode = (RCV_SHUTDOWN if mode & SEND_SHUTDOWN else 0) | (SEND_SHUTDOWN if mode & RCV_SHUTDOWN else 0)
        other.shutdown |= peer_mode
        k.sched.wake_queue(other.wq, cpu.now)
    return 0


def sys_getsockname(k: "Kernel", cpu, task, fd, addr, addrlen, *a):
    return net_unix._unix_getname(k, cpu, task, fd, addr, addrlen, peer=False)


def sys_getpeername(k: "Kernel", cpu, task, fd, addr, addrlen, *a):
    return net_unix._unix_getname(k, cpu, task, fd, addr, addrlen, peer=True)


def sys_getsockopt(k: "Kernel", cpu, task, fd, level, optname, optval, optlen, *a):
    """sk_getsockopt at SOL_SOCKET (unix has no other level: EOPNOTSUPP)."""
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    cpu.charge(k.cost.syscall_body)
    level, optname = s64(level) & 0xFFFFFFFF, s64(optname) & 0xFFFFFFFF
    if level != SOL_SOCKET:
        return -EOPNOTSUPP
    n = int.from_bytes(task.mm.read(optlen, 4), "little", signed=True)
    if n < 0:
        return -E.EINVAL
    if optname == SO_PEERCRED:
        pid, uid, gid = sk.peercred or (0, -1 & 0xFFFFFFFF, -1 & 0xFFFFFFFF)
        v = pid.to_bytes(4, "little") + uid.to_bytes(4, "little") + gid.to_bytes(4, "little")
    elif optname == SO_PEERPIDFD:
        # a pidfd for the process SO_PEERCRED names (ENODATA before there is a peer)
        if sk.peercred is None or not sk.peercred[0]:
            return -ENODATA
        fd = net_scm.pidfd_prepare(k, task, sk.peercred[0])
        if fd < 0:
            return fd
        v = fd.to_bytes(4, "little")
    else:
        vals = {SO_TYPE: sk.type, SO_DOMAIN: AF_UNIX, SO_PROTOCOL: 0, SO_SNDBUF: sk.sndbuf,
                SO_RCVBUF: sk.rcvbuf, SO_PASSCRED: int(sk.passcred), SO_ACCEPTCONN: int(sk.listening),
                SO_PASSPIDFD: int(sk.passpidfd)}
        if optname == SO_ERROR:
            val, sk.err = sk.err, 0
        elif optname in vals:
            val = vals[optname]
        elif optname in sk.opts:
            val = sk.opts[optname]
        elif optname in (SO_KEEPALIVE, SO_BROADCAST, SO_REUSEADDR):
            val = 0
        else:
            return -ENOPROTOOPT
        v = (val & 0xFFFFFFFF).to_bytes(4, "little")
    n = min(n, len(v))
    task.mm.write(optval, v[:n])
    task.mm.write_u32(optlen, n)
    return 0


def sys_setsockopt(k: "Kernel", cpu, task, fd, level, optname, optval, optlen, *a):
    """sk_setsockopt: SO_SNDBUF/SO_RCVBUF store twice the value (clamped to the sysctl
    maximum and the minimum), the flags are stored as given."""
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    cpu.charge(k.cost.syscall_body)
    level, optname = s64(level) & 0xFFFFFFFF, s64(optname) & 0xFFFFFFFF
    if level != SOL_SOCKET:
        return -EOPNOTSUPP
    if s64(optlen) & 0xFFFFFFFF < 4 or (optlen & 0x80000000):
        return -E.EINVAL
    val = int.from_bytes(task.mm.read(optval, 4), "little", signed=True)
    if optname in (SO_SNDBUFFORCE, SO_RCVBUFFORCE) and not capable(task, CAP_NET_ADMIN):
        return -E.EPERM
    if optname in (SO_SNDBUF, SO_SNDBUFFORCE):
        v = min(val & 0xFFFFFFFF, WMEM_MAX) if optname == SO_SNDBUF else max(val, 0)
        # the doubled value must stay an int: at most INT_MAX / 2 before doubling
        sk.sndbuf = max(min(v, BUF_HALF_MAX) * 2, SOCK_MIN_SNDBUF)
        k.sched.wake_queue(sk.wq, cpu.now)
    elif optname in (SO_RCVBUF, SO_RCVBUFFORCE):
        v = min(val & 0xFFFFFFFF, RMEM_MAX) if optname == SO_RCVBUF else max(val, 0)
        sk.rcvbuf = max(min(v, BUF_HALF_MAX) * 2, SOCK_MIN_RCVBUF)
    elif optname == SO_PASSCRED:
        sk.passcred = bool(val)
    elif optname == SO_PASSPIDFD:
        sk.passpidfd = bool(val)
    elif optname in (SO_KEEPALIVE, SO_BROADCAST, SO_REUSEADDR, 5, 10, 11):
        sk.opts[optname] = int(bool(val))
    elif optname in (SO_TYPE, SO_ERROR, SO_PEERCRED, SO_PEERPIDFD, SO_ACCEPTCONN, SO_DOMAIN, SO_PROTOCOL):
        return -ENOPROTOOPT
    else:
        return -ENOPROTOOPT
    return 0
