"""The auxiliary vector of an exec'd program (Kernel.exec's create_elf_tables), entry by entry:
tests/oracle/guests/auxv_probe.c prints /proc/self/auxv, and the real Debian kernels give the same
lines (tests/oracle/test_oracle_real_kernels.py, case auxv); the vDSO's AT_SYSINFO_EHDR opens
ARCH_DLINFO on both architectures."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

PROBE = Path(__file__).resolve().parents[1] / "oracle" / "guests" / "auxv_probe.c"
# AT_HWCAP .. AT_RANDOM, in create_elf_tables' order
COMMON = [16, 6, 17, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14, 23, 25]


@pytest.mark.parametrize("arch, kernel, want", [
    # arm64: ARCH_DLINFO is AT_SYSINFO_EHDR, AT_MINSIGSTKSZ; AT_HWCAP2; AT_EXECFN, then AT_PLATFORM
    # ("aarch64"); Linux 6.3 and later add AT_RSEQ_FEATURE_SIZE / AT_RSEQ_ALIGN
    ("arm64", "debian-12-arm64", [33, 51, *COMMON, 26, 31, 15, 0]),
    ("arm64", "debian-13-arm64", [33, 51, *COMMON, 26, 31, 15, 27, 28, 0]),
    ("arm64", None, [33, 51, *COMMON, 26, 31, 15, 27, 28, 0]),
    # riscv64: ARCH_DLINFO's AT_SYSINFO_EHDR, eight cache entries (40-47, zero: no cache is described) before
    # AT_MINSIGSTKSZ; no AT_HWCAP2 and no ELF_PLATFORM
    ("riscv64", "debian-13-riscv64", [33, *range(40, 48), 51, *COMMON, 31, 27, 28, 0]),
])
def test_auxv_entries_in_linux_order(cguest, arch, kernel, want):
    exe = cguest(PROBE, arch)
    r = Machine(arch=arch, kernel=kernel).load(exe, [exe.name]).run()
    assert r.exit_status == 0, r.message
    lines = r.stdout.decode().splitlines()
    assert [int(x.split()[0]) for x in lines[:-1]] == want
    vals = dict(x.split(" ", 1) for x in lines[:-1])
    # AT_CLKTCK is USER_HZ whatever the kernel's HZ (250 here), and glibc's clock tick with it
    assert vals["17"] == "0x64" and lines[-1] == "_SC_CLK_TCK 100"
    assert vals["6"] == "0x1000" and vals["25"] == "16 bytes" and vals["31"] == "argv[0]: 1"
    if arch == "arm64":
        assert vals["15"] == '"aarch64"'
    else:
        assert all(vals[str(t)] == "0" for t in range(40, 48))
    if 27 in want:
        assert (vals["27"], vals["28"]) == ("0x1c", "0x20")
