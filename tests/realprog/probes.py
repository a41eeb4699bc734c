"""The C probes whose output was recorded on Debian 13's real kernels (tests/realprog/expected/),
with the arguments each takes.  One list for the recorder (record_expected.py) and the test
(test_real_kernel_expected.py), so what was recorded is exactly what is compared.

A probe given ``/tmp`` writes its scratch files there: the real kernel's initramfs has a
writable /tmp, and emukern runs it in a fresh writable root that has one too.  Nothing a probe
prints names that directory, an inode, a pid or a time."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected"
KERNELS = {"debian-13-arm64": "arm64", "debian-13-riscv64": "riscv64"}

# (the recording's name, the probe in guest_asm/c/, its arguments)
PROBES: list[tuple[str, str, tuple[str, ...]]] = [
    ("stdio_setups", "stdio_setups", ("/tmp",)),           # fstat of fds 0-2 as a pipe, a file, /dev/null
    ("stdio_report", "stdio_setups", ("--report",)),       # ... as the runner starts it: null, pipe, pipe
    ("printf_fork", "printf_fork", ()),                    # a buffered line inherited by fork
    ("posix_locks", "posix_locks", ("/tmp",)),             # the classic lock-table cases across processes
    ("locks_limits", "locks_limits", ("/tmp",)),           # range overflow, negative lengths, l_whence, SETLKW deadlock
    ("locks_fuzz_1", "locks_fuzz", ("/tmp", "1", "300")),  # seeded edge values, three seeds
    ("locks_fuzz_2", "locks_fuzz", ("/tmp", "2", "300")),
    ("locks_fuzz_3", "locks_fuzz", ("/tmp", "3", "300")),
    ("clone3_probe", "clone3_probe", ()),
    ("af_unix_probe", "af_unix_probe", ("/tmp",)),         # connect/accept, SCM_RIGHTS
    ("sysv_shm", "sysv_shm", ()),
    ("sysv_sem", "sysv_sem", ()),
    ("sysv_msg", "sysv_msg", ()),
    ("sysv_limits", "sysv_limits", ()),                    # keys and sizes at the limits
]


def expected_path(kernel: str, probe: str) -> Path:
    return EXPECTED / kernel / f"{probe}.expected"
