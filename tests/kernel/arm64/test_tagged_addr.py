"""The arm64 tagged address ABI (kernel/arch/arm64/tagged_addr.py) and the machine's Top Byte Ignore
(native/a64_stub.c's TLB fill): tests/oracle/guests/tagged_addr_probe.c prints the same lines
under emukern as on Debian's 6.1 and 6.12 kernels (tests/oracle/test_oracle_real_kernels.py, case
tagged_addr); its expected output is tests/oracle/guests/tagged_addr_probe.expected."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.machine.counter import native_available

PROBE = Path(__file__).resolve().parents[2] / "oracle" / "guests" / "tagged_addr_probe.c"

TBI_ASM = """
    .global _start
_start:
    adr x1, data
    mov x2, #{tag}
    orr x1, x1, x2, lsl #56
    ldr x0, [x1]
    mov x8, #93
    svc #0
    .data
data: .quad 7
"""


@pytest.mark.skipif(not native_available(), reason="TBI rides on the native TLB fill hook")
@pytest.mark.parametrize("cpus", [1, 2])
def test_tagged_address_abi_as_on_linux(cguest, cpus):
    r = Machine(arch="arm64", cpus=cpus).load(cguest(PROBE, "arm64"), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == PROBE.with_suffix(".expected").read_text()


@pytest.mark.skipif(not native_available(), reason="TBI rides on the native TLB fill hook")
@pytest.mark.parametrize("tag, status", [(0x00, 7), (0x42, 7), (0xFF, 7), (0x80, 7)])
def test_loads_ignore_the_top_byte(guest_asm, tmp_path, tag, status):
    src = tmp_path / "tbi.S"
    src.write_text(TBI_ASM.format(tag=tag))
    r = Machine(arch="arm64").load(src, []).run()
    assert r.exit_status == status, r.message


def test_kernel_half_address_still_faults(tmp_path):
    # bit 55 set: not a user address with a tag but the kernel's half (TTBR1): no TBI strip
    src = tmp_path / "k.S"
    src.write_text(TBI_ASM.replace("orr x1, x1, x2, lsl #56", "orr x1, x1, x2, lsl #48").format(tag=0xFF80))
    r = Machine(arch="arm64").load(src, []).run()
    assert r.exit_status == 128 + 11 and r.signal == 11


def test_prctl_and_sysctl(cguest, tmp_path):
    src = tmp_path / "p.c"
    src.write_text(r'''
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/prctl.h>
int main(void)
{
	int fd = open("/proc/sys/abi/tagged_addr_disabled", O_RDWR);
	char b[4] = {0};
	read(fd, b, 3);
	printf("sysctl %s", b);
	lseek(fd, 0, SEEK_SET);
	write(fd, "1\n", 2);
	printf("disabled: %d errno %d\n", prctl(PR_SET_TAGGED_ADDR_CTRL, 1, 0, 0, 0), errno);
	printf("disabling is allowed: %d\n", prctl(PR_SET_TAGGED_ADDR_CTRL, 0, 0, 0, 0));
	errno = 0;
	printf("get with an argument: %d errno %d\n", prctl(PR_GET_TAGGED_ADDR_CTRL, 1, 0, 0, 0), errno);
	return 0;
}
''')
    r = Machine(arch="arm64").load(cguest(src, "arm64"), []).run()
    assert r.stdout.decode() == ("sysctl 0\ndisabled: -1 errno 22\ndisabling is allowed: 0\n"
                                 "get with an argument: -1 errno 22\n")
