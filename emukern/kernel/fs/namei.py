"""The path walk of fs/namei.c, and the per-task file-system state that goes with it.

``path_lookup`` (filename_lookup) resolves a user path relative to a dirfd or the task's cwd
inside the guest's root, and ``do_sys_openat`` (do_filp_open) walks, maybe creates, checks and
opens; ``_user_path`` is getname() and ``_entry_at`` finds the parent and last component for
the calls that create or move names (EROFS outside the writable root).  The module also holds
the per-task fs setup: ``fs_init`` mounts the root with /proc and /dev over it, ``fs_init_task``
picks the first process's cwd, ``fs_fork`` is copy_process's cwd/umask part (CLONE_FS), and
``get_next_ino`` is fs/inode.c's batched inode counter for pipes and other pseudo files.
"""
from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING, cast

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.files import SysctlFile, host_fd_admit
from emukern.kernel.fs import ELOOP, ENAMETOOLONG, EROFS, EXDEV, PATH_MAX
from emukern.kernel.fs.file import DirFile, HostFile, VfsFile, file_view
from emukern.kernel.fs.procfs import ProcFs
from emukern.kernel.fs import fifo as fs_fifo
from emukern.kernel.fs.vfs import S_IFIFO, HostDir, Node, Vfs, copy_fs, cwd_of, fs_of
from emukern.kernel.fs.uapi import (
    AT_FDCWD,
    O_ACCMODE,
    O_CLOEXEC,
    O_CREAT,
    O_DIRECTORY,
    O_EXCL,
    O_NOFOLLOW,
    O_PATH,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    RESOLVE_BENEATH,
    RESOLVE_CACHED,
    RESOLVE_IN_ROOT,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    RESOLVE_NO_XDEV,
    _s32,
)
from emukern.machine.cpu_base import Cpu
from emukern.machine.memory import SHARED_ANON

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


LAST_INO_BATCH = 1024
# the open flags an O_PATH descriptor keeps (F_GETFL shows them): it opens nothing, so only the
# ones that shaped its lookup
O_PATH_FLAGS = {a: O_PATH | O_DIRECTORY[a] | O_NOFOLLOW[a] for a in ("arm64", "riscv64")}

def fs_init(k: "Kernel") -> None:
    """Mount the guest root with /proc and /dev over it (the kernel's boot-time mounts)."""
    cfg = k.config
    root = getattr(cfg, "root", None)
    Vfs.check_root(root)
    k.procfs = ProcFs(cast("Kernel", k))
    k.vfs = Vfs(root, bool(getattr(cfg, "root_rw", False)), k.procfs.mounts())


def fs_init_task(k: "Kernel", task) -> None:
    """The first process starts in the guest directory the user is in when the host's working
    directory lies inside --root (as a shell in the root would start it); otherwise at /."""
    guest = k.vfs.guest_path_of_host(os.getcwd()) if k.vfs.root else None
    if guest is not None:
        node = path_lookup(k, task, AT_FDCWD, guest)
        if isinstance(node, Node) and node.is_dir:
            fs_of(task).cwd = node


def fs_fork(k: "Kernel", parent, child, flags: int) -> None:
    """copy_process's file-system part: cwd and umask (CLONE_FS = 0x200 shares them)."""
    copy_fs(parent, child, bool(flags & 0x200))


# ---- path arguments --------------------------------------------------------------------------
def _user_path(k: "Kernel", task, ptr: int) -> str | int:
    """getname(): a NUL-terminated path of at most PATH_MAX bytes, or -EFAULT/-ENAMETOOLONG."""
    if not ptr:
        return -E.EFAULT
    ptr = task.mm.untag(ptr)                  # the tagged address ABI (arm64)
    out = bytearray()
    while len(out) < PATH_MAX:
        m = task.mm.find(ptr + len(out))
        if m is None or "r" not in m.perms:
            return -E.EFAULT
        n = min(PATH_MAX - len(out), m.end - (ptr + len(out)))
        chunk = task.mm.read(ptr + len(out), n)
        z = chunk.find(b"\0")
        if z >= 0:
            out += chunk[:z]
            return out.decode("utf-8", "surrogateescape")
        out += chunk
    return -ENAMETOOLONG


