"""PTRACE_SYSCALL syscall-stops (kernel/signal/ptrace.py syscall_trace_enter/_exit) with a real
tracer/tracee pair, guest_asm/c/ptrace_syscall_probe.c, on both architectures: the entry stop shows
the syscall number, the exit stop the return value, both as status SIGTRAP|0x80 (TRACESYSGOOD)."""
from __future__ import annotations

import pytest

from emukern.api import Machine

EXPECTED = ("stop: 0x137f\nSETOPTIONS TRACESYSGOOD: 0\n"
            "entry stop: status 0x857f, nr {nr} (getpid {nr})\n"
            "exit stop: status 0x857f, return is the child's pid: 1\n"
            "child exit: 7\n")


@pytest.mark.parametrize("arch,nr", [("riscv64", 172), ("arm64", 172)])
def test_syscall_stops(cguest, arch, nr):
    r = Machine(arch=arch).load(cguest("ptrace_syscall_probe", arch), []).run()
    assert r.exit_status == 0, (r.message, r.stdout)
    assert r.stdout.decode() == EXPECTED.format(nr=nr)
