"""The guest's view of the file system: a confined root directory and Linux's path walk.

Mirrors fs/namei.c's ``link_path_walk``/``walk_component``: a path is taken one component at a
time from the root (absolute) or a starting directory (relative, ``AT_FDCWD`` or a dirfd);
``.`` stays, ``..`` goes up but never above the root (as ``follow_dotdot`` stops at the process
root), and a symlink is followed by splicing its target into the rest of the walk: an absolute
target restarts at the *guest* root, never at the host's.  That is the whole confinement: emukern
reads symlinks itself (``os.readlink``) and never hands the host a path with ``..`` or a link in
it, so every host path it touches is ``root/<components>`` with each component a plain name.

Two synthetic trees are mounted over the root, as a distribution mounts procfs and devtmpfs:
``/proc`` (procfs.py) and ``/dev`` (null, zero, urandom, random).  Without ``--root`` the root is
an empty directory holding only those mount points, so a run without a root stays hermetic.

Host objects other than regular files, directories and symlinks (FIFOs, sockets, device nodes
inside the root) are shown but cannot be opened or executed (EACCES), as on a ``nodev`` mount:
nothing the guest does can make emukern block on a host FIFO or read a host device.
"""
from __future__ import annotations

import os
import stat as st
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from emukern.errors import ConfigError
from emukern.kernel import errno as E
from emukern.kernel.fs import ELOOP, ENAMETOOLONG, MAXSYMLINKS, PATH_MAX

if TYPE_CHECKING:
    from emukern.kernel.task import Task

# file types (include/uapi/linux/stat.h) and getdents64 d_type values
S_IFMT, S_IFSOCK, S_IFLNK, S_IFREG = 0o170000, 0o140000, 0o120000, 0o100000
S_IFBLK, S_IFDIR, S_IFCHR, S_IFIFO = 0o060000, 0o040000, 0o020000, 0o010000
DT_OF_MODE = {S_IFIFO: 1, S_IFCHR: 2, S_IFDIR: 4, S_IFBLK: 6, S_IFREG: 8, S_IFLNK: 10, S_IFSOCK: 12}

ROOT_DEV, PROC_DEV, DEV_DEV = 0x801, 0x16, 0x5    # st_dev of the root, procfs and devtmpfs


@dataclass
class Node:
    """A resolved name (a dentry+inode): where it is in the guest and what backs it.

    ``host`` is set for objects of the root directory; synthetic objects carry ``mode`` and the
    callables that make their contents (``content``), children (``children``) or link target
    (``target``)."""

    path: str                              # absolute guest path, normalised
    mode: int                              # st_mode (type and permission bits)
    host: str | None = None                # host path inside the root (never outside)
    size: int = 0
    dev: int = ROOT_DEV
    rdev: int = 0
    target: Callable[[], str] | None = None          # symlink target (synthetic)
    children: Callable[[], dict[str, "Node"]] | None = None
    content: Callable[[], bytes] | None = None       # a synthetic regular file's bytes
    opener: Callable[[int], Any] | None = None       # a synthetic file with its own File class
    extra: dict[str, Any] = field(default_factory=dict)
    created: bool = False                  # just made by this open's O_CREAT (O_EXCL is satisfied)

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
        return os.fsdecode(os.readlink(self.host))


def _join(parent: str, name: str) -> str:
    return ("/" if parent == "/" else parent + "/") + name


