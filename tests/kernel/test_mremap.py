"""mremap and msync (kernel/mm/vma.py) with guest_asm/c/mremap_probe.c: grow in place, move,
shrink, MREMAP_FIXED, MREMAP_DONTUNMAP, code in a moved executable mapping, glibc's realloc of
an mmapped chunk, a moved MAP_SHARED mapping still shared after fork, and the errors.  The
expected output agrees line by line with Debian 13's arm64 and riscv64 kernels (`emukern
compare`: AGREE); qemu-user is no oracle here (its own mremap gives ENOMEM where Linux gives
EINVAL)."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = (Path(__file__).parent / "data" / "mremap_probe.expected").read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_mremap_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest("mremap_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert r.syscalls["mremap"] >= 15 and r.unknown_syscalls == {}
