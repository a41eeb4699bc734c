"""Hostile-guest leftovers, item 3: a machine-wide bound on the host descriptors the kernel holds
(emukern's fs.file-max, kernel/files.py host_file_max): guest processes that each fill their
1,024-descriptor table with open regular files get ENFILE once the host process holds its soft
RLIMIT_NOFILE less a reserve, instead of taking the descriptors emukern itself needs.

The run is a subprocess with its host soft limit lowered to 2,048, so that four guest processes
(4 x 1,019 files) would pass it."""
from __future__ import annotations

import resource
import shutil
import subprocess
import sys

import pytest

from emukern.kernel.files import host_file_max

_RUN = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from emukern.api import Machine
from emukern.kernel.files import host_file_max
m = Machine(arch="arm64", root=sys.argv[1])
r = m.load(sys.argv[1] + "/file_hog", [sys.argv[3], "/etc/passwd"]).run()
print(r.stdout.decode(), end="")
print("exit", r.exit_status, "bound", host_file_max())
"""


def test_host_file_max_leaves_a_reserve():
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    bound = host_file_max()
    assert bound < soft or soft == resource.RLIM_INFINITY
    assert soft - bound >= 128 or bound == 32


def test_many_processes_with_full_tables_get_enfile(cprog, tmp_path):
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 2048:
        pytest.skip("the host's hard RLIMIT_NOFILE is below 2048")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "passwd").write_text("root:x:0:0::/:/bin/sh\n")
    shutil.copy(cprog("file_hog", "arm64"), root / "file_hog")
    out = subprocess.run([sys.executable, "-c", _RUN, str(root), "2048", "4"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[-1] == "exit 0 bound 1792"              # 2048 less a reserve of 256
    assert lines[-2] == "after the children: open ok"    # the children's files went back
    counts = [(int(line.split()[0]), line.split()[1]) for line in lines[:4]]
    # the first child fills its own table (EMFILE at RLIMIT_NOFILE); the next ones meet the
    # machine's bound; the files they hold together stay below it
    assert counts[0] == (1019, "EMFILE")
    assert all(err == "ENFILE" for _, err in counts[1:])
    assert 1500 < sum(n for n, _ in counts) < 1792
