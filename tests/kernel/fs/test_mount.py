"""mount(2) of tmpfs and ramfs (kernel/fs/mount.py, kernel/syscalls/nsproxy.py) and the walk
across them (kernel/fs/vfs.py), on both arches: guest_asm/c/mount_probe.c, as root, unshares a
mount namespace, mounts a tmpfs on /w (mode=/uid=/gid=), makes, chmods, chowns and execs files
there, leaves the mount root by '..', follows hostile symlinks out of it (they stay in the guest
root), cannot rename or link across the mount's edge (EXDEV) or remove or rename the
mountpoint (EBUSY), stacks a ramfs, fills a size=8k tmpfs to ENOSPC, and unmounts; a process that stayed in
the initial namespace never sees the mounts.  The probe prints relations, never numbers that
differ between kernels, so its output is compared with the host kernel's (the same binary under
qemu-user, chrooted into a copy of the same root in a mount namespace of its own)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from emukern.api import Machine

import importlib.util
from pathlib import Path

# this directory's conftest by path: a bare "from conftest import" picks whichever conftest module
# another test directory loaded first under xdist (tests/hostile's has no QEMU)
_spec = importlib.util.spec_from_file_location("kernel_fs_conftest", Path(__file__).with_name("conftest.py"))
assert _spec is not None and _spec.loader is not None
_fs_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fs_conftest)
ARCHES, QEMU, need_qemu = _fs_conftest.ARCHES, _fs_conftest.QEMU, _fs_conftest.need_qemu

EXPECTED = """unshare: 0
private: 0
bad fs type: -1
mount tmpfs: 0
root: mode 40751 uid 5 gid 6
st_dev differs: 1, magic tmpfs: 1
under hidden: -2
f same dev as /w: 1
copy exe: 0
chmod 4755: 0
exe mode 104755
chown 7 8: 0
f uid 7 gid 8 size 5
exec from tmpfs: euid 0
exec status 3
chdir /w: 0
dotdot is /: 1, ../marker 0, ../../../marker 0
dotdot dev is root dev: 1
rename out: -18, link out: -18
rename in: -18
rmdir mountpoint: -16, rename mountpoint: -16
symlink /: 0, through it 0
symlink ../../..: 0, through it 0, back in 0
host escape via links: -2
mkdir sub: 0
mount ramfs: 0
magic ramfs: 1, dev differs: 1
sub/.. is /w: 1
umount ramfs: 0, r -2
mount size=8k: 0
blocks 2 bsize 4096
write 12k: 8192
write more: -28
umount small: 0
outsider: under 0, f -2
chdir /: 0
umount tmpfs: 0
after: under 0, f -2
umount again: -1
"""


def _root(tmp_path):
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    (root / "w" / "under").write_text("u")
    (root / "marker").write_text("m")
    return root


@pytest.mark.parametrize("arch", ARCHES)
def test_tmpfs_and_ramfs_mounts(arch, tmp_path, cguest):
    root = _root(tmp_path)
    shutil.copy(cguest("mount_probe", arch), root / "mount_probe")
    r = Machine(root=str(root), root_rw=True).load(root / "mount_probe", []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    # nothing the guest made in its mounts reached the guest root (or anywhere under it)
    assert sorted(p.name for p in (root / "w").iterdir()) == ["under"]
    assert sorted(os.listdir(root)) == ["marker", "mount_probe", "w"]


@pytest.mark.parametrize("arch", ARCHES)
def test_mount_backings_are_private_and_removed(arch, tmp_path, cguest):
    """Each mount's files live in a private host directory of the machine, gone with it."""
    import gc
    root = _root(tmp_path)
    shutil.copy(cguest("mount_probe", arch), root / "mount_probe")
    m = Machine(root=str(root), root_rw=True)
    r = m.load(root / "mount_probe", []).run()
    assert r.exit_status == 0, r.message
    private = m.kernel.vfs.mounts._private
    assert private is not None and os.path.isdir(private)
    assert not private.startswith(str(root))
    del m, r
    gc.collect()                        # the machine is gone: so is its private state
    assert not os.path.exists(private)


