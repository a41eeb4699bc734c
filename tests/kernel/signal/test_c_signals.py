"""A static glibc program that uses signals the way real programs do (guest_asm/c/signals.c):
dispositions, masks, queued real-time signals, sigtimedwait, nested handlers, sigaltstack,
siglongjmp out of SIGSEGV, SIGILL/SIGTRAP with siginfo, EINTR and SA_RESTART on a pipe read,
nanosleep's remaining time, sigsuspend, interval timers, futex (sem_wait) and wait4 EINTR, SIGCHLD,
kill(-pgid), pthread_kill and thread selection for process signals, timer_create (SI_TIMER).  qemu-user is
the oracle for all of it, with one documented exception: qemu-aarch64 7.2 reports an undefined
instruction as ILL_ILLOPN, where Linux's do_el0_undef sends ILL_ILLOPC."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from emukern.api import Machine

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
PARTS = ["dispositions", "masks", "nested", "altstack", "sync", "eintr", "children", "threads", "posix-timer"]


def _elf(cguest, arch):
    """signals.c cguest for ``arch`` (skips without the cross compiler)."""
    return cguest("signals", arch, "-lpthread")


def _qemu(arch, exe, part):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    return subprocess.run([QEMU[arch], str(exe), part], capture_output=True, timeout=120)


def _expected(arch, out: bytes) -> bytes:
    if arch == "arm64":
        out = out.replace(b"SIGILL: sig=4 code=2 (ILL_ILLOPC=1)", b"SIGILL: sig=4 code=1 (ILL_ILLOPC=1)")
    return out


@pytest.mark.qemu
@pytest.mark.parametrize("arch", list(CC))
@pytest.mark.parametrize("part", PARTS)
def test_part_matches_qemu(cguest, arch, part):
    exe = _elf(cguest, arch)
    r = Machine().load(exe, [part]).run()
    q = _qemu(arch, exe, part)
    assert r.exit_status == q.returncode == 0, (r.message, r.fault)
    assert r.stdout == _expected(arch, q.stdout)
    assert r.stdout.endswith(b"done\n")


@pytest.mark.qemu
@pytest.mark.parametrize("arch", list(CC))
def test_uncaught_signal_is_named(cguest, arch):
    exe = _elf(cguest, arch)
    r = Machine().load(exe, ["die"]).run()
    q = _qemu(arch, exe, "die")
    # qemu-user re-raises the guest's fatal signal on itself: the shell sees -SIGUSR1
    assert q.returncode == -10 and r.exit_status == 128 + 10
    assert r.stdout == q.stdout == b"raising an uncaught SIGUSR1\n"
    assert r.message == "killed by SIGUSR1" and r.signal == 10
    assert r.fault["signame"] == "SIGUSR1"
    assert json.loads(json.dumps(r.to_json()))["message"] == "killed by SIGUSR1"


@pytest.mark.parametrize("arch", list(CC))
def test_signal_heavy_run_is_deterministic(cguest, arch):
    exe = _elf(cguest, arch)
    a = Machine(cpus=2).load(exe).run().to_json()
    b = Machine(cpus=2).load(exe).run().to_json()
    assert a["exit_status"] == 0 and a["stdout"].endswith("done\n")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["syscalls"]["rt_sigreturn"] >= 20


@pytest.mark.parametrize("arch", list(CC))
def test_exec_resets_handlers(cguest, arch):
    """flush_signal_handlers at execve: a caught signal goes back to SIG_DFL, an ignored one stays
    ignored, the blocked mask survives.  (qemu-user cannot execve a foreign-arch binary without
    binfmt_misc, so the expected text is Linux's rule, written out.)"""
    exe = _elf(cguest, arch)
    root = exe.parent / f"root-{arch}"               # execve resolves only inside the guest root
    root.mkdir(exist_ok=True)
    shutil.copy(exe, root / "signals")
    r = Machine(root=str(root)).load(root / "signals", ["exec", "/signals"]).run()
    assert r.exit_status == 0, (r.message, r.fault)
    assert r.stdout == b"after exec: SIGUSR1 SIG_DFL, SIGUSR2 SIG_IGN, SIGINT blocked=1\ndone\n"
