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
    ("rseq_probe", "rseq_probe", ()),                       # registration, bad input, abort
    ("af_unix_probe", "af_unix_probe", ("/tmp",)),         # connect/accept, SCM_RIGHTS
    ("sysv_shm", "sysv_shm", ()),
    ("sysv_sem", "sysv_sem", ()),
    ("sysv_msg", "sysv_msg", ()),
    ("sysv_fuzz_1", "sysv_fuzz", ("1", "300")),             # seeded keys/sizes/types/commands
    ("sysv_fuzz_2", "sysv_fuzz", ("2", "300")),
    ("sysv_fuzz_3", "sysv_fuzz", ("3", "300")),
    ("sysv_limits", "sysv_limits", ()),                    # keys and sizes at the limits
]

# a probe that belongs to some kernels only (a PAC probe: arm64), by its recording's name
ONLY: dict[str, set[str]] = {}


def runs_on(name: str, kernel: str) -> bool:
    return kernel in ONLY.get(name, KERNELS)


def expected_path(kernel: str, probe: str) -> Path:
    return EXPECTED / kernel / f"{probe}.expected"


# Debian programs of the realprog root (conftest.py), run in order in one boot with that root as
# the initramfs's tree, and under emukern in one writable copy of it: a later program may read
# what an earlier one wrote (sqlite_again opens sqlite_create's database).
# (the recording's name, the program's path in the root, its arguments)
SQLITE = ("/usr/bin/sqlite3", "-init", "/dev/null")        # -init: no ~/.sqliterc look-up
BB_SCRIPT = r"""
echo start
seq 1 5 | sort -rn | head -3
printf 'b\nb\na\nb\n' | uniq -c
printf 'hello\n' | tr a-z A-Z | sed s/L/1/g
seq 1 1000 | wc -l
echo 'abc def' | awk '{print $2, length($1)}'
x=$(seq 1 100 | sort -n | tail -1); echo "last $x"
set -o pipefail; seq 1 1000000 | head -1; echo "pipe status $?"; set +o pipefail
(exit 3); echo "subshell: $?"
echo done
"""
ORDER_SCRIPT = ("sqlite3 -init /dev/null :memory: \"select 'first'; select nosuch; select 'third';\" "
                "> /tmp/o 2>&1; s=$?; cat /tmp/o; echo \"sqlite3 status $s\"; "
                "sqlite3 -init /dev/null :memory: \"select 'first'; select nosuch;\" 2>&1 | cat")
TAR_SCRIPT = ("cd /tmp && mkdir d && echo hi > d/f && chmod 640 d/f && touch -d '2021-03-04 05:06:07' d/f && "
              "tar -cvf a.tar d/f && tar -tvf a.tar && rm d/f && tar -xf a.tar && stat -c '%Y %a %s' d/f")
DEBIAN: list[tuple[str, str, tuple[str, ...]]] = [
    ("debian_busybox_script", "/usr/bin/busybox", ("sh", "-c", BB_SCRIPT)),
    ("debian_sqlite_create", SQLITE[0], (*SQLITE[1:], "/tmp/t.db",
                                         "create table t(x); insert into t values(1); select * from t;")),
    ("debian_sqlite_again", SQLITE[0], (*SQLITE[1:], "/tmp/t.db", "insert into t values(41); select sum(x) from t;")),
    ("debian_sqlite_order", "/usr/bin/busybox", ("sh", "-c", ORDER_SCRIPT)),
    ("debian_tar_times", "/usr/bin/busybox", ("sh", "-c", TAR_SCRIPT)),
]
