"""Debian's python3.13 under emukern uses the .pyc files compiled for it (docs/guide/running.rst,
"The wall clock and file times").

A .pyc records its source's mtime and size; python recompiles a module whose .pyc disagrees with
what stat says of the .py.  With every file time 0 every .pyc was stale and each start compiled
its modules again.  The root here is trixie's python3.13-minimal unpacked with ``dpkg-deb -x``
(which keeps the packages' mtimes), its .pyc compiled by the same python under qemu-user, as a
package's postinst (py3compile) compiles them on a real system.  Skips without the packages
(no network and no cache), dpkg-deb or qemu-aarch64."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.debian import AptFetcher, FetchError, cache_root

PACKAGES = ("python3.13-minimal", "libpython3.13-minimal", "zlib1g", "libexpat1", "libc6")
# what `python3 -c "import argparse, json"` imports from .py files (the rest is frozen)
MODULES = ("encodings/__init__", "encodings/aliases", "encodings/utf_8", "linecache", "argparse",
           "re/__init__", "re/_compiler", "re/_parser", "re/_constants", "re/_casefix", "enum",
           "functools", "collections/__init__", "keyword", "operator", "reprlib", "types", "copyreg",
           "json/__init__", "json/decoder", "json/scanner", "json/encoder", "sitecustomize")
LIB = "usr/lib/python3.13"


def _root() -> Path:
    """The unpacked root with its .pyc (built once, in emukern's cache)."""
    for tool in ("dpkg-deb", "qemu-aarch64"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    try:
        f = AptFetcher("trixie", "arm64")
        debs = [f.download(p) for p in PACKAGES]
    except FetchError as e:
        pytest.skip(f"Debian trixie arm64 packages unavailable: {e}")
    key = hashlib.sha256("\0".join(d.name for d in debs).encode()).hexdigest()[:16]
    key = hashlib.sha256(f"{key} {MODULES}".encode()).hexdigest()[:16]
    root = cache_root() / "test-roots" / f"python3.13-arm64-{key}"
    if not (root / ".complete").exists():
        tmp = root.with_name(f"{root.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for d in debs:
            subprocess.run(["dpkg-deb", "-x", str(d), str(tmp)], check=True)
        for name in ("lib", "bin"):                # merged /usr, as usrmerge makes it
            if not (tmp / name).exists():
                (tmp / name).symlink_to(f"usr/{name}")
        # sitecustomize.py is a link to /etc/python3.13/: compiled from its target, the .pyc
        # where python looks for it (the link's __pycache__)
        compile_all = ("import py_compile, importlib.util, sys\n"
                       "for src, name in zip(sys.argv[2::2], sys.argv[3::2]):\n"
                       "    py_compile.compile(src, cfile=importlib.util.cache_from_source(sys.argv[1] + name),"
                       " doraise=True)\n")
        pairs = [(str(tmp / LIB / f"{m}.py"), f"/{m}.py") for m in MODULES if m != "sitecustomize"]
        pairs.append((str(tmp / "etc/python3.13/sitecustomize.py"), "/sitecustomize.py"))
        subprocess.run(["qemu-aarch64", "-L", str(tmp), str(tmp / "usr/bin/python3.13"), "-c", compile_all,
                        str(tmp / LIB), *(x for pair in pairs for x in pair)], check=True, timeout=600)
        (tmp / ".complete").touch()
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
    return root


def _python(root: Path, code: str, rw: bool = False):
    r = Machine(arch="arm64", root=str(root), root_rw=rw).load(
        root / "usr/bin/python3.13", ["-v", "-c", code], ["PATH=/usr/bin"]).run()
    assert r.exit_code == 0, r.stderr.decode(errors="replace")[-2000:]
    err = r.stderr.decode(errors="replace")
    return r.user_insns, len(re.findall(r"\.pyc matches ", err)), len(re.findall(r"bytecode is stale", err))


def test_python_uses_shipped_pyc(tmp_path):
    root = _root()
    insns, used, stale = _python(root, "pass")
    print(f"python3 -c pass: {insns:,} user instructions, {used} .pyc used, {stale} stale")
    assert used == 5 and stale == 0            # encodings (3), linecache, sitecustomize
    insns_j, used_j, stale_j = _python(root, "import argparse, json")
    print(f"python3 -c 'import argparse, json': {insns_j:,} user instructions, {used_j} .pyc used, {stale_j} stale")
    assert used_j == len(MODULES) and stale_j == 0
    # against .pyc the guest compiles itself under emukern (a --root-rw copy without them):
    # the shipped ones must serve as well (within 5 %)
    fresh = tmp_path / "root"
    shutil.copytree(root, fresh, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    _python(fresh, "import argparse, json", rw=True)             # writes them
    insns_f, used_f, stale_f = _python(fresh, "import argparse, json")
    print(f"with .pyc the guest compiled: {insns_f:,} user instructions, {used_f} .pyc used")
    assert used_f >= len(MODULES) and stale_f == 0
    assert abs(insns_j - insns_f) <= 0.05 * insns_f
