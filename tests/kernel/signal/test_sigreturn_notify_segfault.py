"""A frame that rt_sigreturn rejects ends, on arm64, in arm64_notify_segfault(regs->sp): a
fault-style SIGSEGV whose si_addr is the stack pointer *after* restore_sigframe copied the frame's
registers, with si_code SEGV_ACCERR when a mapping lies at or above that address (find_vma) and
SEGV_MAPERR otherwise.  Linux's own arm64 signal selftests (fake_sigreturn_*, mangle_pstate_*)
abort unless they see exactly SEGV_ACCERR.  valid_user_regs also rejects a pstate with any of
D, A, I, F set (mangle_pstate_invalid_daif_bits).  The guest catches the SIGSEGV on an alternate
stack and exits with si_code, or 200 if si_signo or si_addr is not what Linux gives."""
from __future__ import annotations

import pytest

from emukern.kernel.arch.arm64 import signal as A
from emukern.kernel.signal import SEGV_ACCERR, SEGV_MAPERR


def _frame_asm(frame: bytes, fields: dict[int, str]) -> str:
    """.dword lines for ``frame``; ``fields`` replaces 8-byte slots by symbols or expressions."""
    return "\n".join(f"    .dword {fields[off]}" if off in fields
                     else f"    .dword {int.from_bytes(frame[off:off + 8], 'little'):#x}"
                     for off in range(0, len(frame), 8))


def arm64_frame(records: list[bytes], pstate: int) -> tuple[bytes, dict[int, str]]:
    b = bytearray(A.SIZEOF_FRAME)
    b[A.SC_REGS:A.SC_REGS + 8] = (42).to_bytes(8, "little")               # x0 = 42
    b[A.SC_PSTATE:A.SC_PSTATE + 8] = pstate.to_bytes(8, "little")
    off = A.RESERVED
    for rec in records:
        b[off:off + len(rec)] = rec
        off += len(rec)
    return bytes(b), {A.SC_PC: "after"}


def fpsimd_rec() -> bytes:
    return A.FPSIMD_MAGIC.to_bytes(4, "little") + (528).to_bytes(4, "little") + bytes(520)


END = bytes(16)

HIGH_SP = 0xFFFF_FFFF_0000          # above every mapping: find_vma finds nothing


def guest(frame: bytes, fields: dict[int, str], sp_off: int, expect: str) -> str:
    return f""".globl _start
_start:
    adr x0, altstack_t              // sigaltstack(&ss, NULL)
    mov x1, #0
    mov x8, #132
    svc #0
    mov x0, #11                     // rt_sigaction(SIGSEGV, &sa, NULL, 8)
    adr x1, sa
    mov x2, #0
    mov x3, #8
    mov x8, #134
    svc #0
    adr x9, frame
    add x9, x9, #{sp_off}
    mov sp, x9
    mov x8, #139                    // rt_sigreturn on the forged frame
    svc #0
    mov x0, #99
after:                              // the frame's pc: x0 is the frame's 42
    mov x8, #94
    svc #0
handler:
    ldr w10, [x1]                   // si_signo
    ldr w11, [x1, #8]               // si_code
    ldr x12, [x1, #16]              // si_addr
    adr x13, expect
    ldr x13, [x13]
    mov x0, #200
    cmp w10, #11
    b.ne 1f
    cmp x12, x13
    b.ne 1f
    mov w0, w11
1:  mov x8, #94
    svc #0
.data
.balign 16
sa:
    .dword handler
    .dword 0x08000004               // SA_ONSTACK | SA_SIGINFO
    .dword 0
    .dword 0
altstack_t:
    .dword altstack
    .dword 0
    .dword 65536
expect:
    .dword {expect}
.balign 16
frame:
{_frame_asm(frame, fields)}
.bss
.balign 16
altstack:
    .space 65536
"""


def bad_magic() -> list[bytes]:
    return [fpsimd_rec(), (0xDEADBEEF).to_bytes(4, "little") + (16).to_bytes(4, "little") + bytes(8), END]


@pytest.mark.parametrize("case,records,pstate,sp_off,saved_sp,expect,code", [
    # restore_sigframe got as far as copying the registers: si_addr is the frame's own sp
    ("bad magic", bad_magic(), 0, 0, "frame", "frame", SEGV_ACCERR),
    ("missing fpsimd", [END], 0, 0, "frame", "frame", SEGV_ACCERR),
    ("pstate EL1h", [fpsimd_rec(), END], 0x5, 0, "frame", "frame", SEGV_ACCERR),
    ("pstate compat bit", [fpsimd_rec(), END], 0x10, 0, "frame", "frame", SEGV_ACCERR),
    ("pstate DAIF bits", [fpsimd_rec(), END], 0x3C0, 0, "frame", "frame", SEGV_ACCERR),
    ("pstate I bit only", [fpsimd_rec(), END], 0x80, 0, "frame", "frame", SEGV_ACCERR),
    # a misaligned sp fails before anything is copied: si_addr is the sp rt_sigreturn saw
    ("misaligned sp", [fpsimd_rec(), END], 0, 8, "frame", "frame + 8", SEGV_ACCERR),
    # the forged sp lies above every mapping: find_vma is NULL -> SEGV_MAPERR
    ("forged sp above all mappings", bad_magic(), 0, 0, f"{HIGH_SP:#x}", f"{HIGH_SP:#x}", SEGV_MAPERR),
])
def test_arm64_bad_frame_sigsegv_siginfo(run_guest, case, records, pstate, sp_off, saved_sp, expect, code):
    frame, fields = arm64_frame(records, pstate=pstate)
    fields[A.SC_SP] = saved_sp
    r, m = run_guest(guest(frame, fields, sp_off, expect), arch="arm64", sve_vl=256)
    assert r.fault is None and r.exit_status == code, (case, r.exit_status, r.message)


@pytest.mark.parametrize("pstate", [0x0, 0x2000_0000, 0xF000_0000])
def test_arm64_el0t_pstate_with_flags_is_accepted(run_guest, pstate):
    """Only NZCV set: a valid EL0t state, the frame is restored (x0 = 42 from the frame)."""
    frame, fields = arm64_frame([fpsimd_rec(), END], pstate=pstate)
    fields[A.SC_SP] = "frame"
    r, m = run_guest(guest(frame, fields, 0, "0"), arch="arm64", sve_vl=256)
    assert r.fault is None and r.exit_status == 42, r.message
