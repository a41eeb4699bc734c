"""peers.child_cpu: the CPU time of one child alone, even when subprocess reaps another child
(a zombie of an earlier Popen dropped unwaited) while that child starts -- which a difference of two
getrusage(RUSAGE_CHILDREN) readings takes in (it put 20-50 us into qemu-user's ~3 us round
trips in `emukern bench --only switch`)."""
from __future__ import annotations

import gc
import resource
import subprocess
import sys
import time
from pathlib import Path

from emukern.bench.peers import child_cpu

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_another_child_reaped_meanwhile_is_not_counted() -> None:
    bg = subprocess.Popen([sys.executable, "-c", BURN])
    pid = bg.pid
    del bg          # dropped while it runs: subprocess keeps it and reaps it when the next child
    gc.collect()    # is started (subprocess._cleanup)
    deadline = time.monotonic() + 30
    while not _zombie(pid):             # finished, not yet reaped
        assert time.monotonic() < deadline
        time.sleep(0.01)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, rc, _err = child_cpu(["true"], timeout=30)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert rc == 0
    # the burner was reaped during the call (the old way would have counted its 0.3 s) ...
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) >= 0.25
    # ... and child_cpu counted `true` alone
    assert cpu < 0.1


def test_exit_code_and_stderr() -> None:
    cpu, rc, err = child_cpu([sys.executable, "-c", "import sys; sys.stderr.write('no'); sys.exit(3)"], timeout=30)
    assert rc == 3 and err.endswith(b"no") and cpu > 0


def test_pinned_to_one_cpu() -> None:
    """A peer's processes run on one host CPU, as emukern's guest tasks share one host thread."""
    code = "import os, sys; sys.stderr.write(str(len(os.sched_getaffinity(0))))"
    _cpu, rc, err = child_cpu([sys.executable, "-c", code], timeout=30)
    assert rc == 0 and err == b"1"
    _cpu, rc, err = child_cpu([sys.executable, "-c", code], timeout=30, pin=False)
    assert rc == 0 and int(err) == len(__import__("os").sched_getaffinity(0))
