"""mm/mkdirty's first case with tests/kernel/data/mkdirty_probe.c: a FOLL_FORCE write through
/proc/self/mem places a page in a read-only private mapping without making it writable to the
program (its own store still faults), and /proc/self/pagemap shows the page present.  The
selftest's other two cases skip themselves here: mbind and userfaultfd are ENOSYS (no NUMA
mempolicy, no userfaultfd in the model), which the probe pins so a change to either is seen."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

DATA = Path(__file__).parent / "data"

EXPECTED = """\
open mem ok pagemap ok
zero 0
forced write 1 now 1
pagemap read 8 present 1
user write faulted, value 1
mbind -1 errno ENOSYS
userfaultfd ENOSYS
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_mkdirty_forced_write_stays_read_only(cguest, arch):
    r = Machine(arch=arch).load(cguest(DATA / "mkdirty_probe.c", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
