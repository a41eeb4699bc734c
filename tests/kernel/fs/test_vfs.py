"""The path walk of emukern.kernel.fs.vfs on its own: every name resolves inside the root."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from emukern.kernel import errno as E
from emukern.kernel.fs import ELOOP, ENAMETOOLONG
from emukern.kernel.fs.vfs import S_IFDIR, S_IFREG, Vfs
from emukern.errors import ConfigError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / "etc").mkdir(parents=True)
    (r / "etc" / "passwd").write_text("decoy\n")
    (r / "a" / "b").mkdir(parents=True)
    (r / "a" / "b" / "f").write_text("f\n")
    os.symlink("/etc", r / "a" / "abs")            # absolute: means the guest's /etc
    os.symlink("../../../../../../..", r / "a" / "up")
    os.symlink("loop", r / "a" / "loop")
    os.symlink("b/f", r / "a" / "rel")
    os.symlink(str(tmp_path), r / "a" / "hostdir")  # an absolute host path: names root/<that path>
    os.mkfifo(r / "a" / "fifo")
    (tmp_path / "outside").write_text("host secret\n")
    return r


@pytest.fixture
def vfs(root: Path) -> Vfs:
    return Vfs(str(root), False, {})


def resolve(vfs: Vfs, path: str, cwd: str = "/", follow: bool = True):
    start = vfs.walk(cwd, vfs.root_node())
    assert not isinstance(start, int)
    return vfs.walk(path, start, follow)


@pytest.mark.parametrize("path,host_rel", [
    ("/etc/passwd", "etc/passwd"),
    ("/../../../etc/passwd", "etc/passwd"),
    ("/a/b/../../etc/passwd", "etc/passwd"),
    ("/a/abs/passwd", "etc/passwd"),
    ("/a/up/etc/passwd", "etc/passwd"),
    ("/a/rel", "a/b/f"),
    ("//a//./b/f", "a/b/f"),
])
def test_paths_resolve_inside_the_root(vfs, root, path, host_rel):
    node = resolve(vfs, path)
    assert not isinstance(node, int), path
    assert node.host.host_path() == str(root / host_rel)
    assert os.path.realpath(node.host.host_path()).startswith(str(root.resolve()))


def test_relative_paths_from_a_cwd(vfs, root):
    node = resolve(vfs, "../../../../etc/passwd", cwd="/a/b")
    assert node.host.host_path() == str(root / "etc" / "passwd")
    assert resolve(vfs, "f", cwd="/a/b").host.host_path() == str(root / "a" / "b" / "f")


def test_absolute_host_symlink_is_a_guest_path(vfs, root, tmp_path):
    # a link to the host's tmp dir names root/<tmp dir>: ENOENT, never the host directory
    assert resolve(vfs, "/a/hostdir/outside") == -E.ENOENT


@pytest.mark.parametrize("path,err", [
    ("/nope", -E.ENOENT), ("/a/b/f/x", -E.ENOTDIR), ("/a/b/f/", -E.ENOTDIR),
    ("/a/loop", -ELOOP), ("", -E.ENOENT), ("/" + "x" * 300, -ENAMETOOLONG),
    ("/" + "a/" * 2100, -ENAMETOOLONG),
])
def test_errors(vfs, path, err):
    assert resolve(vfs, path) == err


def test_nofollow_returns_the_link(vfs):
    node = resolve(vfs, "/a/rel", follow=False)
    assert node.is_link and node.link_target() == "b/f"


def test_fifo_is_visible_but_special(vfs):
    node = resolve(vfs, "/a/fifo")
    assert node.extra.get("special")


def test_empty_virtual_root_and_synthetic_mounts():
    from emukern.kernel.fs.vfs import Node
    v = Vfs(None, False, {"/dev": lambda: Node("/dev", S_IFDIR | 0o755, children=lambda: {
        "null": Node("/dev/null", S_IFREG | 0o666)})})
    assert resolve(v, "/etc/passwd") == -E.ENOENT
    assert not isinstance(resolve(v, "/dev/null"), int)
    assert [n for n, _ in v.list_dir(v.root_node())] == ["dev"]
    assert not v.writable


@pytest.mark.parametrize("make", ["missing", "file"])
def test_bad_root_is_a_clear_error(tmp_path, make):
    p = tmp_path / "r"
    if make == "file":
        p.write_text("x")
    with pytest.raises(ConfigError, match="not a directory|no such directory"):
        Vfs.check_root(str(p))
