"""PTRACE_SYSCALL over a syscall that sleeps, and PTRACE_GET_SYSCALL_INFO
(guest_asm/c/ptrace_sleep_probe.c, a real tracer/tracee pair, both architectures).

The tracee's read() blocks on an empty pipe after its entry stop; the tracer writes a byte, and
the exit stop must still come (restart_syscall reports it).  At each stop PTRACE_GET_SYSCALL_INFO
answers as Linux 6.12's: NONE with the 24-byte head at the SIGSTOP stop, ENTRY (80 bytes: nr and
six args) and EXIT (33 bytes: rval, is_error) at syscall stops of a TRACESYSGOOD tracer, with the
AUDIT_ARCH of the machine; PTRACE_GETEVENTMSG gives PTRACE_EVENTMSG_SYSCALL_ENTRY/EXIT (1/2)."""
from __future__ import annotations

import pytest

from emukern.api import Machine

EXPECTED = ("stop 0x137f: info size 24, op 0, eventmsg 0, arch {a}, ip/sp set 1\n"
            "entry 0x857f: info size 80, op 1, eventmsg 1, arch {a}, ip/sp set 1, nr is read 1, args fd 1 len 3\n"
            "exit 0x857f: info size 33, op 2, eventmsg 2, arch {a}, ip/sp set 1, rval 1, is_error 0\n"
            "child exit: 120\n")


@pytest.mark.parametrize("arch,audit", [("arm64", "0xc00000b7"), ("riscv64", "0xc00000f3")])
def test_sleeping_syscall_exit_stop_and_info(cguest, arch, audit):
    m = Machine(arch=arch)
    r = m.load(cguest("ptrace_sleep_probe", arch), []).run()
    assert r.exit_status == 0, (r.message, r.stdout)
    assert r.stdout.decode() == EXPECTED.format(a=audit)
    # the child's read really slept before the byte came (it is not the fast path's exit stop)
    assert any(getattr(t, "handler", "") == "read" and "blocked" in getattr(t, "decision", "")
               for t in m.trap_log)
