"""Fetch packages from Debian's archive without touching the system's apt configuration.

emukern needs a few real artefacts that Debian packages: kernel images (to boot a real Linux under
qemu-system and compare it with the model) and the ``linux-source`` tree (whose selftests are the
conformance suite).  They are fetched with the ordinary ``apt-get download`` but through a
*private* apt configuration: its own sources list, state and cache directories under emukern's
cache, so the user's ``/etc/apt`` and ``/var/lib/apt`` are never changed and no root is needed.

Which mirror: the one the system's apt already uses for Debian (read from ``/etc/apt``), or the
``EMUKERN_DEBIAN_MIRROR`` environment variable.  Downloads are cached by file name, so a second
call answers without the network.

    >>> f = AptFetcher("trixie", "arm64")
    >>> deb = f.download("linux-image-6.12.12-arm64-unsigned")   # doctest: +SKIP
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from emukern.errors import EmukernError

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# The Debian releases emukern fetches from, and the suites each one needs.  The point releases
# update `main` itself; the small -updates suites are left out (a mirror caught mid-sync there
# would fail the whole update for packages emukern never takes from them).
SUITES = {
    "bookworm": ("bookworm", "bookworm-backports"),
    "trixie": ("trixie",),
}


class FetchError(EmukernError):
    """A package could not be had (no apt, no mirror, no network, no such package)."""


def cache_root() -> Path:
    base = os.environ.get("EMUKERN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "emukern")
    return Path(base)


def _deb822_uris(text: str) -> list[tuple[str, list[str]]]:
    out = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.strip()
        if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
            for uri in fields.get("uris", "").split():
                out.append((uri, fields.get("suites", "").split()))
    return out


def _one_line_uris(text: str) -> list[tuple[str, list[str]]]:
    out = []
    for line in text.splitlines():
        parts = re.sub(r"\[[^]]*\]", "", line).split()
        if len(parts) >= 3 and parts[0] == "deb":
            out.append((parts[1], [parts[2]]))
    return out


def system_debian_mirror(etc: Path = Path("/etc/apt")) -> str:
    """The URI the system's apt uses for Debian's main archive (not its security archive).

    ``EMUKERN_DEBIAN_MIRROR`` wins.  Raises :class:`FetchError` when none is configured."""
    env = os.environ.get("EMUKERN_DEBIAN_MIRROR")
    if env:
        return env.rstrip("/")
    entries: list[tuple[str, list[str]]] = []
    files = [etc / "sources.list", *sorted((etc / "sources.list.d").glob("*"))]
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        if f.name.endswith(".sources"):
            entries += _deb822_uris(text)
        elif f.name.endswith(".list"):
            entries += _one_line_uris(text)
    for uri, suites in entries:
        if uri.rstrip("/").endswith("/debian") and not any(s.endswith("-security") for s in suites):
            return uri.rstrip("/")
    raise FetchError("no Debian archive found in the system's apt sources",
                     hint="set EMUKERN_DEBIAN_MIRROR to a Debian mirror URI (the one apt uses)")


@dataclass
class AptFetcher:
    """``apt-get`` against one Debian release and architecture, in a private configuration."""

    release: str                    # "bookworm" or "trixie"
    arch: str                       # Debian architecture: "arm64", "riscv64", "amd64", "all"
    cache: Path | None = None
    mirror: str | None = None

    def __post_init__(self) -> None:
        if self.release not in SUITES:
            raise FetchError(f"unknown Debian release {self.release!r}",
                             hint=f"one of: {', '.join(SUITES)}")
        root = (self.cache or cache_root() / "apt") / f"{self.release}-{self.arch}"
        self.root = root
        self.debs = (self.cache or cache_root() / "apt") / "debs"

    # ---- the private configuration --------------------------------------------------------------
    def _options(self) -> list[str]:
        r = self.root
        arch = "amd64" if self.arch == "all" else self.arch
        return ["-o", f"Dir::Etc::SourceList={r / 'sources.list'}",
                "-o", f"Dir::Etc::SourceParts={r / 'sources.list.d'}",
                "-o", f"Dir::Etc::Preferences={r / 'preferences'}",
                "-o", f"Dir::Etc::PreferencesParts={r / 'preferences.d'}",
                "-o", f"Dir::State={r / 'state'}",
                "-o", f"Dir::State::status={r / 'status'}",
                "-o", f"Dir::Cache={r / 'cache'}",
                "-o", f"APT::Architecture={arch}",
                "-o", f"APT::Architectures={arch}",
                "-o", "Acquire::Languages=none",
                "-o", "Debug::NoLocking=1"]

    def _write_config(self) -> None:
        r = self.root
        for d in ("sources.list.d", "preferences.d", "state/lists/partial", "cache/archives/partial"):
            (r / d).mkdir(parents=True, exist_ok=True)
        (r / "status").touch()
        (r / "preferences").touch()
        mirror = self.mirror or system_debian_mirror()
        signed = f" signed-by={KEYRING}" if KEYRING.exists() else ""
        arch = "amd64" if self.arch == "all" else self.arch
        lines = [f"deb [arch={arch}{signed}] {mirror} {suite} main" for suite in SUITES[self.release]]
        (r / "sources.list").write_text("\n".join(lines) + "\n")

    def _apt(self, tool: str, *args: str, cwd: Path | None = None, timeout: float = 900) -> str:
        exe = shutil.which(tool)
        if exe is None:
            raise FetchError(f"{tool} not found", hint="emukern fetches Debian packages with apt: "
                             "run it on Debian/Ubuntu (apt-get is in the 'apt' package)")
        try:
            p = subprocess.run([exe, *self._options(), *args], cwd=cwd, capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise FetchError(f"{tool} {' '.join(args)} timed out after {timeout:.0f} s",
                             hint="check the network connection to the Debian mirror") from None
        if p.returncode != 0:
            tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-4:])
            raise FetchError(f"{tool} {' '.join(args)} failed: {tail}",
                             hint="is the Debian archive reachable? (EMUKERN_DEBIAN_MIRROR selects a mirror)")
        return p.stdout

    def update(self) -> None:
        """``apt-get update`` in the private configuration (once; ``refresh`` forces it)."""
        self._write_config()
        try:
            self._apt("apt-get", "update", "-q")
        except FetchError:
            # a mirror caught mid-sync serves an index whose size disagrees with its Release
            # file ("Hash Sum mismatch"); a second try a moment later normally succeeds
            self._apt("apt-get", "update", "-q")
        (self.root / "updated").touch()

    def _ensure_lists(self) -> None:
        if not (self.root / "updated").exists():
            self.update()

    def version(self, package: str) -> str | None:
        """The candidate version of ``package``, or None if the release has no such package."""
        self._ensure_lists()
        try:
            out = self._apt("apt-cache", "policy", package)
        except FetchError:
            return None
        m = re.search(r"Candidate:\s*(\S+)", out)
        return m.group(1) if m and m.group(1) != "(none)" else None

    def depends(self, package: str) -> list[str]:
        """The direct Depends of ``package`` (e.g. a meta-package's real image)."""
        self._ensure_lists()
        out = self._apt("apt-cache", "depends", "--no-recommends", "--no-suggests", package)
        return [m.group(1) for m in re.finditer(r"^\s+Depends:\s*(\S+)", out, re.M)]

    def _announce(self, package: str, ver: str) -> None:
        """Say what is downloaded, how big it is and where it goes, before a long download."""
        size = ""
        try:
            out = self._apt("apt-get", "download", "--print-uris", f"{package}={ver}", cwd=self.debs)
            m = re.search(r"^'[^']+'\s+\S+\s+(\d+)", out, re.M)
            if m:
                size = f" ({int(m.group(1)) / 1e6:.0f} MB)"
        except FetchError:
            pass                  # the download itself reports what is wrong
        print(f"emukern: downloading {package} {ver}{size} from Debian {self.release} into {self.debs} "
              "(once; later runs use the cache)", file=sys.stderr, flush=True)

    def download(self, package: str) -> Path:
        """Download ``package``'s .deb into the cache (answered from the cache when present)."""
        self.debs.mkdir(parents=True, exist_ok=True)
        cached = sorted(self.debs.glob(f"{package}_*_{self.arch}.deb"))
        if cached:
            return cached[-1]
        ver = self.version(package)
        if ver is None:
            raise FetchError(f"Debian {self.release} has no package {package!r} for {self.arch}",
                             hint="check the name with `apt-cache search` on a Debian machine")
        self._announce(package, ver)
        if sys.stderr.isatty() and shutil.which("apt-get"):
            # on a terminal, apt's own progress line (its stdout is our stderr: the guest's and
            # the tables' stdout stays clean); in a log, a quiet download after the line above
            exe = shutil.which("apt-get")
            p = subprocess.run([exe, *self._options(), "download", f"{package}={ver}"], cwd=self.debs,
                               stdout=sys.stderr.fileno(), stderr=subprocess.PIPE, text=True, timeout=900)
            if p.returncode != 0:
                self._apt("apt-get", "download", "-q", f"{package}={ver}", cwd=self.debs)   # its error, worded
        else:
            self._apt("apt-get", "download", "-q", f"{package}={ver}", cwd=self.debs)
        got = sorted(self.debs.glob(f"{package}_*_{self.arch}.deb"))
        if not got:
            raise FetchError(f"apt-get download {package} left no .deb in {self.debs}")
        return got[-1]


def deb_data_members(deb: Path) -> tarfile.TarFile:
    """The data tarball of a .deb, opened for reading (via dpkg-deb, which knows every compression)."""
    exe = shutil.which("dpkg-deb")
    if exe is None:
        raise FetchError("dpkg-deb not found", hint="install Debian's dpkg package")
    p = subprocess.run([exe, "--fsys-tarfile", str(deb)], capture_output=True)
    if p.returncode != 0:
        raise FetchError(f"{deb} is not a readable .deb: {p.stderr.decode(errors='replace').strip()}")
    import io
    return tarfile.open(fileobj=io.BytesIO(p.stdout))


def extract(deb: Path, dest: Path, select: "callable[[str], bool] | None" = None) -> list[Path]:  # type: ignore[valid-type]
    """Unpack the members of ``deb`` that ``select`` accepts (all by default) under ``dest``.

    Member paths are confined to ``dest`` (no absolute paths, no ``..``, no links out)."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    with deb_data_members(deb) as tf:
        for m in tf.getmembers():
            name = m.name.lstrip("./")
            if select is not None and not select(name):
                continue
            if m.isdev():
                continue
            tf.extract(m, dest, filter="data")
            out.append(dest / name)
    return out
