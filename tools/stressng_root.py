"""Build a guest root with Debian trixie's stress-ng and its shared-library dependencies (the
first step of a stress-ng suite; the suite itself is not written yet).

    python tools/stressng_root.py arm64|riscv64      # -> ~/.cache/emukern/test-roots/stress-ng-<arch>
    emukern run --root R --root-rw -- R/usr/bin/stress-ng --verify --seed 1 --fork 1 --fork-ops 5 -t 20

Follows Depends/Pre-Depends of every lib* package (and zlib1g) through emukern.debian.AptFetcher
and unpacks each with dpkg-deb -x; Architecture: all packages (libdrm-common, libx11-data) are
skipped (the fetcher downloads one architecture).  The root gets merged-/usr links (lib, bin,
sbin).  First measured on arm64 (--max-insns 300M, 90 s host bound): --verify passed for fork,
futex, pipe, eventfd, dup, brk, sigpending, yield, memcpy; mmap (256 MB per instance) ran past
the host bound.  fork logs "capget ... errno=38": capget is not implemented.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from emukern.debian import AptFetcher, FetchError, cache_root


def build(arch: str) -> Path:
    fetch = AptFetcher("trixie", arch)
    root = cache_root() / "test-roots" / f"stress-ng-{arch}"
    root.mkdir(parents=True, exist_ok=True)
    todo, seen = ["stress-ng"], set()
    while todo:
        pkg = todo.pop()
        if pkg in seen:
            continue
        seen.add(pkg)
        try:
            deb = fetch.download(pkg)
        except FetchError as exc:          # an Architecture: all package
            print(f"skipped {pkg}: {exc}", file=sys.stderr)
            continue
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        deps = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends", "Pre-Depends"],
                              capture_output=True, text=True, check=True).stdout
        for alt in re.sub(r"(Pre-)?Depends:", "", deps).replace("\n", ",").split(","):
            name = alt.split("|")[0].strip().split(" ")[0].split(":")[0]
            if name and (name.startswith("lib") or name == "zlib1g") and name not in seen:
                todo.append(name)
    for link in ("lib", "bin", "sbin"):
        if not (root / link).exists():
            os.symlink(f"usr/{link}", root / link)
    (root / "tmp").mkdir(exist_ok=True)
    return root


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "arm64"))
