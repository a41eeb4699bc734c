"""File metadata and file-to-file syscalls: chmod/chown/utimensat, truncate/fallocate, flock,
mknodat (regular files), sendfile/copy_file_range, and the xattr family.

Where metadata lives: an overlay on the Vfs (``Vfs.meta``), keyed by the *host inode* of a root
object ((st_dev, st_ino), used only as a key, never reported) or by (dev, guest path) for a
synthetic /proc or /dev node.  Keying by inode makes the overlay follow the file through rename
and hard links, as an inode's attributes do in Linux.  Mode, owner and times set by the guest are
never applied to the host file (a guest chmod 000 must not lock emukern itself out, a guest chown
cannot be done by an unprivileged host user, and host times are host facts): stat reports the
overlay, so the same inputs give the same bytes.  An object the guest never changed keeps the
synthesised values stat always gave (owner 0, times 0).
"""
from __future__ import annotations

import os
from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.files import OutputFile, PipeEnd, WaitQueue
from emukern.kernel.fs import EOVERFLOW, EROFS, EXDEV
from emukern.kernel.fs.file import MAX_IO, DevNull, HostFile, VfsFile, write_kernel_bytes
from emukern.kernel.fs.vfs import S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, Node, fs_of
from emukern.kernel.sysret import BLOCK
from emukern.kernel.syscalls_misc import cred_of

FSMETA_SYSCALL_NAMES = {
    52: "fchmod", 53: "fchmodat", 452: "fchmodat2", 54: "fchownat", 55: "fchown",
    88: "utimensat", 45: "truncate", 47: "fallocate", 32: "flock", 33: "mknodat",
    71: "sendfile", 285: "copy_file_range",
    5: "setxattr", 6: "lsetxattr", 7: "fsetxattr", 8: "getxattr", 9: "lgetxattr", 10: "fgetxattr",
    11: "listxattr", 12: "llistxattr", 13: "flistxattr", 14: "removexattr", 15: "lremovexattr",
    16: "fremovexattr",
}

AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH = -100, 0x100, 0x1000
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
S_ISUID, S_ISGID, S_IXGRP = 0o4000, 0o2000, 0o010
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
FALLOC_SUPPORTED = 0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x20 | 0x40   # FALLOC_FL_SUPPORTED_MASK
LOCK_SH, LOCK_EX, LOCK_NB, LOCK_UN = 1, 2, 4, 8
EOPNOTSUPP, EFBIG, ESPIPE, ENODEV, EWOULDBLOCK = 95, 27, 29, 19, 11
MAX_LFS = (1 << 63) - 1
PROC_DEV = 0x16


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _s64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _copy_loop(read_at: Any, put: Any, count: int) -> int:
    """The splice loop of sendfile and copy_file_range: up to ``count`` bytes, 64 KiB at a time,
    ``read_at(n, done)`` then ``put(data, done)``; an error counts only when nothing was copied
    yet, and a short write or the end of the input ends it."""
    done = 0
    while done < count:
        data = read_at(min(count - done, 1 << 16), done)
        if isinstance(data, int):
            return done or data
        if not data:
            break
        n = put(data, done)
        if n < 0:
            return done or n
        done += n
        if n < len(data):
            break
    return done


