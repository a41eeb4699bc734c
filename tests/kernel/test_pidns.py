"""PID namespaces (emukern/kernel/pid.py; CLONE_NEWPID in syscalls/fork.py and nsproxy.py; the
namespace's init dying in signal/exit.py; NSpid and /proc/<pid>/ns in fs/procfs.py) and clone3
set_tid, through guest_asm/c/pidns_probe.c on both architectures and kernel/pid.py's alloc_pid
directly.

The probe's expected lines are Linux 6.12's answers for a root caller, read off kernel/pid.c
(alloc_pid), kernel/pid_namespace.c (copy_pid_ns, zap_pid_ns_processes, pidns_install,
pidns_for_children_get), kernel/fork.c and kernel/exit.c (find_child_reaper).  Its second half
(from unshare on) is checked against the host kernel through qemu-user when the host lets the
test make a pid namespace; qemu-user has no clone3, so the first half has no such oracle.
``emukern compare`` of the whole probe (debian-13-arm64 and debian-13-riscv64) agreed on 33 of
its 35 lines on both;
the two others come from the real kernel's runner starting the program as the init of a pid
namespace of its own (level 1, not 0): the first line's inode number, and a two-number set_tid
that is valid there (pid 1 taken: EEXIST) where emukern's level 0 has too few levels (EINVAL)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from emukern.api import Machine
from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.task import TaskState

EXPECTED = (Path(__file__).parent / "data" / "pidns_probe.expected").read_text()
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_pidns_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest("pidns_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert r.unknown_syscalls == {}


def test_pidns_probe_second_half_matches_the_host(cguest):
    """unshare(CLONE_NEWPID), the init's death, fork's ENOMEM and setns back, under qemu-user
    on the host kernel.  qemu-user starts a helper thread in every process, so the sleeper the
    namespace's init forks is pid 3 there, 2 on a real kernel (and in emukern)."""
    qemu = shutil.which(QEMU["arm64"])
    if qemu is None:
        pytest.skip("qemu-user is not installed")
    prog = cguest("pidns_probe", "arm64")
    host = subprocess.run([qemu, str(prog)], capture_output=True, text=True, timeout=120).stdout
    if "unshare CLONE_NEWPID: ok" not in host:
        pytest.skip("the host does not let this test make a pid namespace (no CAP_SYS_ADMIN)")
    tail = lambda s: s[s.index("unshare CLONE_NEWPID"):]           # noqa: E731
    assert tail(host).replace("sleeper 3", "sleeper 2") == tail(EXPECTED)


# ---- alloc_pid itself ------------------------------------------------------------------------
def _kernel():
    """The few attributes of the kernel alloc_pid reads: the task table (the initial
    namespace's numbers), its cursor and the first process."""
    k = SimpleNamespace(tasks={}, init_pid_ns=kpid.initial_pid_ns(), _next_tid=1)
    init = SimpleNamespace(tid=1, tgid=1, state=TaskState.RUNNABLE, alive=True, pid_ns=None, upids=())
    k.tasks[1] = init
    k.init_task = init
    k._next_tid = 2

    def alloc_tid():
        tid = k._next_tid
        while tid in k.tasks and k.tasks[tid].state is not TaskState.DEAD:
            tid += 1
        k._next_tid = tid + 1
        return tid
    k.alloc_tid = alloc_tid
    return k


def _task(k, got, ns):
    tid, upids = got
    t = SimpleNamespace(tid=tid, tgid=tid, state=TaskState.RUNNABLE, alive=True, pid_ns=None, upids=upids)
    k.tasks[tid] = t
    kpid.attach_pid(k, t, ns)
    return t


def test_alloc_pid_set_tid_errors_in_linux_order():
    k = _kernel()
    ns0 = k.init_pid_ns
    assert kpid.alloc_pid(k, ns0, [1, 1], True) == -E.EINVAL          # more numbers than levels
    assert kpid.alloc_pid(k, ns0, [0], True) == -E.EINVAL
    assert kpid.alloc_pid(k, ns0, [kpid.PID_MAX], True) == -E.EINVAL
    assert kpid.alloc_pid(k, ns0, [1], True) == -E.EEXIST             # init's number
    assert kpid.alloc_pid(k, ns0, [50], False) == -E.EPERM            # no CAP_SYS_ADMIN
    ns1 = kpid.create_pid_namespace(ns0)
    assert kpid.alloc_pid(k, ns1, [5], True) == -E.EINVAL             # not 1, and no init there yet
    assert kpid.alloc_pid(k, ns1, [1, 1], True) == -E.EEXIST          # pid 1 of ns1 free, 1 above taken
    assert ns1.pids == {} and k._next_tid == 2                        # nothing leaked


def test_alloc_pid_numbers_nested_and_translated():
    k = _kernel()
    ns1 = kpid.create_pid_namespace(k.init_pid_ns)
    init1 = _task(k, kpid.alloc_pid(k, ns1, [], True), ns1)
    assert (init1.tid, init1.upids) == (2, (1,)) and ns1.child_reaper is init1
    ns2 = kpid.create_pid_namespace(ns1)
    deep = _task(k, kpid.alloc_pid(k, ns2, [1, 42, 77], True), ns2)
    assert (deep.tid, deep.upids) == (77, (42, 1))
    assert ns1.last_pid == 1                                          # set_tid leaves the cursor
    assert [kpid.pid_nr_ns(k, deep, ns) for ns in (k.init_pid_ns, ns1, ns2)] == [77, 42, 1]
    assert kpid.pid_nr_ns(k, init1, ns2) == 0                         # a parent namespace's task
    assert kpid.upids_of(k, deep, ns1) == [42, 1]
    assert kpid.find_task_by_pid_ns(k, 42, ns1) is deep
    assert k.alloc_tid() == 3                                         # the cursor goes round 77 later
    sibling = kpid.create_pid_namespace(k.init_pid_ns)
    assert sibling.inum == ns2.inum + 1 and not sibling.is_ancestor_of(ns2)


def test_a_dead_namespace_takes_no_task():
    k = _kernel()
    ns1 = kpid.create_pid_namespace(k.init_pid_ns)
    _task(k, kpid.alloc_pid(k, ns1, [], True), ns1)
    ns1.adding = False
    assert kpid.alloc_pid(k, ns1, [], True) == -E.ENOMEM


def test_too_deep_a_namespace_is_refused():
    ns = kpid.initial_pid_ns()
    for _ in range(kpid.MAX_PID_NS_LEVEL - 1):
        ns = kpid.create_pid_namespace(ns)
    assert ns.level == kpid.MAX_PID_NS_LEVEL - 1
    assert kpid.create_pid_namespace(ns) is None
