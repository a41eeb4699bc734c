"""memfd_secret (447) with tests/kernel/data/memfd_secret_probe.c: the flags (O_CLOEXEC only),
read/write EINVAL and pread/pwrite ESPIPE, one ftruncate, fallocate EOPNOTSUPP, the
/proc/PID/fd name, MAP_SHARED only, VmLck and RLIMIT_MEMLOCK (EAGAIN once root, and with it
CAP_IPC_LOCK, is dropped), and the pages out of reach of /proc/self/mem (EIO),
process_vm_readv (EFAULT), vmsplice (EFAULT) and ptrace PEEKDATA (EIO) while the process's own
loads (a forked child's too) still work.  The expected output is the same probe built for the
host and run under Linux 6.18 (secretmem enabled), byte for byte."""
from __future__ import annotations

from pathlib import Path

import pytest

from cguests import run_probe_against


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_memfd_secret_matches_linux(cguest, arch):
    run_probe_against(DATA / "memfd_secret_probe.c", arch, DATA / "memfd_secret_probe.expected")
