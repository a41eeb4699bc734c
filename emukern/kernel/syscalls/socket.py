"""socket / socketpair / send* / recv* / shutdown / get|setsockopt / names <-> net/socket.c.

Only AF_UNIX exists in emukern, so the family-specific work is kernel/net/unix.py's (socket
creation, the queues, credentials); this module holds the syscall entries and the SOL_SOCKET
options (sk_getsockopt / sk_setsockopt), other levels being EOPNOTSUPP.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.net import unix as net_unix
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
    SO_PEERCRED,
    SO_PROTOCOL,
    SO_RCVBUF,
    SO_RCVBUFFORCE,
    SO_REUSEADDR,
    SO_SNDBUF,
    SO_SNDBUFFORCE,
    SO_TYPE,
    SOCK_CLOEXEC,
    SOCK_MIN_RCVBUF,
    SOCK_MIN_SNDBUF,
    SOL_SOCKET,
    WMEM_MAX,
)
from emukern.kernel.sysret import BLOCK, s64

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


# ---- the syscalls ----------------------------------------------------------------------
def sys_sendto(k: "Kernel", cpu, task, fd, buf, length, flags, addr, addrlen, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    flags &= 0xFFFFFFFF
    length &= 0xFFFFFFFFFFFFFFFF
    if length > 0x7FFFF000:
        length = 0x7FFFF000                        # MAX_RW_COUNT
    namelen = (addrlen & 0xFFFFFFFF) if addr else 0
    if addr and namelen > 110:
        return -E.EINVAL
    return net_unix.unix_send(k, cpu, task, sk, [(buf, length)], flags, namelen)


def sys_recvfrom(k: "Kernel", cpu, task, fd, buf, length, flags, addr, addrlen, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    length &= 0xFFFFFFFFFFFFFFFF
    if length > 0x7FFFF000:
        length = 0x7FFFF000
    ret, _mf = net_unix.unix_recv(k, cpu, task, sk, [(buf, length)], flags & 0xFFFFFFFF, None)
    if ret is not BLOCK and ret >= 0 and addr and addrlen:
        task.mm.write_u32(addrlen, 0)              # an unbound sender: no address
    return ret


def sys_sendmsg(k: "Kernel", cpu, task, fd, msg, flags, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    got = net_unix._msghdr(k, task, msg)
    if isinstance(got, int):
        return got
    name, namelen, vec, _control, _controllen = got
    if name and namelen > 110:
        return -E.EINVAL
    return net_unix.unix_send(k, cpu, task, sk, vec, flags & 0xFFFFFFFF, namelen if name else 0)


def sys_recvmsg(k: "Kernel", cpu, task, fd, msg, flags, *a):
    sk = net_unix._sockfd(k, task, fd)
    if isinstance(sk, int):
        return sk
    got = net_unix._msghdr(k, task, msg)
    if isinstance(got, int):
        return got
    name, _namelen, vec, _control, _controllen = got
    ret, mflags = net_unix.unix_recv(k, cpu, task, sk, vec, flags & 0xFFFFFFFF, name)
    if ret is BLOCK or ret < 0:
        return ret
    if name:
        task.mm.write_u32(msg + 8, 0)              # msg_namelen: unbound sender
    task.mm.write(msg + 40, bytes(8))              # msg_controllen: no ancillary data
    task.mm.write_u32(msg + 48, mflags)
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
    else:
        vals = {SO_TYPE: sk.type, SO_DOMAIN: AF_UNIX, SO_PROTOCOL: 0, SO_SNDBUF: sk.sndbuf,
                SO_RCVBUF: sk.rcvbuf, SO_PASSCRED: int(sk.passcred), SO_ACCEPTCONN: 0}
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
    if optname in (SO_SNDBUF, SO_SNDBUFFORCE):
        v = min(val & 0xFFFFFFFF, WMEM_MAX) if optname == SO_SNDBUF else max(val, 0)
        sk.sndbuf = max(v * 2, SOCK_MIN_SNDBUF)
        k.sched.wake_queue(sk.wq, cpu.now)
    elif optname in (SO_RCVBUF, SO_RCVBUFFORCE):
        v = min(val & 0xFFFFFFFF, RMEM_MAX) if optname == SO_RCVBUF else max(val, 0)
        sk.rcvbuf = max(v * 2, SOCK_MIN_RCVBUF)
    elif optname == SO_PASSCRED:
        sk.passcred = bool(val)
    elif optname in (SO_KEEPALIVE, SO_BROADCAST, SO_REUSEADDR, 5, 10, 11):
        sk.opts[optname] = int(bool(val))
    elif optname in (SO_TYPE, SO_ERROR, SO_PEERCRED, SO_ACCEPTCONN, SO_DOMAIN, SO_PROTOCOL):
        return -ENOPROTOOPT
    else:
        return -ENOPROTOOPT
    return 0