def _start_dir(k: "Kernel", task, dirfd: int) -> Node | int:
    dirfd = _s32(dirfd)
    if dirfd == AT_FDCWD:
        return cwd_of(task, k.vfs)
    f = task.files.get(dirfd)
    if f is None:
        return -E.EBADF
    node = getattr(f, "node", None)
    if node is None or not node.is_dir:
        return -E.ENOTDIR
    return node


def path_lookup(k: "Kernel", task, dirfd: int, path: str, follow: bool = True,
                resolve: int = 0) -> Node | int:
    """filename_lookup: resolve ``path`` for ``task`` (relative to dirfd or its cwd).
    ``resolve``: openat2's RESOLVE_* flags; a scoped one (BENEATH, IN_ROOT) takes its root from
    dirfd even for an absolute path."""
    k.procfs.current = task
    start = None
    if not path.startswith("/") or resolve & RESOLVE_IN_ROOT:
        start = _start_dir(k, task, dirfd)
        if isinstance(start, int):
            return start
    return k.vfs.lookup(task, path, start, follow, resolve)


def _lookup_at(k: "Kernel", task, dirfd: int, path_ptr: int, follow: bool = True,
               empty_ok: bool = False) -> Node | int:
    path = _user_path(k, task, path_ptr)
    if isinstance(path, int):
        return path
    if path == "":
        if not empty_ok:
            return -E.ENOENT
        return _start_dir(k, task, dirfd) if _s32(dirfd) == AT_FDCWD else _fd_node(k, task, dirfd)
    return path_lookup(k, task, dirfd, path, follow)


def _fd_node(k: "Kernel", task, fd: int) -> Node | int:
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    node = getattr(f, "node", None)
    return node if node is not None else -E.EBADF


