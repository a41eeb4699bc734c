"""munmap's range check (kernel/syscalls/mmap.py): a range past the user address space is EINVAL
and leaves every mapping in place, as Linux 6.12 answers (qemu-user agrees on the host kernel)."""
from __future__ import annotations

import pytest

from emukern.api import Machine

EXPECTED = ("munmap(0, ~0) r=-1 errno=22\n"
            "munmap(0, 2^63) r=-1 errno=22\n"
            "munmap(0, 0) r=-1 errno=22\n"
            "still mapped: 1\n")


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_munmap_of_everything_is_einval(cguest, arch):
    r = Machine(arch=arch).load(cguest("munmap_range_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
