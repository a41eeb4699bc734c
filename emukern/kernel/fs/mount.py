"""Memory file systems mounted by the guest (fs/namespace.c's do_new_mount for tmpfs and ramfs,
mm/shmem.c's option parsing) and the per-namespace mount tables the walk consults.

A tmpfs or ramfs the guest mounts is backed by a fresh host directory that only emukern knows:
one ``mkdtemp`` per mount under a private directory of this machine (removed when the machine
goes).  The mount's root is a held ``O_PATH`` handle of that directory, so its files are
reached exactly as the root's are (a held parent and one name, never a host path); nothing the
guest writes there can name a host object outside that backing, and ``..`` out of a mount
root is answered by the guest walk (the mountpoint's parent), never by the host.

Where a mount is attached: a mount namespace's table maps the *held handle key* of the
mountpoint directory (its host (st_dev, st_ino), as a dentry is the directory itself, not its
name) to the mount stacked there.  Tasks of other namespaces look in their own table and keep
their view.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass

TMPFS_MAGIC = 0x01021994
RAMFS_MAGIC = 0x858458F6
# st_dev of guest-mounted memory file systems: anonymous devices (major 0) as Linux gives
# them, numbered from here in mount order so every run of the same guest gets the same ones
FIRST_ANON_DEV = 0x30


@dataclass
class Mount:
    """One mounted memory file system (a struct mount with its super block)."""

    fstype: str                   # "tmpfs" or "ramfs"
    dev: int                      # st_dev of everything on it
    backing: str                  # the private host directory (messages and clean-up only)
    root_dir: object              # the held HostDir of the backing directory
    mode: int = 0o1777            # the root directory's permission bits (mode=)
    uid: int = 0
    gid: int = 0
    size: int = 0                 # bytes the files may hold (size=; 0: unlimited)
    source: str = "none"
    mountpoint: str = "/"         # guest path, for /proc/PID/mounts
    parent_key: tuple | None = None       # the held handle key of the directory mounted on

    @property
    def magic(self) -> int:
        return TMPFS_MAGIC if self.fstype == "tmpfs" else RAMFS_MAGIC

    def fit_write(self, cur_size: int, data: bytes, off: int) -> bytes:
        """What of a write at ``off`` into a file of ``cur_size`` bytes the size= limit lets
        through: whole new pages only, as shmem charges a page at a time (a short write, or
        nothing: ENOSPC)."""
        end = off + len(data)
        have = (cur_size + 4095) // 4096
        if end <= have * 4096:
            return data
        spare = (self.size - self.used_bytes()) // 4096
        limit = (have + max(0, spare)) * 4096
        return data[:max(0, limit - off)]

    def used_bytes(self) -> int:
        """What the files hold now (the size= limit's count; tmpfs counts pages, so do we)."""
        total = 0
        for dirpath, _dirs, files in os.walk(self.backing):
            for n in files:
                try:
                    s = os.lstat(os.path.join(dirpath, n))
                except OSError:
                    continue
                total += (s.st_size + 4095) // 4096 * 4096
        return total


def parse_options(fstype: str, data: str | None) -> dict | int:
    """shmem_parse_one for the options tmpfs takes (mode=, size=, uid=, gid=, nr_inodes=...);
    ramfs takes only mode= and ignores the rest, as ramfs_parse_param does.  -EINVAL for a
    malformed value."""
    EINVAL = 22
    out: dict = {}
    if not data:
        return out
    for opt in data.split(","):
        if not opt:
            continue
        key, _, val = opt.partition("=")
        try:
            if key == "mode":
                out["mode"] = int(val, 8) & 0o7777
            elif fstype != "tmpfs":
                continue
            elif key == "size":
                if val.endswith("%"):
                    out["size"] = 0
                    continue
                mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(val[-1:].lower(), 1)
                num = val[:-1] if mult != 1 else val
                out["size"] = (int(num, 0) * mult + 4095) // 4096 * 4096
            elif key in ("uid", "gid"):
                out[key] = int(val, 0)
            elif key in ("nr_inodes", "nr_blocks", "huge", "mpol", "inode64", "inode32",
                         "noswap", "quota", "usrquota", "grpquota", "noexec", "nosuid", "nodev"):
                continue
            else:
                return -EINVAL
        except ValueError:
            return -EINVAL
    return out


def statfs_bytes(m: Mount) -> bytes:
    """shmem_statfs / simple_statfs as struct statfs (asm-generic, 64-bit: 120 bytes): a tmpfs
    with size= reports its blocks and what is free of them, one without (and ramfs) none."""
    ST_VALID, ST_RELATIME = 0x20, 0x1000
    blocks = m.size // 4096
    free = max(0, blocks - m.used_bytes() // 4096) if blocks else 0
    vals = (m.magic, 4096, blocks, free, free, 0, 0, m.dev, 255, 4096, ST_VALID | ST_RELATIME)
    f_type, bsize, blocks, bfree, bavail, files, ffree, fsid, namelen, frsize, flags = vals
    le = lambda v: (v & (1 << 64) - 1).to_bytes(8, "little")       # noqa: E731
    fsid_b = (fsid & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4)
    return (le(f_type) + le(bsize) + le(blocks) + le(bfree) + le(bavail) + le(files) + le(ffree)
            + fsid_b + le(namelen) + le(frsize) + le(flags) + bytes(32))


class MountTables:
    """The guest's mounts of memory file systems: one table per mount namespace."""

    def __init__(self) -> None:
        self.by_ns: dict[int, dict[tuple, Mount]] = {}
        self._next_dev = FIRST_ANON_DEV
        self._private: str | None = None
        self.by_dev: dict[int, Mount] = {}

    def _private_dir(self) -> str:
        """This machine's private state for mount backings (made on the first mount, removed
        with the machine or at exit)."""
        if self._private is None:
            self._private = tempfile.mkdtemp(prefix="emukern-mnt-")
            weakref.finalize(self, shutil.rmtree, self._private, True)
        return self._private

    def new_backing(self) -> str:
        return tempfile.mkdtemp(prefix="m", dir=self._private_dir())

    def alloc_dev(self) -> int:
        dev = self._next_dev
        self._next_dev += 1
        return dev

    def table(self, ns: int) -> dict[tuple, Mount] | None:
        return self.by_ns.get(ns)

    def attach(self, ns: int, key: tuple, m: Mount) -> None:
        m.parent_key = key
        self.by_ns.setdefault(ns, {})[key] = m
        self.by_dev[m.dev] = m

    def detach(self, ns: int, m: Mount) -> bool:
        table = self.by_ns.get(ns, {})
        for key, have in list(table.items()):
            if have is m:
                del table[key]
                # a mount stacked on this one's root goes with it (MNT_DETACH of a subtree)
                rk = m.root_dir.key
                if rk in table:
                    self.detach(ns, table[rk])
                return True
        return False

    def copy_ns(self, old: int, new: int) -> None:
        """copy_mnt_ns: the new namespace starts with the old one's mounts (the same file
        systems: files written in either are seen in both, as copied mounts share super
        blocks)."""
        table = self.by_ns.get(old)
        if table:
            self.by_ns[new] = dict(table)
