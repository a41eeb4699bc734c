"""The guest's view of the file system: a confined root directory and Linux's path walk.

Mirrors fs/namei.c's ``link_path_walk``/``walk_component``: a path is taken one component at a
time from the root (absolute) or a starting directory (relative, ``AT_FDCWD`` or a dirfd);
``.`` stays, ``..`` goes up but never above the root (as ``follow_dotdot`` stops at the process
root), and a symlink is followed by splicing its target into the rest of the walk: an absolute
target restarts at the *guest* root, never at the host's.

How the confinement holds against a guest that renames directories under its own feet: emukern
never hands the host a path of more than one component.  Every host object is reached from a
*held directory handle* (``HostDir``: an ``O_PATH|O_DIRECTORY`` descriptor, which names the
directory itself, not the path it had, so it follows renames as a dentry does) plus one plain
name, with ``O_NOFOLLOW``/``AT_SYMLINK_NOFOLLOW`` semantics (``openat2``'s RESOLVE_BENEATH done
by hand): the root's handle is opened once at boot, and every other handle is opened from its
parent's handle by one name, refusing a symlink (``O_NOFOLLOW|O_DIRECTORY``).  So a handle is
always a directory the guest's walk reached inside the root; guest symlinks are read by emukern
(``readlink``) and resolved by this walk, never by the host kernel; ``..`` is never sent to the
host (it pops the walk's stack, or re-walks the parent's guest path from the root).  The cwd and
every open directory hold their ``HostDir``; equal directories share one (keyed by the host
inode), so the host descriptors emukern holds are bounded by the guest's open files.

Two synthetic trees are mounted over the root, as a distribution mounts procfs and devtmpfs:
``/proc`` (procfs.py) and ``/dev`` (null, zero, urandom, random).  Without ``--root`` the root is
an empty directory holding only those mount points, so a run without a root stays hermetic.

A tmpfs or ramfs the guest mounts (mount.py) is a third kind: a private host directory whose
held handle is the mount's root.  Each mount namespace has its own table of them, keyed by the
held handle of the directory mounted on; a walk that steps onto such a directory continues in
the mount's root (``_cross``), and ``..`` out of a mount root pops back to the directory the walk
came from, or re-walks the mountpoint's parent by guest path -- the host never sees a ``..``.
A node remembers the namespace it was reached in (``Node.ns``), so a cwd or a dirfd keeps
walking the mounts it was resolved with.

Host objects other than regular files, directories and symlinks (FIFOs, sockets, device nodes
inside the root) are shown but cannot be opened or executed (EACCES), as on a ``nodev`` mount:
nothing the guest does can make emukern block on a host FIFO or read a host device.
"""
from __future__ import annotations

import os
import stat as st
import time
import weakref
import zlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from emukern.errors import ConfigError
from emukern.kernel import errno as E
from emukern.kernel.fs import ELOOP, ENAMETOOLONG, EXDEV, MAXSYMLINKS, PATH_MAX
from emukern.kernel.fs.mount import Mount, MountTables
from emukern.kernel.fs.uapi import (RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS,
                                    RESOLVE_NO_XDEV, RESOLVE_SCOPED)

if TYPE_CHECKING:
    from emukern.kernel.task import Task

# file types (include/uapi/linux/stat.h) and getdents64 d_type values
S_IFMT, S_IFSOCK, S_IFLNK, S_IFREG = 0o170000, 0o140000, 0o120000, 0o100000
S_IFBLK, S_IFDIR, S_IFCHR, S_IFIFO = 0o060000, 0o040000, 0o020000, 0o010000
DT_OF_MODE = {S_IFIFO: 1, S_IFCHR: 2, S_IFDIR: 4, S_IFBLK: 6, S_IFREG: 8, S_IFLNK: 10, S_IFSOCK: 12}

ROOT_DEV, PROC_DEV, DEV_DEV = 0x801, 0x16, 0x5    # st_dev of the root, procfs and devtmpfs


# a host directory handle: names the directory object (follows renames, never resolves a path)
_DIR_HANDLE = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class HostDir:
    """One held host directory descriptor (``O_PATH``), closed when the last Node or open file
    that needs it goes (CPython frees it at the last reference)."""

    __slots__ = ("fd", "key", "__weakref__")

    def __init__(self, fd: int, key: tuple[int, int]) -> None:
        self.fd = fd
        self.key = key            # (st_dev, st_ino): equal directories share one handle

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


