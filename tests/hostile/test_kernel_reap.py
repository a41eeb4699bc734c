"""Issue 11 item 5: an exited process's memory is freed when its last user goes (exit_mmap at
exit, release_task at reap), so a fork/exit loop runs in bounded host memory."""
from __future__ import annotations

import json
import mmap
import gc
import subprocess
import sys

import pytest

from emukern.api import Machine
ARCHES = ("riscv64", "arm64")


@pytest.mark.parametrize("arch", ARCHES)
def test_fork_exit_loop_frees_every_child(cprog, arch):
    r, m = _run(cprog("fork_exit_loop", arch), ["120"])
    assert r.stdout == b"reaped 120\n", r.message
    k = m.kernel
    # every child's address space went back: only init's mappings are still charged
    assert k.mem.used == k.init_task.mm.mapped
    assert not k._dead_mms and not k._to_release
    assert k.init_task.children == []                   # release_task unlinked them
    dead = [t for t in k.tasks.values() if t is not k.init_task]
    assert len(dead) == 120 and all(t.mm.mappings == [] for t in dead)
    gc.collect()
    live_bufs = [o for o in gc.get_objects() if isinstance(o, mmap.mmap) and not o.closed]
    assert len(live_bufs) <= len(k.init_task.mm.mappings) + 1   # (+ the idle CPU's empty mm: none)


@pytest.mark.parametrize("arch", ARCHES)
def test_children_carrying_memory_never_pile_up(cprog, arch):
    # the parent touches 16 MiB; 12 children each carry a copy; at most one is alive at a time
    r, m = _run(cprog("fork_exit_loop", arch), ["12", "16"])
    assert r.stdout == b"reaped 12\n", r.message
    parent = m.kernel.init_task.mm.mapped
    assert parent > 16 << 20
    assert m.kernel.mem.peak <= 2 * parent + (1 << 20)   # parent + one child, never 12 copies


def test_task_table_is_bounded(cprog, monkeypatch):
    import emukern.kernel.signal.exit as kmod
    assert kmod.REAPED_ROWS >= 256                            # the real bound: a few hundred rows
    monkeypatch.setattr(kmod, "REAPED_ROWS", 40)         # (smaller here, to keep the test quick)
    r, m = _run(cprog("fork_exit_loop", "riscv64"), ["140"])
    assert r.stdout == b"reaped 140\n"
    assert len(m.kernel.tasks) == 40 + 1                 # init + the first 40 reaped
    assert len(r.tasks) == 40 + 1
    rest = r.extra["reaped_not_listed"]
    assert rest["tasks"] == 100 and rest["syscalls"] >= 100
    # accounting is not lost: listed + folded time is all the time there was
    total = sum(t["utime"] + t["stime"] for t in r.tasks) + rest["utime"] + rest["stime"]
    assert total == r.cycles


_RSS = """
import resource, sys
from emukern.api import Machine
m = Machine(); m.load(sys.argv[1], sys.argv[2:])
r = m.run()
# VmHWM: this mm's peak RSS (ru_maxrss would carry the forking pytest worker's size across exec)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(r.stdout.decode().strip(), hwm)
"""


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHES)
def test_host_rss_of_a_fork_exit_loop_is_bounded(cprog, arch):
    # 12 children of a 64 MiB parent: before the fix host RSS grew by 64 MiB a child (~850 MB)
    out = subprocess.run([sys.executable, "-c", _RSS, str(cprog("fork_exit_loop", arch)), "12", "64"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    text, rss_kb = out.stdout.rsplit(" ", 1)
    assert text == "reaped 12"
    assert int(rss_kb) < (3 * 64 + 150) * 1024, f"host RSS {rss_kb} kB"


def _run(exe, argv):
    m = Machine()
    m.load(exe, argv)
    return m.run(), m