class Vfs:
    """The mount table of one machine: the root directory (or none) with /proc and /dev on top."""

    def __init__(self, root: str | None, writable: bool, synthetic: dict[str, Callable[[], Node]]) -> None:
        self.root = os.path.realpath(root) if root else None
        self.writable = writable and root is not None
        self.synthetic = synthetic           # mount point ("/proc") -> its root node factory
        # the host's clock when this machine booted: only a threshold (fs/meta.py apply_meta),
        # never a time the guest sees: a root object whose host ctime is later was changed
        # during the run, and its host times (the host's clock) are not reported
        self.host_t0 = time.time_ns()

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
    def root_node(self) -> Node:
        return Node("/", S_IFDIR | 0o755, host=self.root)

    def _host_node(self, path: str, host: str) -> Node | None:
        try:
            s = os.lstat(host)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:
            return None
        mode = s.st_mode
        if st.S_ISREG(mode) or st.S_ISDIR(mode) or st.S_ISLNK(mode):
            return Node(path, mode & (S_IFMT | 0o7777), host=host, size=s.st_size if not st.S_ISDIR(mode) else 4096)
        # FIFOs, sockets, device nodes: visible, never opened (see the module docstring)
        return Node(path, mode & (S_IFMT | 0o7777), host=host, size=0, extra={"special": True})

    def child(self, parent: Node, name: str) -> Node | None:
        """lookup of one component in a directory (``d_alloc_parallel`` + ``->lookup``)."""
        path = _join(parent.path, name)
        if path in self.synthetic:
            return self.synthetic[path]()
        if parent.children is not None:
            return parent.children().get(name)
        if parent.host is None:
            return None                     # the empty virtual root
        return self._host_node(path, os.path.join(parent.host, name))

    def list_dir(self, node: Node) -> list[tuple[str, Node]]:
        """Directory entries in a fixed order (sorted by name): same root, same getdents bytes."""
        out: dict[str, Node] = {}
        if node.children is not None:
            out.update(node.children())
        elif node.host is not None:
            try:
                names = sorted(os.listdir(node.host))
            except OSError:
                names = []
            for n in names:
                c = self._host_node(_join(node.path, n), os.path.join(node.host, n))
                if c is not None:
                    out[n] = c
        for mp, make in self.synthetic.items():
            head, _, tail = mp.rpartition("/")
            if (head or "/") == node.path:
                out[tail] = make()
        return sorted(out.items())

    # ---- the walk ------------------------------------------------------------------------------
    def walk(self, path: str, start: Node, follow: bool = True) -> Node | int:
        """Resolve ``path`` from ``start`` (used for relative paths): the final Node or -errno.

        ``follow=False`` is ``AT_SYMLINK_NOFOLLOW``/``O_NOFOLLOW``/``lstat``: a final symlink is
        returned itself.  A trailing ``/`` demands a directory (and follows a final link)."""
        if not path:
            return -E.ENOENT
        if len(path.encode("utf-8", "surrogateescape")) >= PATH_MAX:
            return -ENAMETOOLONG
        stack: list[Node] = [self.root_node()]
        if not path.startswith("/"):
            stack = self._stack_of(start)
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
                if len(stack) > 1:          # follow_dotdot: never above the root
                    stack.pop()
                continue
            if len(name.encode("utf-8", "surrogateescape")) > 255:
                return -ENAMETOOLONG
            node = self.child(cur, name)
            if node is None:
                return -E.ENOENT
            last = all(c in ("", ".") for c in todo)
            if node.is_link and (not last or follow or must_dir):
                links += 1
                if links > MAXSYMLINKS:
                    return -ELOOP
                try:
                    target = node.link_target()
                except OSError:
                    return -E.ENOENT
                if not target:
                    return -E.ENOENT
                if target.startswith("/"):
                    stack = [self.root_node()]   # an absolute link restarts at the guest root
                todo.extend(reversed(target.split("/")))
                continue
            stack.append(node)
        node = stack[-1]
        if must_dir and not node.is_dir:
            return -E.ENOTDIR
        return node

    def _stack_of(self, node: Node) -> list[Node]:
        """The chain of directories from the root to ``node`` (a cwd or dirfd is absolute)."""
        stack = [self.root_node()]
        if node.path == "/":
            return stack
        for name in node.path.strip("/").split("/"):
            c = self.child(stack[-1], name)
            if c is None:          # removed since: keep the path as it was (Linux keeps the dentry)
                c = Node(_join(stack[-1].path, name), S_IFDIR | 0o755)
            stack.append(c)
        return stack

    def lookup(self, task: "Task", path: str, start: Node | None = None, follow: bool = True) -> Node | int:
        if start is None:
            start = cwd_of(task, self)
        return self.walk(path, start, follow)

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
    node = fs_of(task).cwd
    return node if node is not None else vfs.root_node()
