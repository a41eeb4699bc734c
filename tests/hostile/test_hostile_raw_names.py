"""Hostile issue item 8: Linux names are bytes.  A guest creates, stats, renames, links, lists
and enters files whose names are not UTF-8, names itself with such bytes (prctl PR_SET_NAME)
and execs a program with such a name: nothing crashes emukern, and /proc/self/comm, PR_GET_NAME
and the host directory hold the raw bytes (guest_asm/c/hostile/raw_names.c)."""
from __future__ import annotations

import os
import shutil

import pytest

from emukern.api import Machine

EXPECTED = """\
creat=0
stat=0 size=3
mkdir=0
rename=0
stat_old=-2
symlink=0
readlink=c32878
entry=80646972
entry=c32878
entry=fe6c696e6b
chdir=0
cwd=2f80646972
set_comm=fffe806e616d650a
get_name=fffe806e616d65
exec_comm=e978650a
get_name=e97865
exec_status=0
"""


@pytest.mark.parametrize("arch", ("riscv64", "arm64"))
def test_non_utf8_names_are_bytes(cprog, arch, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(cprog("raw_names", arch), root / "probe")
    r = Machine(root=str(root), root_rw=True).load(root / "probe").run()
    assert r.exit_code == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert sorted(os.listdir(os.fsencode(root))) == [b"probe", b"\x80dir", b"\xc3(x", b"\xe9xe", b"\xfelink"]
    assert os.readlink(os.path.join(os.fsencode(root), b"\xfelink")) == b"\xc3(x"