class HostRef:
    """Where a root object is on the host: a held parent directory and one plain name in it
    (never a path); a directory's own handle (``own``) is opened when something walks into it,
    lists it, or holds it as a cwd or an open directory."""

    __slots__ = ("dir", "name", "own")

    def __init__(self, hdir: HostDir, name: str, own: HostDir | None = None) -> None:
        self.dir = hdir
        self.name = name          # one component (str with surrogateescape: the raw bytes)
        self.own = own

    def lstat(self) -> os.stat_result:
        return os.lstat(self.name, dir_fd=self.dir.fd)

    def open(self, flags: int, mode: int = 0o777) -> int:
        """openat(parent, name) that never follows a symlink at the name."""
        return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.dir.fd)

    def readlink(self) -> str:
        return os.readlink(self.name, dir_fd=self.dir.fd)

    def host_path(self) -> str:
        """Where the object is now on the host, for messages and tests only (never for access)."""
        base = os.readlink(f"/proc/self/fd/{self.dir.fd}")
        return base if self.name == "." else os.path.join(base, self.name)


@dataclass
class Node:
    """A resolved name (a dentry+inode): where it is in the guest and what backs it.

    ``host`` is set for objects of the root directory; synthetic objects carry ``mode`` and the
    callables that make their contents (``content``), children (``children``) or link target
    (``target``)."""

    path: str                              # absolute guest path, normalised
    mode: int                              # st_mode (type and permission bits)
    host: HostRef | None = None            # the object inside the root (a handle and a name)
    size: int = 0
    dev: int = ROOT_DEV
    rdev: int = 0
    target: Callable[[], str] | None = None          # symlink target (synthetic)
    children: Callable[[], dict[str, "Node"]] | None = None
    content: Callable[[], bytes] | None = None       # a synthetic regular file's bytes
    opener: Callable[[int], Any] | None = None       # a synthetic file with its own File class
    extra: dict[str, Any] = field(default_factory=dict)
    created: bool = False                  # just made by this open's O_CREAT (O_EXCL is satisfied)
    ns: int = 0                            # the mount namespace whose mounts the walk crossed

    @property
    def kind(self) -> int:
        return self.mode & S_IFMT

    @property
    def is_dir(self) -> bool:
        return self.kind == S_IFDIR

    @property
    def is_link(self) -> bool:
        return self.kind == S_IFLNK

    @property
    def ino(self) -> int:
        """A deterministic inode number from the guest path (host inode numbers are host facts)."""
        return zlib.crc32(f"{self.dev}:{self.path}".encode("utf-8", "surrogateescape")) | 1

    def link_target(self) -> str:
        if self.target is not None:
            return self.target()
        assert self.host is not None
        return self.host.readlink()


def _join(parent: str, name: str) -> str:
    return ("/" if parent == "/" else parent + "/") + name