class FsMetaMixin:
    """The syscalls above, for the kernel (a mixin of SyscallsMixin)."""

    vfs: Any
    cost: Any
    clock: Any
    sched: Any

    # ---- the overlay -----------------------------------------------------------------------------
    def _meta_store(self) -> dict:
        store = getattr(self.vfs, "meta", None)
        if store is None:
            store = self.vfs.meta = {}
        return store

    @staticmethod
    def _meta_key(node: Node, f: Any = None) -> tuple | None:
        if node.host is None:
            return ("syn", node.dev, node.path)
        try:
            s = os.fstat(f.fd) if isinstance(f, HostFile) and f.fd >= 0 else os.lstat(node.host)
        except OSError:
            return None
        return ("host", s.st_dev, s.st_ino)

    def meta_of(self, node: Node, f: Any = None) -> dict | None:
        """The overlay entry of ``node`` (mode, uid, gid, atime, mtime, ctime), or None."""
        store = getattr(self.vfs, "meta", None)
        if not store:
            return None
        key = self._meta_key(node, f)
        return store.get(key) if key is not None else None

    def apply_meta(self, fields: dict[str, int], node: Node, f: Any = None) -> dict[str, int]:
        """stat_fields with what chmod/chown/utimensat changed (called by fstat/stat/statx)."""
        m = self.meta_of(node, f)
        if m:
            fields = dict(fields)
            fields.update(m)
        return fields

    def _meta_entry(self, node: Node) -> dict:
        key = self._meta_key(node)
        store = self._meta_store()
        if key not in store:
            store[key] = {"mode": node.mode, "uid": 0, "gid": 0}
        return store[key]

    def _now(self, cpu) -> tuple[int, int]:
        ns = int(self.clock.ns(cpu.now))          # CLOCK_REALTIME (the simulated clock)
        return ns // 10**9, ns % 10**9

    def _setattr_ok(self, node: Node) -> int:
        """The checks notify_change's callers make before anything changes: a read-only root
        (mnt_want_write: EROFS)."""
        if node.host is not None and not self.vfs.writable:
            return -EROFS
        return 0

    def _node_at(self, task, dirfd, path_ptr, flags) -> Node | int:
        """user_path_at with AT_SYMLINK_NOFOLLOW / AT_EMPTY_PATH."""
        return self._lookup_at(task, dirfd, path_ptr, follow=not flags & AT_SYMLINK_NOFOLLOW,  # type: ignore[attr-defined]
                               empty_ok=bool(flags & AT_EMPTY_PATH))

    # ---- chmod (fs/open.c chmod_common) ----------------------------------------------------------
    def _chmod(self, cpu, task, node: Node, mode: int) -> int:
        cpu.charge(self.cost.syscall_body)
        r = self._setattr_ok(node)
        if r:
            return r
        if node.dev == PROC_DEV:
            return -E.EPERM                     # proc_setattr refuses ATTR_MODE
        m = self._meta_entry(node)
        c = cred_of(task)
        if c.fsuid != 0 and c.fsuid != m["uid"]:
            return -E.EPERM                     # inode_owner_or_capable
        m["mode"] = (node.mode & S_IFMT) | (mode & 0o7777)
        m["ctime"] = self._now(cpu)
        return 0

    def sys_fchmod(self, cpu, task, fd, mode, *a):
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        node = getattr(f, "node", None)
        if node is None:
            return -E.EBADF if not isinstance(f, PipeEnd) else 0
        return self._chmod(cpu, task, node, mode)

    def sys_fchmodat(self, cpu, task, dirfd, path_ptr, mode, *a):
        node = self._node_at(task, dirfd, path_ptr, 0)
        return node if isinstance(node, int) else self._chmod(cpu, task, node, mode)

    def sys_fchmodat2(self, cpu, task, dirfd, path_ptr, mode, flags, *a):
        """do_fchmodat (Linux 6.6): AT_SYMLINK_NOFOLLOW on a symlink is EOPNOTSUPP (a link has
        no mode of its own to change)."""
        flags &= 0xFFFFFFFF
        if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
            return -E.EINVAL
        node = self._node_at(task, dirfd, path_ptr, flags)
        if isinstance(node, int):
            return node
        if node.is_link:
            return -EOPNOTSUPP
        return self._chmod(cpu, task, node, mode)

    # ---- chown (fs/open.c chown_common, chown_ok) ------------------------------------------------
    def _chown(self, cpu, task, node: Node, uid: int, gid: int) -> int:
        cpu.charge(self.cost.syscall_body)
        uid, gid = uid & 0xFFFFFFFF, gid & 0xFFFFFFFF
        r = self._setattr_ok(node)
        if r:
            return r
        if node.dev == PROC_DEV:
            return -E.EPERM
        m = self._meta_entry(node)
        c = cred_of(task)
        if c.euid != 0:
            # chown_ok / chgrp_ok: only root gives a file away; the owner may set its group
            # to one it belongs to
            if uid != 0xFFFFFFFF and uid != m["uid"]:
                return -E.EPERM
            if gid != 0xFFFFFFFF and gid != m["gid"] and (c.euid != m["uid"] or
                                                          gid not in (c.egid, *getattr(c, "groups", ()))):
                return -E.EPERM
        if uid != 0xFFFFFFFF:
            m["uid"] = uid
        if gid != 0xFFFFFFFF:
            m["gid"] = gid
        if node.kind != S_IFDIR and node.kind != S_IFLNK:
            # chown_common sets ATTR_KILL_SUID|ATTR_KILL_SGID for a non-directory: setuid goes,
            # setgid only if group-executable (a mandatory-locking setgid stays)
            mode = m["mode"]
            mode &= ~S_ISUID
            if mode & S_IXGRP:
                mode &= ~S_ISGID
            m["mode"] = mode
        m["ctime"] = self._now(cpu)
        return 0

    def sys_fchown(self, cpu, task, fd, uid, gid, *a):
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        node = getattr(f, "node", None)
        if node is None:
            return -E.EBADF
        return self._chown(cpu, task, node, uid, gid)

    def sys_fchownat(self, cpu, task, dirfd, path_ptr, uid, gid, flags, *a):
        flags &= 0xFFFFFFFF
        if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
            return -E.EINVAL
        node = self._node_at(task, dirfd, path_ptr, flags)
        return node if isinstance(node, int) else self._chown(cpu, task, node, uid, gid)

    # ---- utimensat (fs/utimes.c) ------------------------------------------------------------------
    def sys_utimensat(self, cpu, task, dirfd, path_ptr, times, flags, *a):
        cpu.charge(self.cost.syscall_body)
        flags &= 0xFFFFFFFF
        tv = None
        if times:
            if task.mm.find(times) is None:
                return -E.EFAULT
            raw = task.mm.read(times, 32)
            tv = [(_s64(int.from_bytes(raw[i:i + 8], "little")), _s64(int.from_bytes(raw[i + 8:i + 16], "little")))
                  for i in (0, 16)]
            if tv[0][1] == UTIME_OMIT and tv[1][1] == UTIME_OMIT:
                return 0                        # nothing to do: not even the path is checked
            for _s, ns in tv:                   # nsec_valid
                if not (0 <= ns < 10**9 or ns in (UTIME_NOW, UTIME_OMIT)):
                    return -E.EINVAL
        if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
            return -E.EINVAL
        if not path_ptr and _s32(dirfd) != AT_FDCWD:
            if flags & AT_SYMLINK_NOFOLLOW:
                return -E.EINVAL                # do_utimes_fd: no flags
            f = task.files.get(_s32(dirfd))
            if f is None:
                return -E.EBADF
            node = getattr(f, "node", None)
            if node is None:
                return -E.EBADF if not isinstance(f, (PipeEnd, OutputFile)) else 0
        else:
            node = self._node_at(task, dirfd, path_ptr, flags)
            if isinstance(node, int):
                return node
        r = self._setattr_ok(node)
        if r:
            return r
        m = self._meta_entry(node)
        now = self._now(cpu)
        c = cred_of(task)
        if c.euid != 0 and c.euid != m["uid"] and (tv is None or any(ns != UTIME_NOW for _s, ns in tv)):
            return -E.EPERM                     # only the owner sets explicit times
        for name, t in zip(("atime", "mtime"), tv or [(0, UTIME_NOW)] * 2):
            if t[1] == UTIME_OMIT:
                continue
            m[name] = now if t[1] == UTIME_NOW else t
        m["ctime"] = now
        return 0

    # ---- truncate / fallocate (fs/open.c do_sys_truncate, vfs_fallocate) --------------------------
    def sys_truncate(self, cpu, task, path_ptr, length, *a):
        cpu.charge(self.cost.syscall_body)
        length = _s64(length)
        if length < 0:
            return -E.EINVAL
        node = self._node_at(task, AT_FDCWD, path_ptr, 0)
        if isinstance(node, int):
            return node
        if node.is_dir:
            return -E.EISDIR
        if node.kind != S_IFREG:
            return -E.EINVAL
        if node.host is None:
            return -E.EACCES if node.opener is None else 0
        if not self.vfs.writable:
            return -EROFS
        try:
            os.truncate(node.host, length)      # node.host: inside the root, no link in it
        except OSError as e:
            return -(e.errno or E.EIO)
        return 0

    def sys_fallocate(self, cpu, task, fd, mode, offset, length, *a):
        cpu.charge(self.cost.syscall_body)
        mode &= 0xFFFFFFFF
        offset, length = _s64(offset), _s64(length)
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        if offset < 0 or length <= 0:
            return -E.EINVAL
        if mode & ~FALLOC_SUPPORTED:
            return -EOPNOTSUPP
        if mode & FALLOC_FL_PUNCH_HOLE and not mode & FALLOC_FL_KEEP_SIZE:
            return -EOPNOTSUPP                  # vfs_fallocate: a hole must keep the size
        if not f.writable:
            return -E.EBADF
        if isinstance(f, PipeEnd):
            return -ESPIPE
        node = getattr(f, "node", None)
        if node is not None and node.is_dir:
            return -E.EISDIR
        if not isinstance(f, HostFile):
            return -ENODEV
        if offset + length > MAX_LFS:
            return -EFBIG
        size = f.size()
        if mode == 0:
            return f.truncate(offset + length) if offset + length > size else 0
        if mode == FALLOC_FL_KEEP_SIZE:
            return 0                            # blocks reserved beyond EOF: nothing visible
        if mode == FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE:
            end = min(offset + length, size)    # the hole reads as zeros; the size stays
            pos = offset
            while pos < end:
                n = min(end - pos, MAX_IO)
                r = f.pwrite(bytes(n), pos)
                if r < 0:
                    return r
                pos += n
            return 0
        return -EOPNOTSUPP                      # collapse/zero/insert range, unshare: not modelled

    # ---- flock (fs/locks.c flock_lock_inode) -------------------------------------------------------
    def _flocks(self, key) -> dict:
        table = getattr(self, "_flock_table", None)
        if table is None:
            table = self._flock_table = {}
        return table.setdefault(key, {"holders": {}, "wq": WaitQueue("flock")})

    def sys_flock(self, cpu, task, fd, cmd, *a):
        """An flock lock belongs to the open file description (shared by dup and fork), so the
        holder is the File; a holder whose description was closed for the last time (refs 0)
        no longer holds it (locks_remove_file)."""
        cpu.charge(self.cost.syscall_body)
        f = task.files.get(_s32(fd))
        if f is None:
            return -E.EBADF
        cmd &= 0xFFFFFFFF
        kind = cmd & ~LOCK_NB
        if kind not in (LOCK_SH, LOCK_EX, LOCK_UN):
            return -E.EINVAL
        node = getattr(f, "node", None)
        key = self._meta_key(node, f) if node is not None else ("file", id(f))
        ent = self._flocks(key)
        holders = ent["holders"]
        for h in [h for h in holders if h.refs <= 0]:
            del holders[h]
        if kind == LOCK_UN:
            if holders.pop(f, None) is not None:
                self._wake_all(cpu, ent["wq"])
            return 0
        conflict = any(h is not f and (kind == LOCK_EX or t == LOCK_EX) for h, t in holders.items())
        if conflict:
            if cmd & LOCK_NB:
                return -EWOULDBLOCK
            # a conversion drops the old lock first (flock_lock_inode), then waits
            if holders.pop(f, None) is not None:
                self._wake_all(cpu, ent["wq"])
            self.sched.sleep_on(cpu, task, ent["wq"], "flock")
            return BLOCK
        holders[f] = kind
        if not hasattr(f, "_flock_keys"):
            f._flock_keys = set()
        f._flock_keys.add(key)
        f.close_wqs = getattr(f, "close_wqs", [])
        if ent["wq"] not in f.close_wqs:
            f.close_wqs.append(ent["wq"])    # woken at the last close (HostFile.on_close)
        return 0

    def _wake_all(self, cpu, wq: WaitQueue) -> None:
        for t in list(wq.waiters):
            wq.remove(t)
            self.sched.wake_up(t, cpu.now)

    def flock_release(self, cpu, f) -> None:
        """locks_remove_file at the last close of ``f``: its flock locks go, waiters wake."""
        table = getattr(self, "_flock_table", None)
        for key in getattr(f, "_flock_keys", ()):
            ent = table.get(key) if table else None
            if ent is not None and ent["holders"].pop(f, None) is not None:
                self._wake_all(cpu, ent["wq"])

    # ---- mknodat (fs/namei.c do_mknodat) ----------------------------------------------------------
    def sys_mknodat(self, cpu, task, dirfd, path_ptr, mode, dev, *a):
        """S_IFREG (or type 0) makes an empty regular file.  Device nodes (S_IFCHR/S_IFBLK),
        FIFOs and sockets are EPERM: the root is modelled as a nodev mount and emukern makes no
        host special files inside it (a host FIFO could hang emukern itself)."""
        cpu.charge(self.cost.syscall_body)
        mode &= 0xFFFFFFFF
        kind = mode & S_IFMT
        if kind not in (0, S_IFREG, S_IFIFO, 0o020000, 0o060000, 0o140000):
            return -E.EINVAL
        path = self._user_path(task, path_ptr)      # type: ignore[attr-defined]
        if isinstance(path, int):
            return path
        if not isinstance(self.path_lookup(task, dirfd, path, follow=False), int):  # type: ignore[attr-defined]
            return -E.EEXIST
        if kind not in (0, S_IFREG):
            return -E.EPERM
        made = self._create(task, dirfd, path, mode & 0o7777)      # type: ignore[attr-defined]
        return made if isinstance(made, int) else 0

    # ---- sendfile / copy_file_range (fs/read_write.c do_sendfile, vfs_copy_file_range) -------------
    def _put(self, f, data: bytes, off: int | None) -> int:
        """Write kernel bytes to ``f`` (the write side of a splice)."""
        n = write_kernel_bytes(f, data, off)
        return -E.EINVAL if n is None else n

    def sys_sendfile(self, cpu, task, out_fd, in_fd, offp, count, *a):
        cpu.charge(self.cost.syscall_body)
        inf, outf = task.files.get(_s32(in_fd)), task.files.get(_s32(out_fd))
        if inf is None or not inf.readable or outf is None or not outf.writable:
            return -E.EBADF
        if not isinstance(inf, (HostFile, DevNull)) or getattr(inf, "node", None) is None or inf.node.is_dir:
            return -E.EINVAL                    # the input must be mmap-able (splice_read)
        if isinstance(outf, VfsFile) and outf.flags & 0o2000:
            return -E.EINVAL                    # O_APPEND output
        if not isinstance(outf, (OutputFile, VfsFile)):
            return -E.EINVAL                    # (pipes and sockets: not modelled here)
        if offp:
            if task.mm.find(offp) is None:
                return -E.EFAULT
            pos = _s64(int.from_bytes(task.mm.read(offp, 8), "little"))
            if pos < 0:
                return -E.EINVAL
        else:
            pos = inf.pos
        count = min(count & ((1 << 64) - 1), 0x7FFFF000)    # MAX_RW_COUNT
        done = _copy_loop(lambda n, o: inf.pread(n, pos + o), lambda data, o: self._put(outf, data, None), count)
        if done < 0:
            return done
        if offp:
            task.mm.write(offp, (pos + done).to_bytes(8, "little"))
        else:
            inf.pos = pos + done
        cpu.charge(self.cost.syscall_body * (1 + done // 4096))
        return done

    def sys_copy_file_range(self, cpu, task, fd_in, off_in, fd_out, off_out, length, flags, *a):
        cpu.charge(self.cost.syscall_body)
        if flags & 0xFFFFFFFF:
            return -E.EINVAL
        inf, outf = task.files.get(_s32(fd_in)), task.files.get(_s32(fd_out))
        if inf is None or not inf.readable or outf is None or not outf.writable:
            return -E.EBADF
        for f in (inf, outf):
            node = getattr(f, "node", None)
            if node is not None and node.is_dir:
                return -E.EISDIR
            if not isinstance(f, HostFile):
                return -E.EINVAL                # generic_file_rw_checks: regular files only
        if outf.flags & 0o2000:
            return -E.EBADF                     # O_APPEND
        offs = []
        for p, f in ((off_in, inf), (off_out, outf)):
            if p:
                if task.mm.find(p) is None:
                    return -E.EFAULT
                v = _s64(int.from_bytes(task.mm.read(p, 8), "little"))
                if v < 0:
                    return -E.EINVAL
                offs.append(v)
            else:
                offs.append(f.pos)
        pin, pout = offs
        length &= (1 << 64) - 1
        if pin + length > MAX_LFS or pout + length > MAX_LFS:
            return -EOVERFLOW
        if (self._meta_key(inf.node, inf) == self._meta_key(outf.node, outf)
                and pin < pout + length and pout < pin + length):
            return -E.EINVAL                    # overlapping ranges of one file
        length = min(length, 0x7FFFF000)
        done = _copy_loop(lambda n, o: inf.pread(n, pin + o), lambda data, o: outf.pwrite(data, pout + o), length)
        if done < 0:
            return done
        for p, f, base in ((off_in, inf, pin), (off_out, outf, pout)):
            if p:
                task.mm.write(p, (base + done).to_bytes(8, "little"))
            else:
                f.pos = base + done
        cpu.charge(self.cost.syscall_body * (1 + done // 4096))
        return done

    # ---- xattrs (fs/xattr.c) ------------------------------------------------------------------------
    # emukern's file systems carry no extended attributes: the root is modelled as a file system
    # mounted without user xattrs, so every call that reaches a file answers EOPNOTSUPP, after the
    # path lookup / fd check Linux does first (ENOENT, EBADF, EFAULT stay what they are).
    def _xattr_path(self, cpu, task, path_ptr, follow: bool) -> int:
        cpu.charge(self.cost.syscall_body)
        node = self._lookup_at(task, AT_FDCWD, path_ptr, follow=follow)   # type: ignore[attr-defined]
        return node if isinstance(node, int) else -EOPNOTSUPP

    def _xattr_fd(self, cpu, task, fd) -> int:
        cpu.charge(self.cost.syscall_body)
        return -E.EBADF if task.files.get(_s32(fd)) is None else -EOPNOTSUPP

    def sys_setxattr(self, cpu, task, p, *a):
        return self._xattr_path(cpu, task, p, True)

    def sys_lsetxattr(self, cpu, task, p, *a):
        return self._xattr_path(cpu, task, p, False)

    def sys_fsetxattr(self, cpu, task, fd, *a):
        return self._xattr_fd(cpu, task, fd)

    sys_getxattr, sys_listxattr, sys_removexattr = sys_setxattr, sys_setxattr, sys_setxattr
    sys_lgetxattr, sys_llistxattr, sys_lremovexattr = sys_lsetxattr, sys_lsetxattr, sys_lsetxattr
    sys_fgetxattr, sys_flistxattr, sys_fremovexattr = sys_fsetxattr, sys_fsetxattr, sys_fsetxattr

    _unused = (S_IFIFO, EXDEV, fs_of)