# ---- open -----------------------------------------------------------------------------------
def do_sys_openat(k: "Kernel", cpu, task, dirfd, path_ptr, flags, mode, resolve: int = 0) -> int:
    """do_filp_open: walk, maybe create, check, then the object's open (``resolve``: openat2's
    RESOLVE_* restrictions on the walk)."""
    arch = k.config.arch
    flags &= 0xFFFFFFFF
    path = _user_path(k, task, path_ptr)
    if isinstance(path, int):
        return path
    cpu.charge(k.cost.syscall_body * 5)
    acc = flags & O_ACCMODE
    want_w = acc in (O_WRONLY, O_RDWR) or bool(flags & O_TRUNC)
    cloexec = bool(flags & O_CLOEXEC)
    node = path_lookup(k, task, dirfd, path, follow=not flags & O_NOFOLLOW[arch], resolve=resolve)
    if node == -E.ENOENT and flags & O_CREAT and resolve:
        # the name is made in its parent: that walk is restricted like the whole path's
        head = path.rstrip("/").rpartition("/")[0] or ("/" if path.startswith("/") else ".")
        parent = path_lookup(k, task, dirfd, head, resolve=resolve)
        if isinstance(parent, int):
            return parent
    if node == -E.ENOENT and flags & O_CREAT:
        made = _create(k, task, dirfd, path, mode)
        if isinstance(made, int):
            return made
        node = made
    if isinstance(node, int):
        return node
    if flags & O_CREAT and flags & O_EXCL and not node.created:
        return -E.EEXIST
    if node.is_link:
        return -ELOOP if not flags & O_PATH else task.files.install(VfsFile(node, flags & O_PATH_FLAGS[arch]), cloexec=cloexec)
    if flags & O_DIRECTORY[arch] and not node.is_dir:
        return -E.ENOTDIR
    if flags & O_PATH:
        return task.files.install(VfsFile(node, flags & O_PATH_FLAGS[arch]), cloexec=cloexec)
    if node.is_dir:
        if want_w or flags & O_CREAT:
            return -E.EISDIR
        parent = k.vfs.lookup(task, node.path + "/..")
        if node.host is not None and k.vfs.dir_handle(node) is None:
            return -E.ENOENT                # gone (or no longer a directory) since the walk
        return task.files.install(DirFile(node, flags, k.vfs, parent if isinstance(parent, Node) else node),
                                  cloexec=cloexec)
    sysctl = node.extra.get("sysctl")
    if sysctl is not None:
        if want_w and not sysctl.mode & 0o200:
            return -E.EACCES
        return task.files.install(SysctlFile(sysctl, acc != O_WRONLY, want_w), cloexec=cloexec)
    if node.host is None:                   # /proc and /dev objects
        if want_w and node.opener is None:
            return -E.EACCES
        opened = k.procfs.open_synthetic(node, flags)
        if isinstance(opened, int):
            return opened                   # the object refused the open (a sealed memfd's O_TRUNC)
        return task.files.install(opened, cloexec=cloexec)
    if node.kind == S_IFIFO:
        # a FIFO's host node is only its name: an in-kernel pipe per inode (fs/fifo.py)
        # (a read-only root still opens it for writing: may_open drops O_TRUNC, no EROFS)
        return fs_fifo.fifo_open(k, cpu, task, node, flags, cloexec)
    if node.extra.get("special"):
        return -E.EACCES                    # a host socket/device inside the root: nodev
    if want_w and not k.vfs.writable:
        return -EROFS
    hflags = {0: os.O_RDONLY, O_WRONLY: os.O_WRONLY, O_RDWR: os.O_RDWR}.get(acc, os.O_RDONLY)
    hflags |= os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    if flags & O_TRUNC and want_w:
        hflags |= os.O_TRUNC
    try:
        fd = node.host.open(hflags)         # openat(held parent, name, O_NOFOLLOW)
    except OSError as e:
        if e.errno in (E.EMFILE, E.ENFILE):
            return -E.ENFILE                # the host itself is out of descriptors
        return -(e.errno or E.EACCES)
    if not host_fd_admit(fd):
        return -E.ENFILE                    # the machine holds fs.file-max host descriptors
    if node.created or hflags & os.O_TRUNC:   # a new file, or one O_TRUNC emptied: its times change
        from emukern.kernel.fs import meta as fs_meta     # (meta imports this module)
        if node.created:
            parent = k.vfs.walk(os.path.dirname(node.path) or "/", k.vfs.root_node(node.ns))
            if isinstance(parent, Node):
                fs_meta.file_update_time(k, cpu, parent)
        fs_meta.file_update_time(k, cpu, node, created=node.created)
    return task.files.install(HostFile(node, flags, fd), cloexec=cloexec)


# ---- openat2 ---------------------------------------------------------------------------------
OPEN_HOW_SIZE_VER0 = 24                 # struct open_how {u64 flags; u64 mode; u64 resolve}
PAGE_SIZE = 4096
# every O_* flag open knows (the same bits on both arches: arm64 only swaps four of them)
VALID_OPEN_FLAGS = 0x7FFFC3
O_TMPFILE_BIT = 0x400000                # __O_TMPFILE (O_TMPFILE is it with O_DIRECTORY)
EOPNOTSUPP = 95
S_IALLUGO = 0o7777
VALID_RESOLVE_FLAGS = (RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH
                       | RESOLVE_IN_ROOT | RESOLVE_CACHED)


def build_open_flags(k: "Kernel", flags: int, mode: int, resolve: int) -> int:
    """build_open_flags' checks of an open_how, which openat2 makes strictly (openat drops unknown
    bits instead): 0 or -EINVAL/-EAGAIN."""
    arch = k.config.arch
    if flags & ~VALID_OPEN_FLAGS or resolve & ~VALID_RESOLVE_FLAGS:
        return -E.EINVAL
    if resolve & RESOLVE_BENEATH and resolve & RESOLVE_IN_ROOT:
        return -E.EINVAL
    if flags & (O_CREAT | O_TMPFILE_BIT):
        if mode & ~S_IALLUGO:
            return -E.EINVAL
    elif mode:
        return -E.EINVAL                # a mode means nothing without a file to create
    if flags & O_TMPFILE_BIT:
        # O_TMPFILE is __O_TMPFILE with O_DIRECTORY, never with O_CREAT, and writable
        if flags & (O_TMPFILE_BIT | O_DIRECTORY[arch] | O_CREAT) != O_TMPFILE_BIT | O_DIRECTORY[arch]:
            return -E.EINVAL
        if (flags & O_ACCMODE) not in (O_WRONLY, O_RDWR):
            return -E.EINVAL
    if flags & O_PATH and flags & ~(O_DIRECTORY[arch] | O_NOFOLLOW[arch] | O_PATH | O_CLOEXEC):
        return -E.EINVAL                # an O_PATH descriptor opens nothing: no other flags
    if resolve & RESOLVE_CACHED and flags & (O_TRUNC | O_CREAT | O_TMPFILE_BIT):
        return -E.EAGAIN                # these may block: never answered from the cache alone
    return 0


