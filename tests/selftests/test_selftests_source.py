"""--linux-src trees: version from the Makefile, clear errors for what is not a kernel tree, and a
test whose directory the tree lacks is listed "not in this tree" (offline, no compiler needed)."""
from __future__ import annotations

import pytest

from emukern.selftests.build import Builder
from emukern.selftests.catalog import BY_ID
from emukern.selftests.source import SourceError, from_tree


def _tree(tmp_path, version="VERSION = 6\nPATCHLEVEL = 99\nSUBLEVEL = 3\n"):
    (tmp_path / "Makefile").write_text(version + "NAME = Test\n")
    (tmp_path / "tools" / "testing" / "selftests" / "arm64").mkdir(parents=True)
    return tmp_path


def test_version_from_makefile(tmp_path):
    src = from_tree(_tree(tmp_path))
    assert src.version == "6.99.3" and src.origin.startswith("--linux-src")


def test_not_a_kernel_tree(tmp_path):
    with pytest.raises(SourceError, match="no tools/testing/selftests"):
        from_tree(tmp_path)
    _tree(tmp_path, version="all:\n")
    with pytest.raises(SourceError, match="not a kernel Makefile"):
        from_tree(tmp_path)


def test_missing_directory_is_not_in_this_tree(tmp_path):
    b = Builder(from_tree(_tree(tmp_path)), root=tmp_path / "out")
    r = b.build(BY_ID["riscv64/vector/v_initval_nolibc"])
    assert not r.ok and r.reason.startswith("not in this tree") and "6.99.3" in r.reason


def test_cli_linux_src_error(tmp_path, capsys):
    from emukern.cli import main
    assert main(["selftests", "--only", "hwprobe", "--linux-src", str(tmp_path)]) == 2
    assert "no tools/testing/selftests" in capsys.readouterr().err
