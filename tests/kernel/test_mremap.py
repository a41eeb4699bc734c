"""mremap and msync (kernel/mremap.py) with guest_asm/c/mremap_probe.c: grow in place, move,
shrink, MREMAP_FIXED, MREMAP_DONTUNMAP, code in a moved executable mapping, glibc's realloc of
an mmapped chunk, a moved MAP_SHARED mapping still shared after fork, and the errors.  The
expected output agrees line by line with Debian 13's arm64 and riscv64 kernels (`emukern
compare`: AGREE); qemu-user is no oracle here (its own mremap gives ENOMEM where Linux gives
EINVAL)."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.machine.memory import AddressSpace

EXPECTED = (Path(__file__).parent / "data" / "mremap_probe.expected").read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_mremap_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest("mremap_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert r.syscalls["mremap"] >= 15 and r.unknown_syscalls == {}


def test_address_space_move_keeps_the_buffer():
    """The machine layer's move: the pages keep their host buffer (a shared mapping stays
    shared) and the parts outside the range stay where they were."""
    mm = AddressSpace()
    mm.map(0x10000, 0x3000, "rw-", "[anon]", b"A" * 0x1000 + b"B" * 0x1000 + b"C" * 0x1000)
    buf = mm.find(0x10000).buf
    mm.move(0x11000, 0x1000, 0x40000)
    assert mm.read(0x40000, 2) == b"BB" and mm.find(0x40000).buf is buf
    assert mm.find(0x11000) is None and mm.read(0x10000, 1) == b"A" and mm.read(0x12000, 1) == b"C"
    with pytest.raises(ValueError):
        mm.move(0x10000, 0x1000, 0x12000)       # the target must be free