def do_sys_openat2(k: "Kernel", cpu, task, dirfd, path_ptr, how_ptr, usize) -> int:
    """openat2: the open_how struct (copy_struct_from_user's size rules), its checks, then the
    walk with its RESOLVE_* restrictions.  A valid O_TMPFILE is EOPNOTSUPP: the root has no
    unnamed-file support (what a filesystem without ->tmpfile answers)."""
    if usize < OPEN_HOW_SIZE_VER0:
        return -E.EINVAL
    if usize > PAGE_SIZE:
        return -E.E2BIG
    try:
        if usize > OPEN_HOW_SIZE_VER0 and any(task.mm.read(how_ptr + OPEN_HOW_SIZE_VER0,
                                                            usize - OPEN_HOW_SIZE_VER0)):
            return -E.E2BIG             # a newer struct whose extra fields this kernel lacks
        flags, mode, resolve = struct.unpack("<3Q", task.mm.read(how_ptr, OPEN_HOW_SIZE_VER0))
    except MemoryFault:
        return -E.EFAULT
    err = build_open_flags(k, flags, mode, resolve)
    if err:
        return err
    if flags & O_TMPFILE_BIT:
        return -EOPNOTSUPP
    return do_sys_openat(k, cpu, task, dirfd, path_ptr, flags, mode, resolve=resolve)


def lookup_parent(k: "Kernel", task, dirfd: int, path: str) -> tuple[Node, str] | int:
    """The directory a new name goes into and the name (fs/namei.c's filename_parentat, the
    first half of filename_create): the walk starts at the root for an absolute path, else at
    ``dirfd`` (AT_FDCWD: the cwd)."""
    start = None if path.startswith("/") else _start_dir(k, task, dirfd)
    if isinstance(start, int):
        return start
    return k.vfs.parent_and_name(task, path, start)


def new_name_dir(k: "Kernel", parent: Node) -> HostDir | int:
    """The held host directory a new name (mkdir, mkfifo, a socket's inode) is made in: -EROFS
    when the root is read-only or ``parent`` is a synthetic directory, -ENOENT when the
    directory went away under the walk.  Never a path: the name goes in with *at calls."""
    if parent.host is None or not k.vfs.writable:
        return -EROFS
    hdir = k.vfs.dir_handle(parent)
    return -E.ENOENT if hdir is None else hdir


def _create(k: "Kernel", task, dirfd: int, path: str, mode: int) -> Node | int:
    pn = lookup_parent(k, task, dirfd, path)
    if isinstance(pn, int):
        return pn
    parent, name = pn
    shm = parent.extra.get("shmfs")
    if shm is not None:                     # /dev/shm: the kernel's tmpfs (fs/shmfs.py)
        return shm.create(name, mode & ~fs_of(task).umask)
    if parent.host is None or not k.vfs.writable:
        return -EROFS if parent.children is None or not k.vfs.writable else -E.EACCES
    hdir = k.vfs.dir_handle(parent)
    if hdir is None:
        return -E.ENOENT                    # the directory went away under the walk
    umask = fs_of(task).umask
    try:
        os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         mode & 0o7777 & ~umask, dir_fd=hdir.fd))
    except OSError as e:
        return -(e.errno or E.EACCES)
    node = k.vfs.child(parent, name)
    if node is None:
        return -E.ENOENT
    node.created = True       # (O_EXCL is satisfied)
    return node


