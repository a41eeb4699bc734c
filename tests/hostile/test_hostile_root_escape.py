"""Hostile issue item 1: a guest never reaches host files outside its --root.

The probe (guest_asm/c/hostile/root_escape.c) renames the directory it stands in and puts a
symlink to ``/`` where it was, then opens, creates, lists and executes relative to its cwd and to
a directory fd; walks ``..`` above the root, symlink loops and links to ``/``; dumps core into a
cwd holding a symlink named ``core``; and races renames against walks in a second process.  The
host directory ``outside`` holds the bait: a secret, an executable and a symlink named core.
As in Linux, the cwd and open directories follow the renamed directory (getcwd and
/proc/self/cwd give the new name) and nothing outside the root is read, listed or changed."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from emukern.api import Machine

ARCHES = ("riscv64", "arm64")


def _bait(tmp_path: Path, prog: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret").write_text("host secret\n")
    shutil.copy(prog, out / "prog")
    (out / "precious").write_text("precious\n")
    os.symlink("precious", out / "core")
    return out


def _snapshot(d: Path) -> dict:
    return {p.name: (os.readlink(p) if p.is_symlink() else p.read_bytes()) for p in sorted(d.iterdir())}


def _run(root: Path, prog: Path, rw: bool, outside: Path):
    shutil.copy(prog, root / "probe")
    m = Machine(root=str(root), root_rw=rw)
    m.load(root / "probe", ["rw" if rw else "ro", str(outside)])
    r = m.run()
    lines = dict(line.split("=", 1) for line in r.stdout.decode().splitlines() if "=" in line and " " not in line)
    for line in r.stdout.decode().splitlines():
        if " " in line:
            lines.update(kv.split("=", 1) for kv in line.split())
    return r, lines


@pytest.mark.parametrize("arch", ARCHES)
def test_rename_symlink_attack_stays_in_the_writable_root(cprog, arch, tmp_path):
    prog = cprog("root_escape", arch)
    outside = _bait(tmp_path, prog)
    before = _snapshot(outside)
    root = tmp_path / "root"
    root.mkdir()
    r, out = _run(root, prog, True, outside)
    assert r.exit_code == 0, (r.message, r.stdout)
    P = str(outside)
    assert out["dotdot_cwd"] == "/"
    assert out["dotdot_secret"] == "-2"
    assert out["rootlink_secret"] == "-2"        # /rootlink -> / is the guest's /
    assert out["uplink_secret"] == "-2"          # no such link in this root
    assert out["loop"] == "-40"                  # ELOOP
    assert out["proc_root"] == "/"
    assert out["chdir"] == out["rename"] == out["symlink"] == "0"
    # the cwd followed the renamed directory, as the dentry does in Linux
    assert out["attack_cwd"] == out["attack_proc_cwd"] == "/a2" + P
    assert out["attack_secret"] == "-2"
    assert out["attack_creat"] == "0"
    assert out["attack_list"] == "planted"
    assert out["attack_exec"] == str(100 + 2)     # ENOENT: ./prog is the host's, not the guest's
    assert (root / ("a2" + P) / "planted").read_text() == "guest\n"
    # the core went into the guest's cwd; the guest's link named core was replaced, its target kept
    assert out["attack_core"] == "1" and out["core_is_file"] == "1"
    assert out["victim_of_core"] == "9"
    assert (root / ("a2" + P) / "core").read_bytes()[:4] == b"\x7fELF"
    assert (root / "victim_of_core").read_text() == "precious\n"
    # a directory fd follows its directory too
    assert out["dirfd_creat"] == "0" and out["dirfd_z_in_x2"] == "0"
    assert out["dirfd_dotdot"] == "0" and out["dirfd_proc"] == "/x2/y"
    assert out["race_leaks"] == "0" and out["race_walks_ok"] == "1"
    assert out["parent_renamed_cwd"] == "/r/q"
    # the host directory outside the root is exactly as it was: nothing read into the guest,
    # nothing created, the symlink named core not followed nor replaced
    assert _snapshot(outside) == before
    assert not (Path("/") / "victim_of_core").exists()


@pytest.mark.parametrize("arch", ARCHES)
def test_read_only_root_stays_in_the_root(cprog, arch, tmp_path):
    prog = cprog("root_escape", arch)
    outside = _bait(tmp_path, prog)
    before = _snapshot(outside)
    root = tmp_path / "root"
    (root / "d1" / "d2").mkdir(parents=True)
    os.symlink("/", root / "rootlink")
    os.symlink("../../../../../../../..", root / "uplink")
    os.symlink("l2", root / "l1")
    os.symlink("l1", root / "l2")
    r, out = _run(root, prog, False, outside)
    assert r.exit_code == 0, (r.message, r.stdout)
    assert out["dotdot_cwd"] == "/"
    assert out["dotdot_secret"] == out["rootlink_secret"] == out["uplink_secret"] == "-2"
    assert out["loop"] == "-40"
    assert out["proc_root"] == "/"
    assert out["ro_cwd"] == out["ro_proc_cwd"] == "/d1/d2"
    assert out["ro_core"] == "0"                  # a read-only root: no core anywhere
    assert _snapshot(outside) == before
    assert not (root / "d1" / "d2" / "core").exists()


def test_host_handles_are_closed_when_the_guest_is_done(cprog, tmp_path):
    """The held directory handles go with the nodes that hold them: after a run, emukern's
    process has no more descriptors open than before it."""
    prog = cprog("root_escape", "riscv64")
    outside = _bait(tmp_path, prog)
    root = tmp_path / "root"
    root.mkdir()
    import gc
    gc.collect()
    fds_before = len(os.listdir("/proc/self/fd"))
    r, _ = _run(root, prog, True, outside)
    assert r.exit_code == 0
    del r
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= fds_before
