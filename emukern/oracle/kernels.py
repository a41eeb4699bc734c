"""Named real kernels, where their images come from, and which emukern policies match each.

A real kernel has exactly one behaviour per modelled change: it either contains the patch or not.
Each profile records which, so `emukern compare` runs emukern with the same choices:

* "arm64: rework EL0 MRS emulation" (Mark Rutland) went into Linux 6.2.  Debian 12's 6.1 kernel
  therefore still emulates EL0 MRS from the undef_hook list under undef_lock (arm64-mrs=hook-list);
  Debian 13's 6.12 calls try_emulate_mrs() directly (arm64-mrs=direct).
* "arm64/sve: Performance improvements with SVE state saving" (Mark Brown) is still a proposal
  (v11 is based on v7.3-rc1): no Debian kernel has sve_timeout, so both arm64 kernels are
  arm64-sve=legacy (TIF_SVE is dropped only when FPSIMD-only state is loaded).
* "riscv: Add sysctl to control discard of VS state" (Drew Fustini, July 2025) is not in 6.12:
  syscall entry always discards (riscv-vstate-sysctl=absent).  6.12 does discard: Björn Töpel's
  "riscv: Discard vector state on syscalls" is in since 6.5.
* "riscv: vector: treat VS_INITIAL as discard" (Andy Chiu, v2 April 2026) is not in 6.12: syscall
  entry clobbers the registers and marks the state dirty (riscv-discard=eager).
* Its successor, "riscv: optimize Vector context restore on syscall" (Andy Chiu, v3/v4 May 2026),
  is in no distribution kernel.  ``riscv64-6.12-optimize-restore`` is Debian's linux-source-6.12
  built here with that series *and* Drew Fustini's sysctl ported onto it
  (emukern/oracle/patches/, built by emukern.oracle.build): riscv-discard=optimize-restore,
  riscv-vstate-sysctl=present, knob default 0 (CONFIG_RISCV_ISA_V_VSTATE_DISCARD=n).  emukern's side
  of a comparison models Debian 13's 6.12 (``models``) with those two policies on top.

Images (but the local builds) are Debian's linux-image packages, resolved through the meta-package (linux-image-arm64,
linux-image-riscv64) at fetch time so the newest build of that release is used, downloaded with
emukern.debian's private apt configuration and unpacked into ~/.cache/emukern/kernels/.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from emukern.debian import AptFetcher, FetchError, cache_root, extract
from emukern.oracle import OracleError


@dataclass(frozen=True)
class KernelProfile:
    name: str
    arch: str                      # emukern's name: arm64 | riscv64
    release: str                   # Debian release (AptFetcher)
    meta: str                      # the meta-package that names the current image
    linux: str                     # upstream version line, for messages
    policies: dict[str, str] = field(default_factory=dict)
    # facts about the booted kernel that emukern's configuration must follow
    notes: str = ""
    # a kernel built here (emukern.oracle.build) rather than downloaded from Debian
    local: bool = False
    # the emukern kernel version (emukern.kernel.versions.KERNELS) whose paths the emukern side of
    # a comparison follows; None: the profile's own name
    models: str | None = None

    @property
    def emukern_kernel(self) -> str:
        return self.models or self.name

    @property
    def debian_arch(self) -> str:
        return self.arch

    @property
    def qemu(self) -> str:
        return "qemu-system-aarch64" if self.arch == "arm64" else "qemu-system-riscv64"

    @property
    def console(self) -> str:
        # the serial console of QEMU's virt board: a PL011 on arm64, a 16550 on riscv
        return "ttyAMA0" if self.arch == "arm64" else "ttyS0"


def _shipped(name: str) -> dict[str, str]:
    """The four changes as this real kernel has them: one table, emukern.kernel.versions.KERNELS,
    which `emukern run --kernel NAME` models (ID-register tables, MRS path, FP syscall path too)."""
    from emukern.kernel.versions import KERNELS
    return dict(KERNELS[name].policies)


PROFILES: dict[str, KernelProfile] = {p.name: p for p in [
    KernelProfile("debian-12-arm64", "arm64", "bookworm", "linux-image-arm64", "6.1",
                  _shipped("debian-12-arm64"),
                  "Debian 12 (bookworm): Linux 6.1, before the EL0 MRS rework"),
    KernelProfile("debian-13-arm64", "arm64", "trixie", "linux-image-arm64", "6.12",
                  _shipped("debian-13-arm64"),
                  "Debian 13 (trixie): Linux 6.12, try_emulate_mrs first; no sve_timeout"),
    KernelProfile("debian-13-riscv64", "riscv64", "trixie", "linux-image-riscv64", "6.12",
                  _shipped("debian-13-riscv64"),
                  "Debian 13 (trixie): Linux 6.12, eager vstate discard at every syscall, no sysctl"),
    KernelProfile("riscv64-6.12-optimize-restore", "riscv64", "trixie", "linux-source-6.12", "6.12",
                  {**_shipped("debian-13-riscv64"), "riscv-vstate-sysctl": "present",
                   "riscv-discard": "optimize-restore"},
                  "Debian's linux-source 6.12 built locally with 'riscv: optimize Vector context restore "
                  "on syscall' and Drew Fustini's abi.riscv_v_vstate_discard (default 0) ported on",
                  local=True, models="debian-13-riscv64"),
]}

MAX_AGE = 7 * 24 * 3600       # seconds after which fetch_kernel looks for a newer build

DEFAULT_FOR_ARCH = {"arm64": "debian-13-arm64", "riscv64": "debian-13-riscv64"}


def profile(name: str | None, arch: str | None) -> KernelProfile:
    """The profile called ``name`` (or the default one for ``arch``), checked against ``arch``."""
    if name is None:
        name = DEFAULT_FOR_ARCH.get(arch or "", None)
        if name is None:
            raise OracleError(f"no real kernel for architecture {arch!r}",
                              hint="use --arch arm64 or --arch riscv64")
    p = PROFILES.get(name)
    if p is None:
        raise OracleError(f"unknown kernel {name!r}", hint="known kernels: " + ", ".join(PROFILES))
    if arch is not None and arch != p.arch:
        raise OracleError(f"kernel {name} is an {p.arch} kernel but the program is {arch}",
                          hint="pick one of: " + ", ".join(n for n, q in PROFILES.items() if q.arch == arch))
    return p


@dataclass
class KernelImage:
    profile: KernelProfile
    package: str                   # e.g. linux-image-6.1.0-50-arm64
    version: str                   # the package version, e.g. 6.1.176-1
    image: Path                    # the bootable Image (vmlinuz / vmlinux)
    config: Path | None


def kernels_dir() -> Path:
    return cache_root() / "kernels"


def local_image(p: KernelProfile) -> KernelImage:
    """A locally built profile's image, or an error that leads with the command that builds it."""
    from emukern.oracle.build import build_command
    hit = _cached(p)
    if hit is None:
        raise OracleError(f"kernel {p.name} is not built here: run `{build_command(p.name)}` "
                          f"(Debian's linux-source + emukern/oracle/patches/, about 30-60 min on 2 cores)",
                          hint="it needs flex, bison, bc, libssl-dev, libelf-dev and the cross compiler "
                               "(tools/setup.sh); the image is then cached in ~/.cache/emukern/kernels/")
    return hit


