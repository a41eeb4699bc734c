"""A cpio archive in the "newc" format: what the kernel unpacks as its initramfs.

Written by hand (no `cpio` tool, no root): the kernel's initramfs unpacker (init/initramfs.c)
reads the ASCII "070701" headers, so device nodes such as /dev/console can be described without
creating them on the host.  Entries are emitted in a fixed order with fixed times and owners, so
the same inputs give the same bytes.
"""
from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from emukern.errors import ConfigError


def _pad4(n: int) -> bytes:
    return b"\0" * ((4 - n % 4) % 4)


@dataclass
class Cpio:
    entries: dict[str, tuple[int, bytes, int]] = field(default_factory=dict)   # name -> (mode, data, rdev)

    def _parents(self, name: str) -> None:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.entries:
                self.entries[d] = (stat.S_IFDIR | 0o755, b"", 0)

    @staticmethod
    def _clean(name: str) -> str:
        parts = [p for p in name.strip("/").split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            raise ConfigError(f"bad initramfs path {name!r}", hint="paths must stay inside the initramfs")
        return "/".join(parts)

    def dir(self, name: str, mode: int = 0o755) -> None:
        name = self._clean(name)
        self._parents(name)
        self.entries[name] = (stat.S_IFDIR | mode, b"", 0)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        name = self._clean(name)
        self._parents(name)
        self.entries[name] = (stat.S_IFREG | mode, data, 0)

    def symlink(self, name: str, target: str) -> None:
        name = self._clean(name)
        self._parents(name)
        self.entries[name] = (stat.S_IFLNK | 0o777, target.encode(), 0)

    def chardev(self, name: str, major: int, minor: int, mode: int = 0o600) -> None:
        name = self._clean(name)
        self._parents(name)
        self.entries[name] = (stat.S_IFCHR | mode, b"", (major << 8) | minor)

    def tree(self, root: Path, prefix: str = "") -> None:
        """Add the files, directories and symlinks under ``root`` (sorted; special files skipped)."""
        root = Path(root)
        if not root.is_dir():
            raise ConfigError(f"--root {root} is not a directory")
        for p in sorted(root.rglob("*")):
            rel = (prefix + "/" + p.relative_to(root).as_posix()).strip("/")
            if p.is_symlink():
                self.symlink(rel, str(p.readlink()))
            elif p.is_dir():
                self.dir(rel, p.stat().st_mode & 0o7777)
            elif p.is_file():
                self.file(rel, p.read_bytes(), p.stat().st_mode & 0o7777)

    def to_bytes(self) -> bytes:
        out = bytearray()
        ino = 1
        for name in sorted(self.entries, key=lambda n: (n.count("/"), n)):
            mode, data, rdev = self.entries[name]
            out += self._header(ino, mode, len(data), rdev, name)
            out += data + _pad4(len(data))
            ino += 1
        out += self._header(0, 0, 0, 0, "TRAILER!!!")
        return bytes(out)

    @staticmethod
    def _header(ino: int, mode: int, size: int, rdev: int, name: str) -> bytes:
        nb = name.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(mode) else 1
        fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev >> 8, rdev & 0xFF, len(nb), 0]
        h = b"070701" + b"".join(f"{v:08x}".encode() for v in fields)
        return h + nb + _pad4(len(h) + len(nb))