# ---- namespace changes: rename, hard links, symlinks (fs/namei.c) ----------------------------
def _entry_at(k: "Kernel", task, dirfd: int, path_ptr: int, what: str) -> tuple[Node, str] | int:
    """The parent directory and last component of a path to create or move (no final
    symlink is followed), in the writable root: EROFS outside it, EBUSY for '.'/'..' as
    the last component (do_renameat2's LAST_NORM test; link/symlink give EEXIST there)."""
    path = _user_path(k, task, path_ptr)
    if isinstance(path, int):
        return path
    if not path:
        return -E.ENOENT
    last = path.rstrip("/").rpartition("/")[2]
    if last in (".", ".."):
        return -E.EBUSY if what == "rename" else -E.EEXIST
    k.procfs.current = task
    pn = lookup_parent(k, task, dirfd, path)
    if isinstance(pn, int):
        return pn
    parent = pn[0]
    if parent.host is None:
        # /proc, /dev and the empty virtual root are their own (read-only) file systems
        return -EXDEV if what != "symlink" else -E.EACCES
    if not k.vfs.writable:
        return -EROFS
    return pn


def _set_cwd(k: "Kernel", task, node: Node | int) -> int:
    if isinstance(node, int):
        return node
    if not node.is_dir:
        return -E.ENOTDIR
    if node.host is not None and k.vfs.dir_handle(node) is None:
        return -E.ENOENT                  # gone (or replaced by a non-directory) since the walk
    fs_of(task).cwd = node            # task->fs->pwd (shared by CLONE_FS threads): holds the handle
    return 0


def d_move(k: "Kernel", old: str, new: str, exchange: bool = False) -> None:
    """After a rename of the guest path ``old`` to ``new`` (or an exchange of the two): the
    working directories and open directories at or below it follow it, as their dentries do
    in Linux (d_move) — their handles already name the moved directory; this keeps the guest
    path that getcwd, /proc/PID/cwd and ``..`` read from them current."""
    def moved(path: str) -> str | None:
        for a, b in ((old, new), (new, old)) if exchange else ((old, new),):
            if path == a or path.startswith(a.rstrip("/") + "/"):
                return b + path[len(a):]
        return None
    seen: set[int] = set()
    for t in k.tasks.values():
        nodes = [fs_of(t).cwd] if t.fs is not None else []
        files = getattr(t, "files", None)
        if files is not None:
            nodes += [getattr(f, "node", None) for f in files.fds.values()]
        for n in nodes:
            if isinstance(n, Node) and n.is_dir and id(n) not in seen:
                seen.add(id(n))
                p = moved(n.path)
                if p is not None:
                    n.path = p


def shared_readonly_in(task, addr: int, length: int) -> bool:
    """mprotect(PROT_WRITE) over a read-only MAP_SHARED file mapping is EACCES (mprotect_fixup
    checks VM_MAYWRITE, which a shared mapping of a read-only file lacks).  Shared anonymous
    memory (shmem) may always be made writable, and so may a mapping of a root file opened for
    writing (a host mapping of the file, kernel/fs/file.py)."""
    end = addr + length
    for m in task.mm.mappings:
        if m.name.startswith("shared:") and m.name != SHARED_ANON and m.start < end and addr < m.end:
            view = file_view(m.buf)
            if view is None or not view.maywrite:
                return True
    return False


def get_next_ino(k: "Kernel", cpu: Cpu) -> int:
    """fs/inode.c get_next_ino: inode numbers of pseudo files (pipes) come from a per-CPU
    batch of LAST_INO_BATCH taken from one shared counter, never 0 — a value of the model,
    the same every run (not a host address)."""
    pcpu = k.percpu[cpu.index]
    res = pcpu.last_ino
    if res % LAST_INO_BATCH == 0:
        k._shared_last_ino += LAST_INO_BATCH
        res = k._shared_last_ino - LAST_INO_BATCH
    res = (res + 1) & 0xFFFFFFFF
    if res == 0:
        res = 1
    pcpu.last_ino = res
    return res