def _cached(p: KernelProfile) -> KernelImage | None:
    rec = kernels_dir() / f"{p.name}.json"
    try:
        d = json.loads(rec.read_text())
        img = Path(d["image"])
        if img.is_file():
            cfg = Path(d["config"]) if d.get("config") else None
            return KernelImage(p, d["package"], d["version"], img, cfg)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def fetch_kernel(p: KernelProfile, refresh: bool = False, fetcher: AptFetcher | None = None) -> KernelImage:
    """The kernel image for profile ``p``: from the cache, else resolved and downloaded from Debian.

    ``refresh`` re-reads the archive's index (a newer build may have replaced the cached one).
    A locally built profile is never downloaded: see :func:`local_image`."""
    if p.local:
        return local_image(p)
    hit = _cached(p)
    if hit is not None and not refresh:
        age = time.time() - (kernels_dir() / f"{p.name}.json").stat().st_mtime
        if age < MAX_AGE:
            return hit
        # versions move: once a week look for a newer build, but an offline machine keeps working
        try:
            return fetch_kernel(p, refresh=True, fetcher=fetcher)
        except OracleError:
            return hit
    f = fetcher or AptFetcher(p.release, p.debian_arch)
    try:
        if refresh:
            f.update()
        deps = [d for d in f.depends(p.meta) if d.startswith("linux-image-")]
        if not deps:
            raise OracleError(f"{p.meta} in Debian {p.release} names no linux-image package",
                              hint="the archive's index may be incomplete; retry later")
        pkg = deps[0]
        deb = f.download(pkg)
    except FetchError as exc:
        raise OracleError(f"cannot fetch the {p.name} kernel: {exc.message}",
                          hint=exc.hint or "emukern downloads Debian's linux-image packages with apt-get") from None
    version = deb.name.split("_")[1] if deb.name.count("_") >= 2 else "?"
    dest = kernels_dir() / f"{pkg}_{version}"
    try:
        files = extract(deb, dest, lambda n: n.startswith("boot/vmlinu") or n.startswith("boot/config-"))
    except FetchError as exc:
        raise OracleError(f"cannot unpack {deb.name}: {exc.message}", hint=exc.hint) from None
    images = [x for x in files if x.name.startswith("vmlinu")]
    if not images:
        raise OracleError(f"{deb.name} holds no boot/vmlinuz", hint="is it a kernel image package?")
    configs = [x for x in files if x.name.startswith("config-")]
    img = KernelImage(p, pkg, version, images[0], configs[0] if configs else None)
    kernels_dir().mkdir(parents=True, exist_ok=True)
    (kernels_dir() / f"{p.name}.json").write_text(json.dumps(
        {"package": pkg, "version": version, "image": str(img.image),
         "config": str(img.config) if img.config else None}, indent=1) + "\n")
    return img


