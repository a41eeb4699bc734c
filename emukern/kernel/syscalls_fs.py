"""File-system and descriptor syscalls beyond read/write: path lookups in the guest root
(openat, newfstatat, statx, faccessat, readlinkat, getdents64, getcwd/chdir/fchdir, mkdirat,
unlinkat), what a C library's start-up and stdio use (writev, fstat, ioctl(TCGETS), lseek,
pread64, dup, fcntl), and the file-backed side of mmap.  Paths resolve only inside the guest root
(emukern.kernel.fs.vfs); the root is read-only (EROFS) unless the machine was given --root-rw."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from emukern.kernel.uaccess import copy_from_user, copy_to_user
from emukern.kernel import errno as E
from emukern.kernel import preempt as P
from emukern.kernel.files import OutputFile, PipeEnd, StdinFile, SysctlFile
from emukern.kernel.fs import ELOOP, ENAMETOOLONG, EROFS, EXDEV, PATH_MAX
from emukern.kernel.fs.file import (DirFile, HostFile, VfsFile, stat_bytes, stat_fields,
                                    statx_bytes)
from emukern.kernel.fs.procfs import ProcFs
from emukern.kernel.fs.vfs import Node, Vfs, copy_fs, cwd_of, fs_of
from emukern.kernel.syscalls_proc import ProcSyscallsMixin
from emukern.machine.memory import SHARED_ANON

if TYPE_CHECKING:
    from emukern.kernel.kernel import Kernel

U64 = (1 << 64) - 1
ENOTTY = 25
AT_EMPTY_PATH = 0x1000
S_IFCHR, S_IFIFO, S_IFREG = 0o020000, 0o010000, 0o100000
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC = 0, 1, 2, 3, 4, 1030
FD_CLOEXEC = 1
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW, AT_REMOVEDIR, AT_EACCESS, AT_SYMLINK_FOLLOW = 0x100, 0x200, 0x200, 0x400
RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT = 1, 2, 4
O_ACCMODE, O_WRONLY, O_RDWR = 3, 1, 2
O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_CLOEXEC, O_PATH = 0o100, 0o200, 0o1000, 0o2000, 0o2000000, 0o10000000
# O_DIRECTORY / O_NOFOLLOW differ: arm64 has its own uapi fcntl.h, riscv64 uses asm-generic's
O_DIRECTORY = {"arm64": 0o40000, "riscv64": 0o200000}
O_NOFOLLOW = {"arm64": 0o100000, "riscv64": 0o400000}
W_OK, X_OK = 2, 1


def _stat_bytes(mode: int, size: int = 0, rdev: int = 0, ino: int = 1) -> bytes:
    """asm-generic struct stat (riscv64 and arm64): 128 bytes."""
    le = lambda v, n: (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")  # noqa: E731
    return (le(0x0E, 8) + le(ino, 8) + le(mode, 4) + le(1, 4) + le(0, 4) + le(0, 4) + le(rdev, 8)
            + le(0, 8) + le(size, 8) + le(4096, 4) + le(0, 4) + le((size + 511) // 512, 8)
            + bytes(48) + bytes(8))


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


class FileSyscallsMixin(ProcSyscallsMixin):
    cost: Any
    config: Any

    if TYPE_CHECKING:       # (SyscallsMixin: read/write themselves)
        def sys_read(self, cpu: Any, task: Any, fd: int, buf: int, count: int, *a: int) -> Any: ...
        def sys_write(self, cpu: Any, task: Any, fd: int, buf: int, count: int, *a: int) -> Any: ...
        def _do_read(self, cpu: Any, task: Any, fd: int, buf: int, count: int, res: Any = None,
                     off: int | None = None) -> Any: ...
        def _do_write(self, cpu: Any, task: Any, fd: int, buf: int, count: int, res: Any = None,
                      off: int | None = None) -> Any: ...
        def _read_iter(self, cpu: Any, task: Any, f: Any, buf: int, count: int, res: Any,
                       off: int | None = None) -> Any: ...
        def _write_iter(self, cpu: Any, task: Any, f: Any, buf: int, count: int, res: Any,
                        off: int | None = None) -> Any: ...
    vfs: Vfs
    procfs: ProcFs
    if TYPE_CHECKING:       # (fs/meta.py's FsMetaMixin: the chmod/chown/utimensat overlay)
        def apply_meta(self, fields: dict, node: Any, f: Any = None) -> dict: ...

    def fs_init(self) -> None:
        """Mount the guest root with /proc and /dev over it (the kernel's boot-time mounts)."""
        cfg = self.config
        root = getattr(cfg, "root", None)
        Vfs.check_root(root)
        self.procfs = ProcFs(cast("Kernel", self))
        self.vfs = Vfs(root, bool(getattr(cfg, "root_rw", False)), self.procfs.mounts())

    def fs_init_task(self, task) -> None:
        """The first process starts in the guest directory the user is in when the host's working
        directory lies inside --root (as a shell in the root would start it); otherwise at /."""
        guest = self.vfs.guest_path_of_host(os.getcwd()) if self.vfs.root else None
        if guest is not None:
            node = self.path_lookup(task, AT_FDCWD, guest)
            if isinstance(node, Node) and node.is_dir:
                fs_of(task).cwd = node

    def fs_fork(self, parent, child, flags: int) -> None:
        """copy_process's file-system part: cwd and umask (CLONE_FS = 0x200 shares them)."""
        copy_fs(parent, child, bool(flags & 0x200))

    # ---- path arguments --------------------------------------------------------------------------
    def _user_path(self, task, ptr: int) -> str | int:
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

    def _start_dir(self, task, dirfd: int) -> Node | int:
        dirfd = _s32(dirfd)
        if dirfd == AT_FDCWD:
            return cwd_of(task, self.vfs)
        f = task.files.get(dirfd)
        if f is None:
            return -E.EBADF
        node = getattr(f, "node", None)
        if node is None or not node.is_dir:
            return -E.ENOTDIR
        return node

    def path_lookup(self, task, dirfd: int, path: str, follow: bool = True) -> Node | int:
        """filename_lookup: resolve ``path`` for ``task`` (relative to dirfd or its cwd)."""
        self.procfs.current = task
        start = None
        if not path.startswith("/"):
            start = self._start_dir(task, dirfd)
            if isinstance(start, int):
                return start
        return self.vfs.lookup(task, path, start, follow)

    def _lookup_at(self, task, dirfd: int, path_ptr: int, follow: bool = True,
                   empty_ok: bool = False) -> Node | int:
        path = self._user_path(task, path_ptr)
        if isinstance(path, int):
            return path
        if path == "":
            if not empty_ok:
                return -E.ENOENT
            return self._start_dir(task, dirfd) if _s32(dirfd) == AT_FDCWD else self._fd_node(task, dirfd)
        return self.path_lookup(task, dirfd, path, follow)

    def _fd_node(self, task, fd: int) -> Node | int:
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        node = getattr(f, "node", None)
        return node if node is not None else -E.EBADF

    # ---- open -----------------------------------------------------------------------------------
    def do_sys_openat(self, cpu, task, dirfd, path_ptr, flags, mode) -> int:
        """do_filp_open: walk, maybe create, check, then the object's open."""
        arch = self.config.arch
        flags &= 0xFFFFFFFF
        path = self._user_path(task, path_ptr)
        if isinstance(path, int):
            return path
        cpu.charge(self.cost.syscall_body * 5)
        acc = flags & O_ACCMODE
        want_w = acc in (O_WRONLY, O_RDWR) or bool(flags & O_TRUNC)
        cloexec = bool(flags & O_CLOEXEC)
        node = self.path_lookup(task, dirfd, path, follow=not flags & O_NOFOLLOW[arch])
        if node == -E.ENOENT and flags & O_CREAT:
            made = self._create(task, dirfd, path, mode)
            if isinstance(made, int):
                return made
            node = made
        if isinstance(node, int):
            return node
        if flags & O_CREAT and flags & O_EXCL and not node.created:
            return -E.EEXIST
        if node.is_link:
            return -ELOOP if not flags & O_PATH else task.files.install(VfsFile(node, 0), cloexec=cloexec)
        if flags & O_DIRECTORY[arch] and not node.is_dir:
            return -E.ENOTDIR
        if flags & O_PATH:
            return task.files.install(VfsFile(node, 0), cloexec=cloexec)
        if node.is_dir:
            if want_w or flags & O_CREAT:
                return -E.EISDIR
            parent = self.vfs.lookup(task, node.path + "/..")
            entries = self.vfs.list_dir(node)
            return task.files.install(DirFile(node, flags, entries, parent if isinstance(parent, Node) else node),
                                      cloexec=cloexec)
        sysctl = node.extra.get("sysctl")
        if sysctl is not None:
            if want_w and not sysctl.mode & 0o200:
                return -E.EACCES
            return task.files.install(SysctlFile(sysctl, acc != O_WRONLY, want_w), cloexec=cloexec)
        if node.host is None:                   # /proc and /dev objects
            if want_w and node.opener is None:
                return -E.EACCES
            return task.files.install(self.procfs.open_synthetic(node, flags), cloexec=cloexec)
        if node.extra.get("special"):
            return -E.EACCES                    # a host FIFO/socket/device inside the root: nodev
        if want_w and not self.vfs.writable:
            return -EROFS
        hflags = {0: os.O_RDONLY, O_WRONLY: os.O_WRONLY, O_RDWR: os.O_RDWR}.get(acc, os.O_RDONLY)
        hflags |= os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        if flags & O_TRUNC and want_w:
            hflags |= os.O_TRUNC
        try:
            fd = os.open(node.host, hflags)
        except OSError as e:
            return -(e.errno or E.EACCES)
        return task.files.install(HostFile(node, flags, fd), cloexec=cloexec)

    def _create(self, task, dirfd: int, path: str, mode: int) -> Node | int:
        start = None if path.startswith("/") else self._start_dir(task, dirfd)
        if isinstance(start, int):
            return start
        pn = self.vfs.parent_and_name(task, path, start)
        if isinstance(pn, int):
            return pn
        parent, name = pn
        if parent.host is None or not self.vfs.writable:
            return -EROFS if parent.children is None or not self.vfs.writable else -E.EACCES
        host = os.path.join(parent.host, name)
        umask = fs_of(task).umask
        try:
            os.close(os.open(host, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, mode & 0o7777 & ~umask))
        except OSError as e:
            return -(e.errno or E.EACCES)
        node = self.vfs.child(parent, name)
        if node is None:
            return -E.ENOENT
        node.created = True       # (O_EXCL is satisfied)
        return node

    def sys_mkdirat(self, cpu, task, dirfd, path_ptr, mode, *a):
        path = self._user_path(task, path_ptr)
        if isinstance(path, int):
            return path
        if not isinstance(self.path_lookup(task, dirfd, path, follow=False), int):
            return -E.EEXIST
        start = None if path.startswith("/") else self._start_dir(task, dirfd)
        if isinstance(start, int):
            return start
        pn = self.vfs.parent_and_name(task, path, start)
        if isinstance(pn, int):
            return pn
        parent, name = pn
        if parent.host is None or not self.vfs.writable:
            return -EROFS
        try:
            os.mkdir(os.path.join(parent.host, name), mode & 0o7777 & ~fs_of(task).umask)
        except OSError as e:
            return -(e.errno or E.EACCES)
        return 0

    def sys_unlinkat(self, cpu, task, dirfd, path_ptr, flags, *a):
        node = self._lookup_at(task, dirfd, path_ptr, follow=False)
        if isinstance(node, int):
            return node
        if node.host is None or not self.vfs.writable or node.path == "/":
            return -EROFS if node.host is not None or not self.vfs.writable else -E.EACCES
        try:
            if flags & AT_REMOVEDIR:
                if not node.is_dir:
                    return -E.ENOTDIR
                os.rmdir(node.host)
            else:
                if node.is_dir:
                    return -E.EISDIR
                os.unlink(node.host)
        except OSError as e:
            return -(e.errno or E.EACCES)
        return 0

    # ---- namespace changes: rename, hard links, symlinks (fs/namei.c) ----------------------------
    def _entry_at(self, task, dirfd: int, path_ptr: int, what: str) -> tuple[Node, str] | int:
        """The parent directory and last component of a path to create or move (no final
        symlink is followed), in the writable root: EROFS outside it, EBUSY for '.'/'..' as
        the last component (do_renameat2's LAST_NORM test; link/symlink give EEXIST there)."""
        path = self._user_path(task, path_ptr)
        if isinstance(path, int):
            return path
        if not path:
            return -E.ENOENT
        last = path.rstrip("/").rpartition("/")[2]
        if last in (".", ".."):
            return -E.EBUSY if what == "rename" else -E.EEXIST
        start = None if path.startswith("/") else self._start_dir(task, dirfd)
        if isinstance(start, int):
            return start
        self.procfs.current = task
        pn = self.vfs.parent_and_name(task, path, start)
        if isinstance(pn, int):
            return pn
        parent = pn[0]
        if parent.host is None:
            # /proc, /dev and the empty virtual root are their own (read-only) file systems
            return -EXDEV if what != "symlink" else -E.EACCES
        if not self.vfs.writable:
            return -EROFS
        return pn

    def sys_renameat(self, cpu, task, olddirfd, oldpath, newdirfd, newpath, *a):
        if self.config.arch != "arm64":
            return -E.ENOSYS            # riscv64's table has renameat2 only
        return self.sys_renameat2(cpu, task, olddirfd, oldpath, newdirfd, newpath, 0)

    def sys_renameat2(self, cpu, task, olddirfd, oldpath, newdirfd, newpath, flags, *a):
        """do_renameat2: RENAME_NOREPLACE and RENAME_EXCHANGE (not together), RENAME_WHITEOUT
        (not with EXCHANGE); both names resolved without following a final symlink, then the
        host's renameat2 on the two paths inside the root does the rest (EEXIST, ENOENT,
        EISDIR, ENOTDIR, ENOTEMPTY, EINVAL for a directory into itself: the host kernel's)."""
        flags &= 0xFFFF_FFFF
        if flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT):
            return -E.EINVAL
        if flags & RENAME_EXCHANGE and flags & (RENAME_NOREPLACE | RENAME_WHITEOUT):
            return -E.EINVAL
        old = self._entry_at(task, olddirfd, oldpath, "rename")
        if isinstance(old, int):
            return old
        new = self._entry_at(task, newdirfd, newpath, "rename")
        if isinstance(new, int):
            return new
        cpu.charge(self.cost.syscall_body)
        return host_renameat2(os.path.join(old[0].host, old[1]), os.path.join(new[0].host, new[1]), flags)

    def sys_linkat(self, cpu, task, olddirfd, oldpath, newdirfd, newpath, flags, *a):
        """do_linkat: AT_SYMLINK_FOLLOW (follow a final symlink of the old name: otherwise the
        link is to the symlink itself) and AT_EMPTY_PATH (EINVAL otherwise); no hard link to a
        directory (EPERM)."""
        flags &= 0xFFFF_FFFF
        if flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH):
            return -E.EINVAL
        node = self._lookup_at(task, olddirfd, oldpath, follow=bool(flags & AT_SYMLINK_FOLLOW),
                               empty_ok=bool(flags & AT_EMPTY_PATH))
        if isinstance(node, int):
            return node
        new = self._entry_at(task, newdirfd, newpath, "link")
        if isinstance(new, int):
            return new
        if node.is_dir:
            return -E.EPERM
        if node.host is None:
            return -EXDEV
        cpu.charge(self.cost.syscall_body)
        try:
            os.link(node.host, os.path.join(new[0].host, new[1]), follow_symlinks=False)
        except OSError as e:
            return -(e.errno or E.EACCES)
        return 0

    def sys_symlinkat(self, cpu, task, target_ptr, newdirfd, linkpath, *a):
        """do_symlinkat: the target is stored as given (any string up to PATH_MAX, resolved
        later inside the guest's root by the walk, never by the host)."""
        target = self._user_path(task, target_ptr)
        if isinstance(target, int):
            return target
        if not target:
            return -E.ENOENT
        new = self._entry_at(task, newdirfd, linkpath, "symlink")
        if isinstance(new, int):
            return new
        cpu.charge(self.cost.syscall_body)
        try:
            os.symlink(target, os.path.join(new[0].host, new[1]))
        except OSError as e:
            return -(e.errno or E.EACCES)
        return 0

    def sys_ftruncate(self, cpu, task, fd, length, *a):
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        if not isinstance(f, HostFile) or not f.writable:
            return -E.EINVAL
        return f.truncate(length)

    # ---- reading files and directories ------------------------------------------------------------
    def sys_pread64(self, cpu, task, fd, buf, count, off, *a):
        f = task.files.get(_s32(fd))
        if f is None or not f.readable:
            return -E.EBADF
        if not isinstance(f, VfsFile) or isinstance(f, DirFile):
            return -E.ESPIPE if not isinstance(f, DirFile) else -E.EISDIR
        if off >> 63:
            return -E.EINVAL
        if isinstance(f, HostFile) and count & U64:       # filemap_read's loop (kernel/preempt.py)
            if task.mm.find(buf) is None:
                return -E.EFAULT
            return P.run_long(task, None, lambda r: self._read_iter(cpu, task, f, buf, count & U64, r, off))
        data = f.pread(count & U64, off)
        if isinstance(data, int):
            return data
        copy_to_user(self, cpu, task, buf, data)              # charges the copy itself
        cpu.charge(self.cost.syscall_body)
        return len(data)

    def sys_pwrite64(self, cpu, task, fd, buf, count, off, *a):
        f = task.files.get(_s32(fd))
        if f is None or not f.writable:
            return -E.EBADF
        if not isinstance(f, VfsFile):
            return -E.ESPIPE
        if off >> 63:
            return -E.EINVAL
        if isinstance(f, HostFile):                         # generic_perform_write's loop
            n = min(count & U64, 1 << 24)
            return P.run_long(task, None, lambda r: self._write_iter(cpu, task, f, buf, n, r, off))
        data = copy_from_user(self, cpu, task, buf, min(count & U64, 1 << 24))   # charges the copy
        cpu.charge(self.cost.syscall_body)
        return f.pwrite(data, off)

    def sys_getdents64(self, cpu, task, fd, dirp, count, *a):
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        if not isinstance(f, VfsFile):
            return -E.ENOTDIR
        data = f.getdents(min(count & 0xFFFFFFFF, 1 << 20))
        if isinstance(data, int):
            return data
        task.mm.write(dirp, data)
        cpu.charge(self.cost.syscall_body + self.cost.syscall_per_byte * len(data))
        return len(data)

    # ---- cwd -------------------------------------------------------------------------------------
    def sys_getcwd(self, cpu, task, buf, size, *a):
        path = cwd_of(task, self.vfs).path.encode("utf-8", "surrogateescape") + b"\0"
        if size < len(path):
            return -E.ERANGE
        task.mm.write(buf, path)
        return len(path)

    def _set_cwd(self, task, node: Node | int) -> int:
        if isinstance(node, int):
            return node
        if not node.is_dir:
            return -E.ENOTDIR
        fs_of(task).cwd = node            # task->fs->pwd (shared by CLONE_FS threads)
        return 0

    def sys_chdir(self, cpu, task, path_ptr, *a):
        return self._set_cwd(task, self._lookup_at(task, AT_FDCWD, path_ptr))

    def sys_fchdir(self, cpu, task, fd, *a):
        return self._set_cwd(task, self._fd_node(task, fd))

    # ---- access ----------------------------------------------------------------------------------
    def sys_faccessat2(self, cpu, task, dirfd, path_ptr, mode, flags, *a):
        if mode & ~7 or flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
            return -E.EINVAL
        node = self._lookup_at(task, dirfd, path_ptr, follow=not flags & AT_SYMLINK_NOFOLLOW,
                               empty_ok=bool(flags & AT_EMPTY_PATH))
        if isinstance(node, int):
            return node
        # the caller is root (uid 0): only W on a read-only mount and X without any x bit fail
        if mode & W_OK and node.host is not None and not self.vfs.writable:
            return -EROFS
        if mode & W_OK and node.host is None and not node.mode & 0o222:
            return -E.EACCES
        if mode & X_OK and not node.is_dir and not node.mode & 0o111:
            return -E.EACCES
        return 0

    def sys_faccessat(self, cpu, task, dirfd, path_ptr, mode, *a):
        return self.sys_faccessat2(cpu, task, dirfd, path_ptr, mode, 0)

    def _vec(self, task, iov: int, iovcnt: int) -> list[tuple[int, int]] | int:
        if iovcnt < 0 or iovcnt > 1024:
            return -E.EINVAL
        raw = task.mm.read(iov, 16 * iovcnt)
        return [(int.from_bytes(raw[16 * i: 16 * i + 8], "little"),
                 int.from_bytes(raw[16 * i + 8: 16 * i + 16], "little")) for i in range(iovcnt)]

    @staticmethod
    def _each_iov(vec: list[tuple[int, int]], op: Any, res: Any = None) -> Any:
        """Run ``op(base, length)`` over the non-empty buffers in order, stopping at the first
        short transfer; an error (or a block) counts only when nothing was transferred yet.
        With a progress record ``res`` (kernel/preempt.py) a preempted buffer's index and the
        bytes before it are kept, and the call continues there when it is switched back in."""
        total = res.total if res is not None else 0
        for i, (base, length) in enumerate(vec):
            if not length or (res is not None and i < res.iov):
                continue
            if res is not None:
                res.iov, res.total = i, total
            r = op(base, length)
            if r is P.PREEMPTED:
                return r
            if not isinstance(r, int) or r < 0:
                return r if total == 0 else total
            total += r
            if res is not None:
                res.done = 0
            if r < length:
                break
        return total

    def _each_iov_long(self, task, vec: list[tuple[int, int]], op: Any) -> Any:
        """_each_iov with one progress record for the whole readv/writev."""
        res = P.begin(task)
        r = self._each_iov(vec, lambda base, n: op(base, n, res), res)
        if r is not P.PREEMPTED:
            P.finish(task)
        return r

    def sys_writev(self, cpu, task, fd, iov, iovcnt, *a):
        vec = self._vec(task, iov, iovcnt)
        if isinstance(vec, int):
            return vec
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is not None and f.writable:
            r = f.kernel_writev(self, cpu, task, vec)    # a plug-in kind's ->write_iter (File)
            if r is not None:
                return r
        return self._each_iov_long(task, vec, lambda base, n, res: self._do_write(cpu, task, fd, base, n, res))

    def sys_readv(self, cpu, task, fd, iov, iovcnt, *a):
        vec = self._vec(task, iov, iovcnt)
        if isinstance(vec, int):
            return vec
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if isinstance(f, VfsFile) and f.readable:
            # a file fills the buffers in order (do_iter_readv)
            return self._each_iov_long(task, vec, lambda base, n, res: self._do_read(cpu, task, fd, base, n, res))
        if f is not None and f.readable:
            r = f.kernel_readv(self, cpu, task, vec)     # a plug-in kind's ->read_iter (File)
            if r is not None:
                return r
        if isinstance(f, PipeEnd) and f.readable and f.pipe.buf:
            # pipe_read copies what the pipe holds into the whole iov_iter, buffer after buffer,
            # and sleeps only when it is empty at the start: read on while data is left (a
            # drained pipe ends the vector with a short count instead of blocking)
            p = f.pipe
            return self._each_iov_long(task, vec, lambda base, n, res:
                                       self._do_read(cpu, task, fd, base, n, res) if p.buf else 0)
        for base, length in vec:              # the first non-empty buffer (it may block)
            if length:
                return self.sys_read(cpu, task, fd, base, length)
        return 0

    def _fstat_file(self, f: Any) -> bytes:
        if isinstance(f, VfsFile):
            return stat_bytes(self.apply_meta(stat_fields(f.node, f.size() if isinstance(f, HostFile) else None),
                                              f.node, f))
        if isinstance(f, (OutputFile, StdinFile)):
            return _stat_bytes(S_IFCHR | 0o620, rdev=(136 << 8))   # a pts-like character device
        if isinstance(f, PipeEnd):
            return _stat_bytes(S_IFIFO | 0o600, ino=f.pipe.ino)
        if isinstance(f, SysctlFile):
            return _stat_bytes(S_IFREG | f.entry.mode)
        if f.stat_mode is not None:            # a plug-in kind (File.stat_mode): a socket, ...
            return _stat_bytes(f.stat_mode, ino=getattr(f, "ino", 1) or 1)
        return _stat_bytes(S_IFREG | 0o644)

    def sys_fstat(self, cpu, task, fd, statbuf, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        task.mm.write(statbuf, self._fstat_file(f))
        cpu.charge(self.cost.syscall_body)
        return 0

    def _stat_at(self, task, dirfd, path_ptr, flags) -> bytes | int:
        """vfs_fstatat: the 'struct stat' fields of a path, an fd (AT_EMPTY_PATH) or -errno."""
        if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800 | 0x6000):   # NO_AUTOMOUNT, SYNC
            return -E.EINVAL
        path = self._user_path(task, path_ptr) if path_ptr else ""
        if isinstance(path, int):
            return path
        if path == "" and flags & AT_EMPTY_PATH:
            if _s32(dirfd) == AT_FDCWD:
                node = cwd_of(task, self.vfs)
            else:
                f = task.files.get(_s32(dirfd))
                if f is None:
                    return -E.EBADF
                return self._fstat_file(f)
        else:
            node = self.path_lookup(task, dirfd, path, follow=not flags & AT_SYMLINK_NOFOLLOW)
        if isinstance(node, int):
            return node
        if node.is_link:
            try:
                size = len(node.link_target().encode("utf-8", "surrogateescape"))
            except OSError:
                size = 0
            return stat_bytes(self.apply_meta(stat_fields(node, size), node))
        return stat_bytes(self.apply_meta(stat_fields(node), node))

    def sys_newfstatat(self, cpu, task, dirfd, path_ptr, statbuf, flags, *a):
        st = self._stat_at(task, dirfd, path_ptr, flags)
        if isinstance(st, int):
            return st
        task.mm.write(statbuf, st)
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_statx(self, cpu, task, dirfd, path_ptr, flags, mask, buf, *a):
        st = self._stat_at(task, dirfd, path_ptr, flags & ~0x6000)
        if isinstance(st, int):
            return st
        import struct
        (dev, ino, mode, nlink, uid, gid, rdev, _p, size, blksize) = struct.unpack_from("<QQIIIIQQqi", st)
        at, atn, mt, mtn, ct, ctn = struct.unpack_from("<qQqQqQ", st, 72)
        task.mm.write(buf, statx_bytes({"dev": dev, "ino": ino, "mode": mode, "nlink": nlink, "uid": uid,
                                        "gid": gid, "rdev": rdev, "size": size, "blksize": blksize,
                                        "atime": (at, atn), "mtime": (mt, mtn), "ctime": (ct, ctn)}))
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_ioctl(self, cpu, task, fd, request, arg, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        return -ENOTTY         # no terminals in emukern: stdio is not a tty (full buffering)

    def sys_lseek(self, cpu, task, fd, offset, whence, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        whence &= 0xFFFFFFFF            # an unsigned int in Linux
        if whence > 4:
            return -E.EINVAL            # ksys_lseek: whence past SEEK_MAX, whatever the file
        if isinstance(f, VfsFile):
            return f.llseek(offset - (1 << 64) if offset >> 63 else offset, whence)
        if isinstance(f, SysctlFile):
            from emukern.kernel.sysctl import default_llseek
            pos = default_llseek(f.pos, 0, offset - (1 << 64) if offset >> 63 else offset, whence)
            if pos >= 0:
                f.pos = pos
            return pos
        return -E.ESPIPE                # pipes and terminals: no_llseek

    def _dup(self, task, oldfd: int, newfd: int | None, lowest: int = 0) -> int:
        f = task.files.get(oldfd if oldfd < 1 << 63 else oldfd - (1 << 64))
        if f is None:
            return -E.EBADF
        if newfd is None:
            return task.files.install(f, lowest)
        if newfd >= task.files.MAX_FDS:
            return -E.EBADF
        if newfd in task.files.fds:
            task.files.close(newfd)
        task.files.fds[newfd] = f
        f.refs += 1
        return newfd

    def sys_dup(self, cpu, task, oldfd, *a):
        return self._dup(task, oldfd, None)

    def sys_dup3(self, cpu, task, oldfd, newfd, flags, *a):
        if oldfd == newfd or flags & ~0x80000:
            return -E.EINVAL
        fd = self._dup(task, oldfd, newfd)
        if fd >= 0:
            if flags & O_CLOEXEC:
                task.files.cloexec.add(fd)
            else:
                task.files.cloexec.discard(fd)
        return fd

    def sys_fcntl(self, cpu, task, fd, cmd, arg, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        fd = _s32(fd)
        if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
            nfd = self._dup(task, fd, None, lowest=arg)
            if nfd >= 0 and cmd == F_DUPFD_CLOEXEC:
                task.files.cloexec.add(nfd)
            return nfd
        if cmd == F_GETFD:
            return FD_CLOEXEC if fd in task.files.cloexec else 0
        if cmd == F_SETFD:
            if arg & FD_CLOEXEC:
                task.files.cloexec.add(fd)
            else:
                task.files.cloexec.discard(fd)
            return 0
        if cmd == F_SETFL:
            setfl = getattr(f, "setfl", None)      # a plug-in kind keeping O_NONBLOCK (a socket)
            return setfl(arg) if setfl is not None else 0
        if cmd == F_GETFL:
            if isinstance(f, VfsFile):
                return f.flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC)
            nb = 0o4000 if getattr(f, "nonblock", False) is True else 0     # a socket's O_NONBLOCK
            return (2 if f.readable and f.writable else (1 if f.writable else 0)) | nb
        return -E.EINVAL

    def sys_readlinkat(self, cpu, task, dirfd, path_ptr, buf, size, *a):
        """do_readlinkat: the target of a symlink (``/proc/self/exe`` is the guest path of the
        running image, updated by execve), truncated to ``size`` bytes without a NUL."""
        if _s32(size) <= 0:
            return -E.EINVAL
        node = self._lookup_at(task, dirfd, path_ptr, follow=False, empty_ok=True)
        if isinstance(node, int):
            return node
        if not node.is_link:
            return -E.EINVAL
        try:
            target = node.link_target().encode("utf-8", "surrogateescape")[: size & 0xFFFFFFFF]
        except OSError:
            return -E.ENOENT
        task.mm.write(buf, target)
        cpu.charge(self.cost.syscall_body)
        return len(target)

    # ---- file-backed mmap (mm/mmap.c do_mmap with a file) -------------------------------------------
    def mmap_file(self, task, fd, length, prot, flags, off) -> tuple[bytes, str] | int:
        """The bytes and name of a file mapping, or -errno.  MAP_PRIVATE copies the file's pages
        (copy-on-write has the same result: the guest's stores never reach the file); MAP_SHARED
        is modelled read-only — a shared writable mapping would need write-back (-ENODEV).
        Bytes past the end of the file read as zero."""
        from emukern.kernel.fs.file import DevZero
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        if off % 4096 or off >> 63:
            return -E.EINVAL
        if isinstance(f, DevZero):
            return b"", "[anon]"                         # mmap of /dev/zero is anonymous memory
        if not isinstance(f, HostFile):
            return -E.ENODEV                             # pipes, directories, /proc files
        if not f.readable:
            return -E.EACCES                             # every mapping needs read access
        shared = bool(flags & 1) and not flags & 2
        if shared and prot & 2:
            return -E.EACCES if not f.writable else -E.ENODEV
        size = f.size()
        want = max(0, min(length, size - off))
        data = b""
        if want:
            got = f.pread(want, off) if want <= (1 << 24) else self._pread_all(f, want, off)
            if isinstance(got, int):
                return got
            data = got
        return data, ("shared:" if shared else "file:") + f.node.path

    @staticmethod
    def _pread_all(f: HostFile, n: int, off: int) -> bytes | int:
        parts = []
        while n > 0:
            got = f.pread(n, off)
            if isinstance(got, int):
                return got
            if not got:
                break
            parts.append(got)
            n -= len(got)
            off += len(got)
        return b"".join(parts)

    @staticmethod
    def shared_readonly_in(task, addr: int, length: int) -> bool:
        """mprotect(PROT_WRITE) over a read-only MAP_SHARED file mapping is EACCES (mprotect_fixup
        checks VM_MAYWRITE, which a shared mapping of a read-only file lacks).  Shared anonymous
        memory (shmem) may always be made writable."""
        end = addr + length
        return any(m.name.startswith("shared:") and m.name != SHARED_ANON and m.start < end and addr < m.end
                   for m in task.mm.mappings)


_libc: Any = None


def host_renameat2(old: str, new: str, flags: int) -> int:
    """renameat2(2) of two host paths (glibc's wrapper, which Python's os module lacks): 0 or
    -errno.  Without flags it is os.rename."""
    global _libc
    if not flags:
        try:
            os.rename(old, new)
        except OSError as e:
            return -(e.errno or E.EACCES)
        return 0
    import ctypes
    import ctypes.util
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), ctypes.c_uint(flags)) == 0:
        return 0
    return -(ctypes.get_errno() or E.EINVAL)