class Vfs:
    """The mount table of one machine: the root directory (or none) with /proc and /dev on top."""

    def __init__(self, root: str | None, writable: bool, synthetic: dict[str, Callable[[], Node]]) -> None:
        self.root = os.path.realpath(root) if root else None
        self.writable = writable and root is not None
        # the held directory handles by host inode (shared: one descriptor per directory)
        self._dirs: "weakref.WeakValueDictionary[tuple[int, int], HostDir]" = weakref.WeakValueDictionary()
        self.root_dir: HostDir | None = None
        if self.root is not None:
            fd = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            s = os.fstat(fd)
            self.root_dir = HostDir(fd, (s.st_dev, s.st_ino))
            self._dirs[self.root_dir.key] = self.root_dir
        self.synthetic = synthetic           # mount point ("/proc") -> its root node factory
        # the host's clock when this machine booted: only a threshold (fs/meta.py apply_meta),
        # never a time the guest sees: a root object whose host ctime is later was changed
        # during the run, and its host times (the host's clock) are not reported
        self.host_t0 = time.time_ns()
        # tmpfs/ramfs the guest mounted, per mount namespace (fs/mount.py)
        self.mounts = MountTables()

    @staticmethod
    def check_root(root: str | None) -> None:
        """--root must name an existing directory (a clear error otherwise, before anything runs)."""
        if root is None:
            return
        p = Path(root)
        if not p.exists():
            raise ConfigError(f"--root {root}: no such directory",
                              hint="give the guest's root directory, e.g. --root /usr/aarch64-linux-gnu")
        if not p.is_dir():
            raise ConfigError(f"--root {root} is not a directory",
                              hint="the guest root is a directory tree (a sysroot), not a file or an image")

    # ---- nodes ---------------------------------------------------------------------------------
    def root_node(self, ns: int = 0) -> Node:
        if self.root_dir is None:
            return Node("/", S_IFDIR | 0o755, ns=ns)
        return Node("/", S_IFDIR | 0o755, host=HostRef(self.root_dir, ".", self.root_dir), ns=ns)

    def mount_root(self, m: Mount, path: str, ns: int) -> Node:
        """The root directory of a guest-mounted file system, reached at the mountpoint ``path``."""
        return Node(path, S_IFDIR | m.mode, host=HostRef(m.root_dir, ".", m.root_dir), size=4096,
                    dev=m.dev, ns=ns, extra={"mount": m, "fsmount": m})

    def _cross(self, node: Node) -> Node:
        """follow_managed: a directory a mount is attached to (in the walker's namespace) is
        replaced by that mount's root, and by the root of a mount stacked on that one."""
        table = self.mounts.table(node.ns)
        if not table or not node.is_dir or node.host is None:
            return node
        for _ in range(64):
            h = self.dir_handle(node)
            m = table.get(h.key) if h is not None else None
            if m is None:
                break
            node = self.mount_root(m, node.path, node.ns)
        return node

    def dir_handle(self, node: Node) -> HostDir | None:
        """The held handle of a host directory (opened from its parent's handle by its one name,
        refusing a symlink; shared with every other holder of the same directory), or None when
        it is gone or is no longer a directory."""
        ref = node.host
        if ref is None:
            return None
        if ref.own is None:
            try:
                fd = ref.open(_DIR_HANDLE)
            except OSError:
                return None
            try:
                s = os.fstat(fd)
            except OSError:
                os.close(fd)
                return None
            key = (s.st_dev, s.st_ino)
            held = self._dirs.get(key)
            if held is not None:
                os.close(fd)
            else:
                held = self._dirs[key] = HostDir(fd, key)
            ref.own = held
        return ref.own

    def _host_node(self, path: str, hdir: HostDir, name: str, parent: Node | None = None) -> Node | None:
        try:
            s = os.lstat(name, dir_fd=hdir.fd)
        except OSError:
            return None
        mode = s.st_mode
        ref = HostRef(hdir, name)
        # (a name inside a guest mount is on that mount's device, and keeps its namespace)
        dev, ns = (parent.dev, parent.ns) if parent is not None else (ROOT_DEV, 0)
        fsm = parent.extra.get("fsmount") if parent is not None else None
        if st.S_ISREG(mode) or st.S_ISDIR(mode) or st.S_ISLNK(mode):
            node = Node(path, mode & (S_IFMT | 0o7777), host=ref,
                        size=s.st_size if not st.S_ISDIR(mode) else 4096, dev=dev, ns=ns,
                        extra={"fsmount": fsm} if fsm is not None else {})
            return self._cross(node) if ns in self.mounts.by_ns else node
        # FIFOs, sockets, device nodes: visible, never opened (see the module docstring)
        return Node(path, mode & (S_IFMT | 0o7777), host=ref, size=0, extra={"special": True},
                    dev=dev, ns=ns)

    def child(self, parent: Node, name: str) -> Node | None:
        """lookup of one component in a directory (``d_alloc_parallel`` + ``->lookup``)."""
        path = _join(parent.path, name)
        if path in self.synthetic or parent.children is not None:
            node = self.synthetic[path]() if path in self.synthetic else parent.children().get(name)
            if node is not None and node.ns != parent.ns:
                # (an absolute link under /proc restarts at the walker's root, in its namespace)
                node = dataclasses.replace(node, ns=parent.ns)
            return node
        hdir = self.dir_handle(parent)
        if hdir is None:
            return None                     # the empty virtual root, or a directory gone since
        return self._host_node(path, hdir, name, parent)

    def list_dir(self, node: Node) -> list[tuple[str, Node]]:
        """Directory entries in a fixed order (sorted by name): same root, same getdents bytes."""
        out: dict[str, Node] = {}
        if node.children is not None:
            out.update(node.children())
        elif node.host is not None:
            hdir = self.dir_handle(node)
            for n in sorted(self.host_names(node)):
                c = self._host_node(_join(node.path, n), hdir, n, node) if hdir is not None else None
                if c is not None:
                    out[n] = c
        for mp, make in self.synthetic.items():
            head, _, tail = mp.rpartition("/")
            if (head or "/") == node.path:
                out[tail] = make()
        return sorted(out.items())

    def dir_names(self, node: Node):
        """Every name in a directory, unordered and read as it goes (getdents sorts a bounded
        window of them per call: file.py's DirFile): the synthetic mount points on it, then its
        own names (a synthetic directory's children, or the host directory's entries)."""
        mounts = set()
        for mp in self.synthetic:
            head, _, tail = mp.rpartition("/")
            if (head or "/") == node.path:
                mounts.add(tail)
        yield from mounts
        if node.children is not None:
            names = node.children().keys()
        elif node.host is not None:
            names = self.host_names(node)
        else:
            return
        for n in names:
            if n not in mounts:
                yield n

    def host_names(self, node: Node):
        """The names in a host directory, read as the host gives them (an iterator: nothing is
        kept); empty when it cannot be read."""
        hdir = self.dir_handle(node)
        if hdir is None:
            return
        try:
            fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=hdir.fd)
        except OSError:
            return
        try:
            with os.scandir(fd) as it:
                for e in it:
                    yield e.name
        except OSError:
            return
        finally:
            os.close(fd)

    # ---- the walk ------------------------------------------------------------------------------
    def walk(self, path: str, start: Node, follow: bool = True, resolve: int = 0) -> Node | int:
        """Resolve ``path`` from ``start`` (used for relative paths): the final Node or -errno.

        ``follow=False`` is ``AT_SYMLINK_NOFOLLOW``/``O_NOFOLLOW``/``lstat``: a final symlink is
        returned itself.  A trailing ``/`` demands a directory (and follows a final link).

        ``resolve`` holds openat2's RESOLVE_* restrictions (0 for every other caller): no
        symlinks at all (ELOOP), no /proc magic links (ELOOP), no mount crossing (EXDEV: a
        mount here is a change of ``dev``, the root's, /proc's or /dev's), or a lookup scoped to
        ``start`` -- BENEATH refuses to leave it (EXDEV), IN_ROOT treats it as ``/``; both refuse
        magic links (EXDEV), whose target is an object a scope cannot check."""
        if not path:
            return -E.ENOENT
        if len(path.encode("utf-8", "surrogateescape")) >= PATH_MAX:
            return -ENAMETOOLONG
        top = start if resolve & RESOLVE_SCOPED else None      # a scoped lookup's own root
        if path.startswith("/"):
            if resolve & RESOLVE_BENEATH:
                return -EXDEV
            stack: list[Node] = [top if top is not None else self.root_node(start.ns)]
        else:
            stack = [start]
        must_dir = path.endswith("/")
        todo = [c for c in reversed(path.split("/"))]
        links = 0
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            cur = stack[-1]
            if not cur.is_dir:
                return -E.ENOTDIR
            if name == "..":
                if top is not None and cur.path == top.path and cur.dev == top.dev:
                    if resolve & RESOLVE_BENEATH:
                        return -EXDEV       # ".." out of the directory it must stay beneath
                    continue                # IN_ROOT: ".." of its root is its root
                if len(stack) > 1:          # follow_dotdot: never above the root
                    if resolve & RESOLVE_NO_XDEV and stack[-2].dev != cur.dev:
                        return -EXDEV
                    stack.pop()
                elif cur.path != "/":
                    up = self._parent_of(cur)
                    if resolve & RESOLVE_NO_XDEV and up.dev != cur.dev:
                        return -EXDEV
                    stack = [up]
                continue
            if len(name.encode("utf-8", "surrogateescape")) > 255:
                return -ENAMETOOLONG
            node = self.child(cur, name)
            if node is None:
                return -E.ENOENT
            if resolve & RESOLVE_NO_XDEV and node.dev != cur.dev:
                return -EXDEV               # into a mount point
            last = all(c in ("", ".") for c in todo)
            if node.is_link and (not last or follow or must_dir):
                links += 1
                if links > MAXSYMLINKS:
                    return -ELOOP
                if resolve & RESOLVE_NO_SYMLINKS:
                    return -ELOOP
                try:
                    target = node.link_target()
                except OSError:
                    return -E.ENOENT
                if not target:
                    return -E.ENOENT
                obj = node.extra.get("object")
                if obj is not None and (resolve & (RESOLVE_NO_MAGICLINKS | RESOLVE_SCOPED)) == 0:
                    stack = [obj]               # nd_jump_link to an inode no name reaches
                    continue
                if resolve and node.extra.get("magic"):
                    jumped = self._jump_link(target, cur, resolve)
                    if isinstance(jumped, int):
                        return jumped
                    stack = [jumped]
                    continue
                if target.startswith("/"):
                    if resolve & RESOLVE_BENEATH:
                        return -EXDEV
                    # an absolute link restarts at the guest root (a scoped lookup's own root)
                    root = top if top is not None else self.root_node(cur.ns)
                    if resolve & RESOLVE_NO_XDEV and root.dev != cur.dev:
                        return -EXDEV
                    stack = [root]
                todo.extend(reversed(target.split("/")))
                continue
            stack.append(node)
        node = stack[-1]
        if must_dir and not node.is_dir:
            return -E.ENOTDIR
        return node

    def _jump_link(self, target: str, cur: Node, resolve: int) -> Node | int:
        """nd_jump_link for a lookup with RESOLVE_* restrictions: a magic link lands on its object
        without walking the names on the way (here: its path walked from the root, unrestricted),
        unless the lookup forbids magic links (ELOOP), is scoped (EXDEV), or the object is on
        another mount than the link's directory under NO_XDEV (EXDEV)."""
        if resolve & RESOLVE_NO_MAGICLINKS:
            return -ELOOP
        if resolve & RESOLVE_SCOPED:
            return -EXDEV
        dest = self.walk(target, self.root_node(cur.ns))
        if isinstance(dest, int):
            return dest
        if resolve & RESOLVE_NO_XDEV and dest.dev != cur.dev:
            return -EXDEV
        return dest

    def _parent_of(self, node: Node) -> Node:
        """``..`` of the directory a walk started in (a cwd or a dirfd): its parent's guest path
        walked again from the root's handle (the path is kept current across renames: namei.py's
        d_move), so ``..`` never asks the host and never leaves the root.  A parent that is
        gone leaves a directory nothing can be found in (ENOENT below it)."""
        up = self.walk(node.path.rpartition("/")[0] or "/", self.root_node(node.ns))
        if isinstance(up, Node) and up.is_dir:
            return up
        return Node(node.path.rpartition("/")[0] or "/", S_IFDIR | 0o755, ns=node.ns)

    def lookup(self, task: "Task", path: str, start: Node | None = None, follow: bool = True,
               resolve: int = 0) -> Node | int:
        if start is None:
            start = cwd_of(task, self)
        return self.walk(path, start, follow, resolve)

    def parent_and_name(self, task: "Task", path: str, start: Node | None = None) -> tuple[Node, str] | int:
        """For create/unlink/mkdir: the parent directory and the last component."""
        head, _, name = path.rstrip("/").rpartition("/")
        if not name:
            return -E.EEXIST if path.startswith("/") else -E.ENOENT
        if path.startswith("/") and not head:
            head = "/"
        parent = self.lookup(task, head, start) if head else (start or cwd_of(task, self))
        if isinstance(parent, int):
            return parent
        if not parent.is_dir:
            return -E.ENOTDIR
        if name == "..":
            return -E.EEXIST
        return parent, name

    def guest_path_of_host(self, host: str) -> str | None:
        """The guest path of a host file inside the root (for /proc/self/exe), or None."""
        if self.root is None:
            return None
        real = os.path.realpath(host)
        if real == self.root:
            return "/"
        if real.startswith(self.root.rstrip("/") + "/"):
            return "/" + real[len(self.root.rstrip("/")) + 1:]
        return None


@dataclass
class FsStruct:
    """struct fs_struct: the working directory and umask, shared by the tasks a clone with
    CLONE_FS made (threads), copied by fork (copy_fs)."""

    cwd: Node | None = None
    umask: int = 0o022


def fs_of(task: "Task") -> FsStruct:
    fs = task.fs
    if fs is None:
        fs = task.fs = FsStruct()        # (the first task)
    return fs


def copy_fs(parent: "Task", child: "Task", share: bool) -> None:
    """copy_process -> copy_fs: CLONE_FS shares the parent's fs_struct, otherwise a copy."""
    pfs = fs_of(parent)
    child.fs = pfs if share else FsStruct(pfs.cwd, pfs.umask)


def cwd_of(task: "Task", vfs: Vfs) -> Node:
    """task->fs->pwd."""
    fs = fs_of(task)
    node = fs.cwd
    ns = task.mnt_ns
    if node is None:
        return vfs.root_node(ns)
    if node.ns != ns:
        # the cwd of a task that moved to another mount namespace (unshare, setns) is the same
        # directory, from then on walked with that namespace's mounts
        node = fs.cwd = dataclasses.replace(node, ns=ns)
    return node
