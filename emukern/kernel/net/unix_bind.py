"""AF_UNIX names <-> the naming half of net/unix/af_unix.c (unix_bind, unix_autobind,
unix_find_other).

A socket has one of three kinds of name, or none:
- a path name (``sun_path[0] != 0``): a socket inode made in the guest's file system, so
  ``stat`` shows S_IFSOCK and ``unlink`` takes the name away.  The inode is a host socket node
  (``mknod`` of S_IFSOCK: no host socket is ever bound or listened on) inside the writable root;
  which guest socket is bound to it is this module's table, keyed by the host inode, the way
  Linux finds the socket through the inode (unix_find_socket_byinode) rather than the name.
  A read-only or absent root refuses the name as a read-only file system does (EROFS).
- an abstract name (``sun_path[0] == 0``): only in the table, gone when the socket closes.
  Linux hashes the socket type into the abstract name's bucket, so the same name of a stream
  and of a datagram socket do not meet: the key is (type, name).
- an automatic name (bind with only sun_family, or SO_PASSCRED on an unnamed socket): an
  abstract name of five hex digits.  Linux starts from a random number; emukern counts from 0,
  so a run repeats.

The abstract names are per network namespace (net_namespace.py: each namespace has its own
table, the socket's own namespace is the one searched); the path table is one for the machine.
"""
from __future__ import annotations

import os
import stat as st
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.uapi import AT_FDCWD
from emukern.kernel.fs.vfs import S_IFSOCK, fs_of

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

AF_UNIX = 1
SUN_PATH_OFF = 2                  # offsetof(struct sockaddr_un, sun_path)
SOCKADDR_UN_SIZE = 110            # sizeof(struct sockaddr_un)
SOCKADDR_STORAGE_SIZE = 128       # what move_addr_to_kernel accepts at most
EADDRINUSE, ECONNREFUSED, EPROTOTYPE, ENOSPC = 98, 111, 91, 28


class UnixNames:
    """The machine's AF_UNIX name table (unix_socket_table + the bsd_socket_buckets)."""

    def __init__(self) -> None:
        self.by_inode: dict[tuple[int, int], Any] = {}     # host (st_dev, st_ino) -> socket
        self.abstract: dict[tuple[int, bytes], Any] = {}   # (type, name) -> socket
        self.next_auto = 0                                 # unix_autobind's ordernum

    def release(self, sk: Any) -> None:
        """unix_release_sock's unhash: the name stops finding this socket (a path name's inode
        stays in the file system, as it does in Linux)."""
        key = sk.bound_key
        if key is None:
            return
        table = self.by_inode if key[0] == "path" else self.abstract
        if table.get(key[1]) is sk:
            del table[key[1]]
        sk.bound_key = None


def sock_names(k: "Kernel", sk: Any) -> UnixNames:
    """The name table of the namespace ``sk`` was made in (boot-time: the machine's)."""
    net = getattr(sk, "net", None)
    return net.unix_names if net is not None else unix_names(k)


def unix_names(k: "Kernel") -> UnixNames:
    """The boot-time network namespace's name table, made when the first socket asks for it."""
    names = getattr(k, "unix_names", None)
    if names is None:
        names = UnixNames()
        k.unix_names = names
    return names


def read_sockaddr(task, addr: int, addrlen: int) -> bytes | int:
    """move_addr_to_kernel: a length outside 0..sizeof(sockaddr_storage) is EINVAL before
    anything is read; the bytes are then copied (a bad pointer faults: EFAULT)."""
    n = addrlen & 0xFFFFFFFF
    if n & 0x80000000 or n > SOCKADDR_STORAGE_SIZE:
        return -E.EINVAL
    return bytes(task.mm.read(addr, n)) if n else b""


def unix_validate_addr(raw: bytes) -> int:
    """unix_validate_addr: more than sun_family, at most a whole sockaddr_un, family AF_UNIX."""
    if len(raw) <= SUN_PATH_OFF or len(raw) > SOCKADDR_UN_SIZE:
        return -E.EINVAL
    if int.from_bytes(raw[:2], "little") != AF_UNIX:
        return -E.EINVAL
    return 0


def mkname(raw: bytes) -> tuple[bool, bytes, bytes]:
    """(is_path, the name, the address getsockname reports).  A path is cut at its first NUL
    (unix_mkname_bsd terminates sun_path at the given length, so a full 108-byte path without
    a NUL is still a name), and its reported address counts the NUL; an abstract name is every
    byte given."""
    path = raw[SUN_PATH_OFF:]
    if path[:1] != b"\0":
        path = path.split(b"\0", 1)[0]
        return True, path, raw[:SUN_PATH_OFF] + path + b"\0"
    return False, path, raw


