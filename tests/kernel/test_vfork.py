"""CLONE_VFORK and the __WCLONE rule of wait (guest_asm/c/vfork_probe.c, static glibc on both
arches, run in a guest root holding only itself so that posix_spawn can exec it).

* vfork (glibc's: clone with CLONE_VM | CLONE_VFORK | SIGCHLD): the parent runs only after the
  child's _exit, so it reads the word the child wrote; a signal that reaches the parent while it
  waits neither ends the wait (no EINTR, no second child) nor is lost; SIGKILL ends it.
* posix_spawn (glibc: clone with CLONE_VFORK and its own stack): the exec of the program itself
  runs and exits 5; a missing program is posix_spawn's ENOENT, which glibc reads from memory the
  child wrote before it exited (without the wait, it returned 0 and the child exited 127).
* __WCLONE (kernel/exit.c eligible_child): a child with exit signal 0 is ECHILD for a plain
  waitpid/waitid and is reaped with __WCLONE or __WALL; __WCLONE does not see a fork child.

The oracle is Linux itself: the same C file built for the host and run natively prints the same
lines.  qemu-user is no oracle here: it turns CLONE_VFORK into a plain fork (linux-user's
do_fork drops CLONE_VM | CLONE_VFORK), so its parent reads 0, its posix_spawn of a missing
program succeeds, and its waitid refuses __WCLONE with EINVAL.
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from emukern.api import Machine
from emukern.pytest_plugin import GUEST_ASM

ARCHES = ["arm64", "riscv64"]

EXPECTED = """\
vfork: parent sees 42
vfork wait: the child, exited 7
vfork+signal: parent sees 9, handler ran 1 time(s)
vfork+signal wait: the child, exited 9
no second child: No child processes
posix_spawn self: ok
posix_spawn wait: the child, exited 5
posix_spawn missing: No such file or directory
posix_spawn missing: child left: No child processes
clone child, plain waitpid: No child processes
clone child, waitpid(-1): No child processes
clone child, __WCLONE: the child, exited 3
clone child, __WALL: the child, exited 4
fork child, __WCLONE: No child processes
fork child, __WALL: the child, exited 6
clone child, waitid: No child processes
clone child, waitid __WCLONE: reported, status 8
killed in vfork: by SIGKILL
"""


def _run(cguest, arch, tmp_path):
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    exe = root / "bin" / "vfork_probe"
    shutil.copy(cguest("vfork_probe", arch), exe)
    r = Machine(root=str(root)).load(exe, ["/bin/vfork_probe"]).run()
    assert r.exit_status == 0, (r.message, r.stdout, r.stderr)
    return r


@pytest.mark.parametrize("arch", ARCHES)
def test_vfork_posix_spawn_and_wclone(cguest, arch, tmp_path):
    r = _run(cguest, arch, tmp_path)
    assert r.stdout.decode() == EXPECTED
    assert r.message == ""                      # nothing left running at the end
    # glibc's vfork and posix_spawn are clone on both arches: 2 vforks, 2 posix_spawns, 3
    # exit-signal-0 clones, 2 forks, the vfork inside the killed child; one exec succeeded (the
    # missing program's failed)
    assert r.syscalls["clone"] == 10 and r.syscalls["execve"] == 2
    assert r.unknown_syscalls == {}


def test_the_host_linux_prints_the_same(tmp_path):
    """The oracle: vfork_probe.c built for the host and run on its Linux kernel."""
    gcc = shutil.which("gcc")
    if gcc is None or not sys.platform.startswith("linux"):
        pytest.skip("needs a Linux host with gcc")
    exe = tmp_path / "host_vfork_probe"
    subprocess.run([gcc, "-O2", "-o", str(exe), str(GUEST_ASM / "c" / "vfork_probe.c")],
                   check=True)
    q = subprocess.run([str(exe), str(exe)], capture_output=True, timeout=60)
    assert q.returncode == 0, q.stderr
    assert q.stdout.decode() == EXPECTED


@pytest.mark.parametrize("arch", ARCHES)
def test_posix_spawn_through_clone3_with_trixie_glibc(arch, tmp_path):
    """Debian trixie's glibc 2.41 starts posix_spawn's child with clone3 (CLONE_VM |
    CLONE_VFORK in struct clone_args): the same program, linked dynamically and run against that
    libc6, prints the same lines, and the counts show the two posix_spawns went through clone3."""
    from emukern.debian import AptFetcher, FetchError, extract
    cc = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}[arch]
    if shutil.which(cc) is None or shutil.which("dpkg-deb") is None:
        pytest.skip("the cross compiler or dpkg-deb is not installed")
    try:
        deb = AptFetcher("trixie", arch).download("libc6")
    except FetchError as exc:
        pytest.skip(f"Debian trixie's libc6 for {arch} could not be had: {exc}")
    root = tmp_path / "root"
    extract(deb, root)
    for d in ("lib", "bin", "sbin"):
        if not (root / d).exists():
            (root / d).symlink_to(f"usr/{d}")
    subprocess.run([cc, "-O2", "-o", str(root / "vfork_probe"), str(GUEST_ASM / "c" / "vfork_probe.c")],
                   check=True)
    r = Machine(root=str(root)).load(root / "vfork_probe", ["/vfork_probe"]).run()
    assert r.exit_status == 0, (r.message, r.stderr)
    assert r.stdout.decode() == EXPECTED
    assert r.syscalls["clone3"] == 2 and r.syscalls["clone"] == 8 and r.syscalls["execve"] == 2