def _built_selftest(arch: str, suite: str, name: str):
    from cguests import cache_root
    found = sorted(cache_root().glob(f"selftests/*/{arch}/generic/{suite}/{name}"))
    if not found:
        pytest.skip(f"generic/{suite}/{name} for {arch} is not built (emukern selftests builds it)")
    return found[-1].parent


@pytest.mark.parametrize("arch", ARCHES)
def test_capabilities_test_execve_from_its_directory(arch, tmp_path, monkeypatch):
    """capabilities/test_execve mounts a tmpfs over its cwd and chdir()s back to it by path, so
    it needs a cwd below its root, as the real kernels' runner gives it (emukern's generic
    runner makes the test's directory the guest root: see its expected.toml entry).  Both
    halves (as root, then as uid != 0) pass every case, and the set-id copies stay in the
    tmpfs."""
    built = _built_selftest(arch, "capabilities", "validate_cap")
    root = tmp_path / "root"
    d = root / "capabilities"
    d.mkdir(parents=True)
    for n in ("test_execve", "validate_cap"):
        shutil.copy2(built / n, d / n)
    (root / "tmp").mkdir(mode=0o1777)
    monkeypatch.chdir(d)
    r = Machine(root=str(root), root_rw=True, arch=arch).load("./test_execve", []).run()
    out = r.stdout.decode()
    assert r.exit_status == 0, out[-2000:]
    assert "# Totals: pass:12 fail:0" in out and "# Totals: pass:9 fail:0" in out, out[-2000:]
    assert sorted(os.listdir(d)) == ["test_execve", "validate_cap"]


# The lines where the host kernel's answers differ, and why (nothing about tmpfs or the walk):
# the chroot's '/' is not a mount (EINVAL for MS_PRIVATE; emukern's '/' is one), qemu-user
# cannot execve a guest binary without binfmt_misc (ENOEXEC), and an unknown file system type or
# umount of a non-mountpoint keep emukern's old answer, EPERM (Linux: ENODEV, EINVAL).
HOST_DIFFERS = {"private: ", "bad fs type: ", "exec from tmpfs: ", "exec failed: ", "exec status ",
                "umount again: "}


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_mount_probe_matches_the_host_kernel(arch, tmp_path, cguest):
    need_qemu(arch)
    qemu = shutil.which(QEMU[arch])
    root = _root(tmp_path)
    shutil.copy(cguest("mount_probe", arch), root / "mount_probe")
    # qemu and its host libraries inside the root, run through their own loader
    libs = subprocess.run(["ldd", qemu], capture_output=True, text=True).stdout.split()
    libs = [p for p in libs if p.startswith("/")]
    loader = next((p for p in libs if "ld-linux" in p), None)
    if loader is None:
        pytest.skip("qemu-user is not a dynamically linked host binary")
    for lib in libs:
        dest = root / "q" / lib.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(lib), dest)
    shutil.copy(qemu, root / "q" / "qemu")
    libpath = ":".join(sorted({"/q" + os.path.dirname(p) for p in libs}))
    q = subprocess.run(["unshare", "-m", "--propagation", "private", "chroot", str(root),
                        "/q" + loader, "--library-path", libpath, "/q/qemu", "/mount_probe"],
                       capture_output=True, timeout=120)
    if q.returncode != 0 and b"unshare" in q.stderr:
        pytest.skip(f"no mount namespace for the host run: {q.stderr.decode().strip()[:200]}")
    assert q.returncode == 0, q.stderr.decode()
    shutil.rmtree(root / "q")
    keep = lambda text: [ln for ln in text.splitlines() if not any(ln.startswith(d) for d in HOST_DIFFERS)]  # noqa: E731
    assert keep(q.stdout.decode()) == keep(EXPECTED)
