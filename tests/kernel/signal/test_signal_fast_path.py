"""The short path of a signal delivered on a syscall's return (Kernel.syscall_entry ->
deliver_to_handler: no Trap built, the note on the syscall's own record, notes formatted when
read) must log, charge and leave exactly what the generic path (handle_trap -> do_signal with a
Trap) does.  A trap listener forces the generic path, so each guest runs both ways and the two
trap logs and results are compared record by record."""
from __future__ import annotations

import json
from typing import Any

import pytest

from emukern.api import Machine
from emukern.kernel.signal.defs import SI_USER
from emukern.kernel.signal.state import KSigInfo
from emukern.machine.trap import note_text

# SIGUSR1 and SIGUSR2 pending together, both unblocked by one rt_sigprocmask: on its return the
# first goes to a handler on the short path, the second then takes the generic one — a second
# handler frame stacked on the first (USR2_ACT = act), or SIGUSR2's default action (USR2_ACT = dfl)
TWO_PENDING = """
.include "syscalls.inc"
.globl _start
_start:
    li a7, 134
    li a0, 10
    la a1, act
    li a2, 0
    li a3, 8
    ecall                       # rt_sigaction(SIGUSR1, &act)
    li a7, 134
    li a0, 12
    la a1, USR2_ACT
    li a2, 0
    li a3, 8
    ecall                       # rt_sigaction(SIGUSR2, ...)
    li a7, 135
    li a0, 0
    la a1, set
    li a2, 0
    li a3, 8
    ecall                       # rt_sigprocmask(SIG_BLOCK, {USR1, USR2})
    li a7, 172
    ecall
    mv s1, a0                   # getpid
    mv a0, s1
    li a1, 10
    li a7, 129
    ecall                       # kill(pid, SIGUSR1): blocked, pending
    mv a0, s1
    li a1, 12
    li a7, 129
    ecall                       # kill(pid, SIGUSR2): blocked, pending
    li a7, 135
    li a0, 1
    la a1, set
    li a2, 0
    li a3, 8
    ecall                       # rt_sigprocmask(SIG_UNBLOCK): both deliverable on its return
    la t0, count
    ld a0, 0(t0)
    li a7, 94
    ecall                       # exit_group(handlers run)
handler:
    la t0, count
    ld t1, 0(t0)
    addi t1, t1, 1
    sd t1, 0(t0)
    ret
.data
.balign 16
act: .dword handler, 0, 0
dfl: .dword 0, 0, 0
set: .dword 0xa00
count: .dword 0
"""


def _run(path: Any, argv: list[str], generic: bool, **opts: Any) -> tuple[list[tuple], str, Any]:
    m = Machine(**opts).load(path, argv)
    if generic:
        m.kernel.trap_listeners.append(lambda *a: None)     # handle_trap's path, with a Trap
    r = m.run()
    log = [(x.seq, x.cpu, x.tid, x.time, x.kind, x.pc, x.handler, x.cycles, x.flags, x.decision)
           for x in m.kernel.trap_log]
    return log, json.dumps(r.to_json(), sort_keys=True), r


def _both(path: Any, argv: list[str], **opts: Any) -> tuple[list[tuple], Any]:
    fast, fast_js, r = _run(path, argv, False, **opts)
    slow, slow_js, _ = _run(path, argv, True, **opts)
    assert fast == slow
    assert fast_js == slow_js
    return fast, r


@pytest.mark.parametrize("arch,sub", [("riscv64", "riscv"), ("arm64", "arm64")])
def test_sig_loop_fast_path_logs_as_generic(guest_asm, arch, sub):
    log, r = _both(guest_asm / sub / "sig_loop.S", ["25"], arch=arch)
    assert r.exit_status == 0 and r.syscalls["rt_sigreturn"] == 25
    kills = [d for *_, h, _c, _f, d in log if h in ("kill",)]
    assert len(kills) == 25 and all("deliver SIGUSR1 (code 0) to handler 0x" in d for d in kills)
    rets = [d for *_, h, _c, _f, d in log if h == "rt_sigreturn"]
    assert len(rets) == 25 and all("rt_sigreturn: frame at 0x" in d and "restored" in d for d in rets)


@pytest.mark.parametrize("usr2,status", [("act", 2), ("dfl", None)])
def test_second_pending_signal_takes_the_generic_path(tmp_path, usr2, status):
    src = tmp_path / f"two_pending_{usr2}.S"
    src.write_text(TWO_PENDING.replace("USR2_ACT", usr2))
    log, r = _both(src, [], arch="riscv64")
    unblock = [d for *_, h, _c, _f, d in log if h == "rt_sigprocmask"][-1]
    assert "deliver SIGUSR1" in unblock
    if status is not None:
        assert r.exit_status == status                  # both handlers ran
        assert "deliver SIGUSR2" in unblock and unblock.index("SIGUSR1") < unblock.index("SIGUSR2")
    else:
        assert r.exit_status == 128 + 12 and "SIGUSR2" in r.message       # killed by SIGUSR2
        assert "deliver SIGUSR1" in unblock and "SIGUSR2: default action terminate" in unblock


def test_note_text_formats_when_read():
    calls = []

    def fmt(a: int, b: str) -> str:
        calls.append((a, b))
        return f"{a:#x} {b}"
    note = (fmt, 255, "x")
    assert calls == []                   # nothing formatted while the note is only kept
    assert note_text(note) == "0xff x" and calls == [(255, "x")]
    assert note_text("plain text") == "plain text"


@pytest.mark.parametrize("info", [
    KSigInfo(10, SI_USER, 0, 5, 0),                                   # kill
    KSigInfo(11, 1, addr=0x1234),                                      # a fault
    KSigInfo(17, 1, pid=3, status=0, utime=1, stime=2),                # SIGCHLD
    KSigInfo(34, -1, pid=2, value=7),                                  # sigqueue
    KSigInfo(14, -2, timerid=1, value=3, overrun=2),                   # a POSIX timer
], ids=["kill", "fault", "chld", "rt", "timer"])
def test_siginfo_pack_into_is_to_bytes(info):
    """setup_rt_frame packs siginfo straight into the frame; arm64's copies to_bytes: the same
    128 bytes, and nothing written outside them."""
    b = info.to_bytes()
    frame = bytearray(200)
    info.pack_into(frame, 40)
    assert len(b) == 128 and bytes(frame[40:168]) == b
    assert not any(frame[:40]) and not any(frame[168:])
    assert int.from_bytes(b[0:4], "little") == info.signo


@pytest.mark.parametrize("arch,sub", [("riscv64", "riscv"), ("arm64", "arm64")])
def test_kill_to_oneself_builds_no_trap(guest_asm, arch, sub):
    """The short path is the one taken: a kill whose signal goes to a handler on its own return
    keeps the syscall's lazy record (its Trap not made until the log is read)."""
    from emukern.kernel.entry import SyscallRecord
    m = Machine(arch=arch).load(guest_asm / sub / "sig_loop.S", ["5"])
    r = m.run()
    assert r.exit_status == 0
    kills = [x for x in m.kernel.trap_log if isinstance(x, SyscallRecord) and x._p[9] == "kill"]
    assert len(kills) == 5 and not any(hasattr(x, "_t") for x in kills)
    assert all("deliver SIGUSR1" in x.decision for x in kills)     # (reading it builds the Trap)