def _host_key(name: str, dir_fd: int) -> tuple[int, int] | None:
    """The (st_dev, st_ino) of the socket inode ``name`` in a held directory (never followed)."""
    try:
        s = os.lstat(name, dir_fd=dir_fd)
    except OSError:
        return None
    if not st.S_ISSOCK(s.st_mode):
        return None
    return (s.st_dev, s.st_ino)


def unix_autobind(k: "Kernel", sk: Any) -> int:
    """unix_autobind: an abstract name "\\0" + five hex digits not yet taken by this type."""
    if sk.addr is not None:
        return 0
    names = sock_names(k, sk)
    for _ in range(0x100000):
        num = names.next_auto
        names.next_auto = (num + 1) & 0xFFFFF
        name = b"\0" + b"%05x" % num
        key = (sk.type, name)
        if key not in names.abstract:
            names.abstract[key] = sk
            sk.addr = AF_UNIX.to_bytes(2, "little") + name
            sk.bound_key = ("abstract", key)
            sk.names = names
            return 0
    return -ENOSPC


def unix_bind(k: "Kernel", task, sk: Any, raw: bytes) -> int:
    """unix_bind: sun_family alone autobinds; then a path name makes the socket inode
    (EADDRINUSE when the name exists, EINVAL when the socket already has a name) and an
    abstract name takes its table slot."""
    if len(raw) == SUN_PATH_OFF and int.from_bytes(raw, "little") == AF_UNIX:
        return unix_autobind(k, sk)
    err = unix_validate_addr(raw)
    if err:
        return err
    is_path, name, addr = mkname(raw)
    names = sock_names(k, sk)
    if not is_path:
        if sk.addr is not None:
            return -E.EINVAL
        key = (sk.type, name)
        if key in names.abstract:
            return -EADDRINUSE
        names.abstract[key] = sk
        sk.addr, sk.bound_key, sk.names = addr, ("abstract", key), names
        return 0
    return _bind_path(k, task, sk, os.fsdecode(name), addr, names)


def _bind_path(k: "Kernel", task, sk: Any, path: str, addr: bytes, names: UnixNames) -> int:
    """unix_bind_bsd: create the name first (it must not exist: EADDRINUSE), then find the
    socket already named (EINVAL, and the new inode goes again)."""
    pn = fs_namei.lookup_parent(k, task, AT_FDCWD, path)
    if isinstance(pn, int):
        return pn
    parent, last = pn
    if k.vfs.child(parent, last) is not None:
        return -EADDRINUSE
    hdir = fs_namei.new_name_dir(k, parent)   # the parent as a held directory, never a path
    if isinstance(hdir, int):
        return hdir
    mode = S_IFSOCK | (0o777 & ~fs_of(task).umask)      # the socket inode's mode less the umask
    try:
        os.mknod(last, mode, dir_fd=hdir.fd)
    except FileExistsError:
        return -EADDRINUSE
    except OSError as e:
        return -(e.errno or E.EACCES)
    if sk.addr is not None:
        os.unlink(last, dir_fd=hdir.fd)
        return -E.EINVAL
    key = _host_key(last, hdir.fd)
    if key is None:                 # the host took the node away under us
        return -E.ENOENT
    names.by_inode[key] = sk        # (a socket whose name was unlinked may have had this inode)
    sk.addr, sk.bound_key, sk.names = addr, ("path", key), names
    return 0


def unix_find_other(k: "Kernel", task, raw: bytes, sk: Any) -> Any:
    """unix_find_other: the socket a (validated) address names, or -errno: a missing path
    ENOENT (or whatever the walk says), a path that is no socket or has none bound
    ECONNREFUSED, one of another type EPROTOTYPE; an abstract name that nobody holds for this
    type ECONNREFUSED.  Abstract names are looked for in the namespace of ``sk``, the socket
    connecting or sending; a path name's socket may live in any namespace."""
    stype = sk.type
    is_path, name, _addr = mkname(raw)
    names = sock_names(k, sk)
    if not is_path:
        other = names.abstract.get((stype, name))
        return other if other is not None else -ECONNREFUSED
    node = fs_namei.path_lookup(k, task, AT_FDCWD, os.fsdecode(name))
    if isinstance(node, int):
        return node
    if node.kind != S_IFSOCK or node.host is None:
        return -ECONNREFUSED
    key = _host_key(node.host.name, node.host.dir.fd)
    other = names.by_inode.get(key) if key is not None else None
    if other is None:
        return -ECONNREFUSED
    if other.type != stype:
        return -EPROTOTYPE
    return other
