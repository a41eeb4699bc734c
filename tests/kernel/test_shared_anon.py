"""MAP_SHARED anonymous memory (and MAP_SHARED of /dev/zero) is one buffer in the processes
forked from its mapper (memory.py AddressSpace.fork, syscalls.py sys_mmap): guest_asm/c/shared_anon.c
hands a counter back and forth between parent and child through pipes and gives the same bytes as
under qemu-user (the host kernel's shared memory); a private mapping stays private, and a munmap
in the child leaves the parent's pages alone."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
EXPECTED = ("round 0: shared 111, private 1, /dev/zero shared 11\n"
            "round 1: shared 221, private 1, /dev/zero shared 21\n"
            "round 2: shared 331, private 1, /dev/zero shared 31\n"
            "after the child's munmap: 5\nmprotect PROT_WRITE: 0\nwritten: 7\n")


@pytest.mark.parametrize("cpus", [1, 2])
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_shared_anonymous_memory_across_fork(cguest, arch, cpus):
    r = Machine(arch=arch, cpus=cpus).load(cguest("shared_anon", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_qemu_user_agrees(cguest, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    q = subprocess.run([QEMU[arch], str(cguest("shared_anon", arch))], capture_output=True, timeout=60)
    assert q.returncode == 0 and q.stdout.decode() == EXPECTED


MAPS = r'''
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
int main(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char line[256], want[32];
	snprintf(want, sizeof(want), "%lx-", (unsigned long)p);
	FILE *f = fopen("/proc/self/maps", "r");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want)))
			fputs(strchr(line, ' ') + 1, stdout);
	return 0;
}
'''


def test_proc_maps_names_shared_anonymous_memory(cguest, tmp_path):
    src = tmp_path / "maps.c"
    src.write_text(MAPS)
    r = Machine(arch="arm64").load(cguest(src, "arm64"), []).run()
    out = r.stdout.decode()
    # show_map_vma: 's' for a shared mapping, shmem's name "/dev/zero (deleted)"
    assert out.startswith("rw-s 00000000 00:00 0") and out.rstrip().endswith("/dev/zero (deleted)"), out
