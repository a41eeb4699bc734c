"""Edges of delivery: a frame that cannot be written, AT_MINSIGSTKSZ on riscv, the default
actions of signals no handler catches, and a signal that arrives while its target is blocked."""
from __future__ import annotations

import struct

import pytest

from emukern.api import Machine
from emukern.kernel import signal as S
from emukern.kernel.arch.riscv import signal as R
from emukern.pytest_plugin import GUEST_ASM
from emukern.kernel.signal import delivery as signal_delivery

INSTALL_RV = """    li a7, 134
    li a0, 10
    la a1, act
    li a2, 0
    li a3, 8
    ecall
"""


def test_unwritable_frame_is_sigsegv(run_guest):
    """signal_setup_done(failed) -> force SIGSEGV: the stack pointer points nowhere."""
    r, m = run_guest(f""".globl _start
_start:
{INSTALL_RV}    li sp, 0x10
    li a0, 1
    li a1, 10
    li a7, 129
    ecall
    li a7, 94
    ecall
handler:
    ret
.data
.balign 16
act: .dword handler, 0, 0
""", arch="riscv64")
    assert r.exit_status == 128 + 11 and r.message == "killed by SIGSEGV"
    assert "could not write the frame for SIGUSR1" in r.fault["why"]


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
def test_riscv_minsigstksz_is_the_full_frame(vlen):
    m = Machine(arch="riscv64", vlen=vlen)
    m.load(GUEST_ASM / "riscv" / "hello.S")
    k = m.kernel
    want = (R.SIZEOF_FRAME + R.riscv_v_sc_size(vlen // 8) + 8 + 15) & ~15
    assert signal_delivery.signal_minsigstksz(k) == want
    sp = k.init_task.ctx["x"][2]
    mm = k.init_task.mm
    p = sp + 8 * (mm.read_u64(sp) + 2)
    while mm.read_u64(p):
        p += 8
    p += 8
    auxv = {}
    while mm.read_u64(p):
        auxv[mm.read_u64(p)] = mm.read_u64(p + 8)
        p += 16
    assert auxv[51] == want                     # AT_MINSIGSTKSZ


def test_minsigstksz_without_v():
    m = Machine(arch="riscv64", has_v=False)
    m.load(GUEST_ASM / "riscv" / "hello.S")
    assert signal_delivery.signal_minsigstksz(m.kernel) == R.SIZEOF_FRAME


@pytest.mark.parametrize("sig,action", [(S.SIGCHLD, "ignore"), (S.SIGCONT, "ignore"), (S.SIGURG, "ignore"),
                                        (S.SIGWINCH, "ignore"), (S.SIGTERM, "terminate"), (S.SIGUSR2, "terminate"),
                                        (S.SIGSEGV, "core"), (S.SIGQUIT, "core"), (S.SIGSYS, "core"),
                                        (S.SIGTSTP, "stop"), (S.SIGRTMIN + 3, "terminate")])
def test_default_actions(run_guest, sig, action):
    """kill(getpid(), sig) with no handler: Linux's default action for that signal."""
    r, m = run_guest(f""".globl _start
_start:
    li a0, 1
    li a1, {sig}
    li a7, 129
    ecall
    li a0, 7
    li a7, 94
    ecall
""", arch="riscv64")
    assert S.default_action(sig) == action
    if action in ("ignore", "stop"):
        assert r.exit_status == 7
    else:
        assert r.exit_status == 128 + sig and r.message == f"killed by {S.signal_name(sig)}"


def test_sigkill_and_sigstop_cannot_be_caught_or_blocked(run_guest):
    r, m = run_guest(""".globl _start
_start:
    li a7, 134
    li a0, 9
    la a1, act
    li a2, 0
    li a3, 8
    ecall
    mv s0, a0
    li a7, 135            # rt_sigprocmask(SIG_BLOCK, {SIGKILL}, &old, 8)
    li a0, 0
    la a1, set
    la a2, old
    li a3, 8
    ecall
    li a7, 135            # read it back
    li a0, 0
    li a1, 0
    la a2, old
    li a3, 8
    ecall
    la t0, old
    ld t1, 0(t0)
    la t0, res
    sd s0, 0(t0)
    sd t1, 8(t0)
    li a0, 1
    li a1, 9
    li a7, 129
    ecall
    li a7, 94
    ecall
handler:
    ret
.data
.balign 16
act: .dword handler, 0, 0
set: .dword 0x100
old: .dword 0
res: .dword 0, 0
""", arch="riscv64")
    ret, mask = struct.unpack("<qQ", m.read(m.symbol("res"), 16))
    assert ret == -22 and mask == 0             # EINVAL; SIGKILL never enters the mask
    assert r.exit_status == 128 + 9 and r.message == "killed by SIGKILL"


def test_info_view_and_names():
    assert S.parse_signal("usr1") == 10 and S.parse_signal("SIGRTMIN+2") == 34 and S.parse_signal("9") == 9
    with pytest.raises(ValueError):
        S.parse_signal("SIGNOPE")
    assert S.signal_name(64) == "SIGRTMIN+32"


def test_riscv_fp_state_through_a_signal(run_guest):
    """save_fp_state / restore_fp_state: f1 and fcsr are in sc_fpregs and come back."""
    r, m = run_guest(f""".globl _start
_start:
{INSTALL_RV}    li t0, 0x4009
    slli t0, t0, 48
    fmv.d.x f1, t0            # f1 = 3.125
    li t0, 0x3
    fsflags t0                # fflags NX|UF
    li a0, 1
    li a1, 10
    li a7, 129
    ecall
    la t2, res
    fmv.x.d t1, f1
    sd t1, 16(t2)
    frflags t1
    sd t1, 24(t2)
    li a7, 94
    ecall
handler:
    la t2, res
    ld t1, {176 + 256 + 8}(a2)     # uc_mcontext.sc_fpregs.d.f[1]
    sd t1, 0(t2)
    lwu t1, {176 + 256 + 256}(a2)  # .fcsr
    sd t1, 8(t2)
    fmv.d.x f1, zero
    fsflags zero
    ret
.data
.balign 16
act: .dword handler, 4, 0
res: .dword 0, 0, 0, 0
""", arch="riscv64")
    assert r.exit_status == 0, (r.message, r.fault)
    frame_f1, frame_fcsr, after_f1, after_flags = struct.unpack("<4Q", m.read(m.symbol("res"), 32))
    assert frame_f1 == after_f1 == 0x4009 << 48
    assert frame_fcsr & 0x1F == 0x3 and after_flags == 0x3


def test_arm64_fpsimd_state_through_a_signal(run_guest):
    """fpsimd_context: V1 is in the record, the handler's change is undone by rt_sigreturn."""
    r, m = run_guest(""".globl _start
_start:
    mov x0, #10
    adr x1, act
    mov x2, #0
    mov x3, #8
    mov x8, #134
    svc #0
    movz x9, #0x1234
    fmov d1, x9
    mov x0, #1
    mov x1, #10
    mov x8, #129
    svc #0
    adr x3, res
    fmov x9, d1
    str x9, [x3, #8]
    mov x0, #0
    mov x8, #94
    svc #0
handler:
    adr x3, res
    ldr w4, [x2, #464]          // first record: fpsimd_context
    str x4, [x3, #16]
    ldr x4, [x2, #464 + 16 + 16]  // vregs[1] (low half)
    str x4, [x3]
    fmov d1, xzr
    ret
.data
.balign 16
act: .dword handler, 4, 0, 0
res: .dword 0, 0, 0
""", arch="arm64")
    assert r.exit_status == 0, (r.message, r.fault)
    frame_v1, after_v1, magic = struct.unpack("<3Q", m.read(m.symbol("res"), 24))
    assert magic == 0x46508001 and frame_v1 == after_v1 == 0x1234


STOP_CONT = """.globl _start
_start:
    li a7, 220                # clone(SIGCHLD) = fork
    li a0, 17
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    ecall
    beqz a0, child
    mv s0, a0
    li a7, 129                # kill(child, SIGSTOP)
    mv a0, s0
    li a1, 19
    ecall
    li a7, 101                # nanosleep(5 ms): the child must not run meanwhile
    la a0, ts
    li a1, 0
    ecall
    li a7, 129                # kill(child, SIGCONT)
    mv a0, s0
    li a1, {cont}
    ecall
    li a7, 260                # wait4(child, &status, 0, 0)
    mv a0, s0
    la a1, status
    li a2, 0
    li a3, 0
    ecall
    la t0, res
    la t1, status
    lw t1, 0(t1)
    sd t1, 16(t0)
    li a0, 0
    li a7, 94
    ecall
child:                        # 200 getpid()s, then exit(42)
    li s3, 0
1:  addi s3, s3, 1
    li a7, 172                # getpid: a syscall each round, so the stop is seen quickly
    ecall
    li t0, 200
    blt s3, t0, 1b
    li a0, 42
    li a7, 94
    ecall
.data
.balign 8
ts: .dword 0, 5000000
status: .dword 0
res: .dword 0, 0, 0
"""


@pytest.mark.parametrize("cont,expect", [(18, 42 << 8), (9, 9)], ids=["SIGCONT", "SIGKILL"])
def test_sigstop_parks_the_child_until_sigcont_or_sigkill(run_guest, cont, expect):
    r, m = run_guest(STOP_CONT.format(cont=cont), arch="riscv64")
    assert r.exit_status == 0, (r.message, r.fault)
    _, _, status = struct.unpack("<3Q", m.read(m.symbol("res"), 24))
    assert status == expect                 # exited 42 after SIGCONT / killed by SIGKILL
    child = next(t for t in m.kernel.tasks.values() if t.tid != 1)
    log = list(m.kernel.trap_log)
    assert any(t.tid == child.tid and "group stop" in t.decision for t in log)
    # parked while the parent slept: none of its getpid()s happened before the parent's SIGCONT
    resume = next(t.time for t in log if t.tid == 1 and t.handler == "kill" and t is not
                  next(x for x in log if x.tid == 1 and x.handler == "kill"))
    child_calls = [t.time for t in log if t.tid == child.tid and t.handler == "getpid"]
    assert len(child_calls) == (200 if cont == 18 else 0)
    assert all(t > resume for t in child_calls)
