"""Network namespaces as AF_UNIX sees them <-> net/core/net_namespace.c (copy_net_ns,
setup_net) and the per-namespace parts of net/unix/af_unix.c and net/core/sock.c.

emukern has no network devices, routes or IP sockets, so a network namespace here is what an
AF_UNIX socket can tell apart:

- its own table of abstract names: a name bound in one namespace is not found from another,
  and the same name may be bound once in each.  Pathname sockets are found through the file
  system, which namespaces do not divide, so the path table is one for the machine and a
  path name connects across namespaces, as in Linux;
- the count of sockets of each protocol that live in it (sock_prot_inuse_add), which
  /proc/net/protocols shows for the reader's namespace (fs/procfs.py reads ``inuse``);
- an inode number for /proc/<pid>/ns/net, handed out by the same deterministic counter as
  the other namespaces made at run time (kernel/pid.py's alloc_ns_inum).

A socket keeps the namespace it was made in (sock_net): moving its creator into another one
changes nothing for it, and a connection's server-side socket is made in the namespace of
the socket that connected (unix_stream_connect), whichever the listener's is.
The boot-time namespace (init_net) is made when first asked for and holds the name table
every socket used before namespaces existed, so a program that never unshares runs as before.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import pid as kpid
from emukern.kernel.net import unix_bind

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

# the proto names /proc/net/protocols gives AF_UNIX's two struct proto (af_unix.c):
# SOCK_STREAM sockets count as "UNIX-STREAM", datagram and seqpacket ones as "UNIX"
PROTO_STREAM, PROTO_DGRAM = "UNIX-STREAM", "UNIX"


class Net:
    """``struct net`` reduced to what AF_UNIX uses: the inode number, the abstract name table
    (with the machine's shared path table) and the per-protocol socket counts."""

    def __init__(self, inum: int, names: unix_bind.UnixNames) -> None:
        self.inum = inum
        self.unix_names = names
        self.inuse: dict[str, int] = {PROTO_STREAM: 0, PROTO_DGRAM: 0}


def init_net(k: "Kernel") -> Net:
    """The boot-time namespace; its name table is the one sockets used before any unshare."""
    net = getattr(k, "init_net", None)
    if net is None:
        net = Net(kpid.PROC_NET_INIT_INO, unix_bind.unix_names(k))
        k.init_net = net
    return net


def copy_net_ns(k: "Kernel") -> Net:
    """A fresh namespace: no abstract names, no sockets, a new inode number.  The path table
    is the boot-time one's own dict: path names are found through the file system."""
    names = unix_bind.UnixNames()
    names.by_inode = init_net(k).unix_names.by_inode
    return Net(kpid.alloc_ns_inum(k), names)


def task_net(k: "Kernel", task: Any) -> Net:
    """The namespace ``task`` makes sockets in (nsproxy->net_ns; None: the boot-time one)."""
    net = getattr(task, "net_ns", None)
    return net if net is not None else init_net(k)


def sock_net(k: "Kernel", sk: Any) -> Net:
    """The namespace a socket was made in."""
    net = getattr(sk, "net", None)
    return net if net is not None else init_net(k)


def proto_name(stype: int) -> str:
    return PROTO_STREAM if stype == 1 else PROTO_DGRAM