def kernel_config(img: KernelImage) -> dict[str, str]:
    """The image's build configuration (CONFIG_X -> value), empty when the package had none."""
    out: dict[str, str] = {}
    if img.config is None:
        return out
    for line in img.config.read_text(errors="replace").splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


# What the runner needs built into the kernel (a module cannot help: there is no root fs to load
# it from): the initramfs itself, devtmpfs for /dev, pid namespaces (each program is the pid 1
# of its own), and the board UART as console.  Debian builds all of these in; checked from the
# image's config-* so a custom image fails with a clear message instead of a silent console.
REQUIRED_CONFIG = {
    "arm64": ("CONFIG_BLK_DEV_INITRD", "CONFIG_DEVTMPFS", "CONFIG_PID_NS", "CONFIG_SERIAL_AMBA_PL011_CONSOLE"),
    "riscv64": ("CONFIG_BLK_DEV_INITRD", "CONFIG_DEVTMPFS", "CONFIG_PID_NS", "CONFIG_SERIAL_8250_CONSOLE",
                "CONFIG_RISCV_ISA_V"),
}


def check_bootable(img: KernelImage) -> None:
    """Raise OracleError if the image's configuration lacks something the runner depends on."""
    cfg = kernel_config(img)
    if not cfg:
        return                       # no config-* in the package: nothing to check against
    missing = [c for c in REQUIRED_CONFIG[img.profile.arch] if cfg.get(c) != "y"]
    if missing:
        raise OracleError(f"{img.package} lacks {', '.join(missing)} (built in, =y)",
                          hint="emukern's runner needs them; use a Debian kernel (--kernel)")
