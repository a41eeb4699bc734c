"""Build a real kernel that no distribution ships: Debian's linux-source with a patch on top.

Some modelled changes are still mailing-list series, so no Debian kernel can answer for them.
For those, a profile in :mod:`emukern.oracle.kernels` names a *local build*: Debian's
``linux-source-6.12`` (the same release as Debian 13's kernel, so everything the patch does not
touch behaves as the shipped kernel), a patch kept in ``emukern/oracle/patches/``, and a Kconfig
fragment merged onto ``allnoconfig``.  The fragment holds only what emukern's runner and the
probes need: a full ``defconfig`` builds thousands of drivers and takes hours on a small shared
machine, while the fragment's kernel builds in well under an hour on 2 cores.

Usage (what ``emukern linux --kernel NAME`` says when the image is missing)::

    python -m emukern.oracle.build riscv64-6.12-optimize-restore [-j N]

Steps, each skipped when its stamp says it is done: download linux-source (emukern.debian's
private apt), unpack the whole tree except Documentation/ into
``~/.cache/emukern/kbuild/<profile>/``, apply the patch, configure, ``make Image`` under
``nice``, then copy the Image and its .config to ``~/.cache/emukern/kernels/<profile>/`` and write
``<profile>.json`` (the record :func:`emukern.oracle.kernels.fetch_kernel` reads).

Build tools (flex, bison, bc, libssl-dev, libelf-dev and the cross compiler) are checked first so
a missing one is named before a long build starts.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from emukern.debian import cache_root
from emukern.oracle import OracleError

PATCH_DIR = Path(__file__).with_name("patches")


@dataclass(frozen=True)
class LocalBuild:
    """How to make one locally built kernel."""
    patch: str                     # file in emukern/oracle/patches/
    fragment: str                  # Kconfig fragment there, merged onto allnoconfig
    karch: str                     # the kernel's ARCH
    cross: str                     # CROSS_COMPILE prefix
    image: str                     # the built image, relative to the tree
    # options the finished .config must have (=y): a fragment the Kconfig dependencies silently
    # dropped would otherwise boot a kernel without them
    required: tuple[str, ...] = ()


BUILDS: dict[str, LocalBuild] = {
    "riscv64-6.12-optimize-restore": LocalBuild(
        "riscv-optimize-vector-restore.patch", "riscv64-6.12-optimize-restore.config",
        "riscv", "riscv64-linux-gnu-", "arch/riscv/boot/Image",
        ("CONFIG_BLK_DEV_INITRD", "CONFIG_DEVTMPFS", "CONFIG_PID_NS", "CONFIG_SERIAL_8250_CONSOLE",
         "CONFIG_SERIAL_OF_PLATFORM", "CONFIG_RISCV_ISA_V", "CONFIG_RISCV_ISA_V_DEFAULT_ENABLE",
         "CONFIG_PROC_SYSCTL", "CONFIG_ARCH_VIRT", "CONFIG_RISCV_ISA_FALLBACK")),
}

# host tools the kernel build runs (Debian package -> a file that shows it is installed)
BUILD_TOOLS = {"flex": "/usr/bin/flex", "bison": "/usr/bin/bison", "bc": "/usr/bin/bc",
               "libssl-dev": "/usr/include/openssl/ssl.h", "libelf-dev": "/usr/include/libelf.h",
               "make": "/usr/bin/make"}


def build_command(name: str) -> str:
    return f"python -m emukern.oracle.build {name}"


def kbuild_dir(name: str) -> Path:
    return cache_root() / "kbuild" / name


def patch_id(b: LocalBuild) -> str:
    """What the build depends on besides the source: the patch and the fragment (8 hex digits)."""
    h = hashlib.sha256()
    for f in (b.patch, b.fragment):
        h.update((PATCH_DIR / f).read_bytes())
    return h.hexdigest()[:8]


def missing_tools(b: LocalBuild) -> list[str]:
    out = [pkg for pkg, path in BUILD_TOOLS.items() if not Path(path).exists()]
    if shutil.which(b.cross + "gcc") is None:
        out.append(f"gcc-{b.cross.rstrip('-').replace('-linux-gnu', '')}-linux-gnu")
    return out


def _run(cmd: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None) -> None:
    with log.open("a") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        p = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    if p.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-25:]
        raise OracleError(f"{' '.join(cmd[:4])} failed (exit {p.returncode}); last lines of {log}:\n"
                          + "\n".join(tail))


def unpack_source(dest: Path, progress=print) -> tuple[Path, str]:  # type: ignore[no-untyped-def]
    """Debian's linux-source unpacked whole (but Documentation/) under ``dest``: (tree, version)."""
    from emukern.debian import AptFetcher, FetchError, extract
    from emukern.selftests.source import DEBIAN_RELEASE, PACKAGE
    stamp = dest / ".emukern-unpacked"
    if stamp.exists():
        tree, version = stamp.read_text().split("\n")[:2]
        return Path(tree), version
    try:
        deb = AptFetcher(DEBIAN_RELEASE, "all").download(PACKAGE)
        got = extract(deb, dest / "deb", lambda n: n.endswith(".tar.xz") and n.startswith("usr/src/"))
    except FetchError as exc:
        raise OracleError(f"cannot fetch {PACKAGE}: {exc.message}", hint=exc.hint) from None
    if not got:
        raise OracleError(f"{deb.name} holds no usr/src/*.tar.xz", hint="is it a linux-source package?")
    tarball = got[0]
    progress(f"unpacking {tarball.name} (all but Documentation/, about 1.4 GB)")
    p = subprocess.run(["tar", "-xJf", str(tarball), "-C", str(dest), "--exclude=*/Documentation"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise OracleError(f"unpacking {tarball.name} failed: {p.stderr.strip()[-300:]}")
    tree = dest / tarball.name[: -len(".tar.xz")]
    # the top Kconfig sources Documentation/Kconfig (doc-build warnings only): an empty one
    (tree / "Documentation").mkdir(exist_ok=True)
    (tree / "Documentation" / "Kconfig").write_text(
        "# Documentation/ is not unpacked for this build: its Kconfig only holds doc-build warnings\n")
    shutil.rmtree(dest / "deb", ignore_errors=True)
    version = deb.name.split("_")[1] if deb.name.count("_") >= 2 else "?"
    stamp.write_text(f"{tree}\n{version}\n")
    return tree, version


def build(name: str, jobs: int = 2, progress=print) -> Path:  # type: ignore[no-untyped-def]
    """Build profile ``name``'s kernel and record it for fetch_kernel; the record's path."""
    b = BUILDS.get(name)
    if b is None:
        raise OracleError(f"{name!r} is not a locally built kernel", hint="buildable: " + ", ".join(BUILDS))
    lacking = missing_tools(b)
    if lacking:
        raise OracleError("the kernel build needs " + ", ".join(lacking),
                          hint="apt-get install " + " ".join(lacking) + " (tools/setup.sh installs them)")
    work = kbuild_dir(name)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "build.log"
    tree, version = unpack_source(work, progress)
    pid = patch_id(b)
    patched = tree / ".emukern-patched"
    if not patched.exists():
        progress(f"applying {b.patch}")
        _run(["patch", "-p1", "--forward", "-i", str(PATCH_DIR / b.patch)], tree, log)
        patched.write_text(pid + "\n")
    elif patched.read_text().strip() != pid:
        raise OracleError(f"{tree} carries an older version of {b.patch}",
                          hint=f"remove {work} and build again")
    env = {**os.environ, "ARCH": b.karch, "CROSS_COMPILE": b.cross}
    progress("configuring: allnoconfig + " + b.fragment)
    _run(["make", "-s", "allnoconfig"], tree, log, env)
    _run(["scripts/kconfig/merge_config.sh", "-m", ".config", str(PATCH_DIR / b.fragment)], tree, log, env)
    _run(["make", "-s", "olddefconfig"], tree, log, env)
    cfg = (tree / ".config").read_text()
    lost = [c for c in b.required if f"\n{c}=y\n" not in "\n" + cfg]
    if lost:
        raise OracleError(f"the configured kernel lacks {', '.join(lost)}",
                          hint=f"Kconfig dependencies dropped them: fix {b.fragment}")
    progress(f"make -j{jobs} Image under nice (long: see {log})")
    _run(["nice", "-n", "10", "make", f"-j{jobs}", "Image"], tree, log, env)
    return install_image(name, tree, version, progress)


def install_image(name: str, tree: Path, version: str, progress=print) -> Path:  # type: ignore[no-untyped-def]
    """Copy a built tree's image and .config into the kernel cache and record them for
    fetch_kernel (also for a tree built by hand with the same patch and fragment)."""
    from emukern.oracle.kernels import PROFILES, kernels_dir
    b = BUILDS[name]
    pid = patch_id(b)
    dest = kernels_dir() / name
    dest.mkdir(parents=True, exist_ok=True)
    img = dest / "Image"
    shutil.copyfile(tree / b.image, img)
    shutil.copyfile(tree / ".config", dest / "config")
    rec = kernels_dir() / f"{name}.json"
    p = PROFILES[name]
    rec.write_text(json.dumps({"package": f"local build of linux-source {version} + {b.patch}",
                               "version": f"{version}+{pid}", "image": str(img),
                               "config": str(dest / "config"), "linux": p.linux}, indent=1) + "\n")
    progress(f"built {img} ({version}+{pid})")
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emukern.oracle.build",
                                 description="Build a kernel profile that no distribution ships "
                                             "(Debian's linux-source + a patch); see the module docstring.")
    ap.add_argument("name", choices=sorted(BUILDS))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    try:
        build(a.name, jobs=a.jobs)
    except OracleError as exc:
        print(f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
