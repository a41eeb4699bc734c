"""rt_sigreturn restores exactly what the frame says, and a forged or corrupt frame is a bad
frame: SIGSEGV (Linux's badframe path), never a host error.  The frames are built here byte by
byte and handed to rt_sigreturn by guests that never took a signal."""
from __future__ import annotations

import pytest

from emukern.kernel.arch.arm64 import signal as A
from emukern.kernel.arch.riscv import signal as R


def _frame_asm(frame: bytes, fields: dict[int, str]) -> str:
    """.dword lines for ``frame``; ``fields`` replaces 8-byte slots by symbols (e.g. pc)."""
    out = []
    for off in range(0, len(frame), 8):
        if off in fields:
            out.append(f"    .dword {fields[off]}")
        else:
            out.append(f"    .dword {int.from_bytes(frame[off:off + 8], 'little'):#x}")
    return "\n".join(out)


def riscv_guest(frame: bytes, fields: dict[int, str], sp_load: str = "la sp, frame") -> str:
    return f""".globl _start
_start:
    {sp_load}
    li a7, 139
    ecall
    li a0, 99
after:
    li a7, 94
    ecall
.data
.balign 16
frame:
{_frame_asm(frame, fields)}
"""


def riscv_frame(*, reserved: int = 0, ext: list[tuple[int, int]] | None = None, a0: int = 42) -> tuple[bytes, dict]:
    b = bytearray(R.SIZEOF_FRAME + 64)
    b[R.MCONTEXT + 8 * 10:R.MCONTEXT + 8 * 11] = a0.to_bytes(8, "little")
    b[R.SC_RESERVED:R.SC_RESERVED + 4] = reserved.to_bytes(4, "little")
    off = R.SC_EXT_HDR
    for magic, size in ext or [(0, 0)]:
        b[off:off + 8] = magic.to_bytes(4, "little") + size.to_bytes(4, "little")
        off += max(size, 8)
    # sc_regs.pc = after; sp (x2) = the real stack top is not needed: the guest exits at once
    return bytes(b), {R.MCONTEXT: "after"}


def test_riscv_good_frame_restores_pc_and_registers(run_guest):
    frame, fields = riscv_frame()
    r, m = run_guest(riscv_guest(frame, fields), arch="riscv64")
    assert r.exit_status == 42 and r.fault is None


@pytest.mark.parametrize("case,kw", [
    ("reserved word set", {"reserved": 1}),
    ("unknown magic", {"ext": [(0x1234, 16)]}),
    ("END with a size", {"ext": [(0, 8)]}),
    ("V record while V is off", {"ext": [(R.RISCV_V_MAGIC, R.riscv_v_sc_size(32)), (0, 0)]}),
])
def test_riscv_bad_frames_give_sigsegv(run_guest, case, kw):
    frame, fields = riscv_frame(**kw)
    r, m = run_guest(riscv_guest(frame, fields), arch="riscv64")
    assert r.exit_status == 128 + 11 and r.message == "killed by SIGSEGV", case
    assert "bad signal frame" in r.fault["why"]


def test_riscv_unmapped_frame(run_guest):
    src = riscv_guest(b"\0" * 16, {}, sp_load="li sp, 0x7000000000")
    r, m = run_guest(src, arch="riscv64")
    assert r.exit_status == 128 + 11 and "not readable" in r.fault["why"]


def arm64_guest(frame: bytes, fields: dict[int, str], sp_off: int = 0) -> str:
    return f""".globl _start
_start:
    adr x9, frame
    add x9, x9, #{sp_off}
    mov sp, x9
    mov x8, #139
    svc #0
    mov x0, #99
after:
    mov x8, #94
    svc #0
.data
.balign 16
frame:
{_frame_asm(frame, fields)}
"""


def arm64_frame(records: list[bytes], pstate: int = 0, x0: int = 42) -> tuple[bytes, dict]:
    b = bytearray(A.SIZEOF_FRAME)
    b[A.SC_REGS:A.SC_REGS + 8] = x0.to_bytes(8, "little")
    b[A.SC_PSTATE:A.SC_PSTATE + 8] = pstate.to_bytes(8, "little")
    off = A.RESERVED
    for rec in records:
        b[off:off + len(rec)] = rec
        off += len(rec)
    return bytes(b), {A.SC_PC: "after", A.SC_SP: "frame"}


def fpsimd_rec() -> bytes:
    return A.FPSIMD_MAGIC.to_bytes(4, "little") + (528).to_bytes(4, "little") + bytes(520)


def sve_rec(vl_bytes: int, size: int = 16) -> bytes:
    return (A.SVE_MAGIC.to_bytes(4, "little") + size.to_bytes(4, "little") + vl_bytes.to_bytes(2, "little")
            + bytes(size - 10))


END = bytes(16)


@pytest.mark.parametrize("records", [[fpsimd_rec(), END], [fpsimd_rec(), sve_rec(32), END]],
                         ids=["fpsimd", "fpsimd+sve-header"])
def test_arm64_good_frame(run_guest, records):
    frame, fields = arm64_frame(records)
    r, m = run_guest(arm64_guest(frame, fields), arch="arm64", sve_vl=256)
    assert r.exit_status == 42 and r.fault is None


@pytest.mark.parametrize("case,records,pstate,sp_off", [
    ("misaligned sp", [fpsimd_rec(), END], 0, 8),
    ("no fpsimd record", [END], 0, 0),
    ("two fpsimd records", [fpsimd_rec(), fpsimd_rec(), END], 0, 0),
    ("fpsimd record of a wrong size", [A.FPSIMD_MAGIC.to_bytes(4, "little") + (544).to_bytes(4, "little")
                                       + bytes(536), END], 0, 0),
    ("SVE VL mismatch", [fpsimd_rec(), sve_rec(64), END], 0, 0),
    ("SVE record too small for its VL", [fpsimd_rec(), sve_rec(32, 48), END], 0, 0),
    ("unknown magic", [fpsimd_rec(), (0x1234).to_bytes(4, "little") + (16).to_bytes(4, "little") + bytes(8),
                       END], 0, 0),
    ("pstate not EL0t", [fpsimd_rec(), END], 0x5, 0),
    ("no terminator", [fpsimd_rec()] + [fpsimd_rec()[:0]], 0, 0),
])
def test_arm64_bad_frames_give_sigsegv(run_guest, case, records, pstate, sp_off):
    frame, fields = arm64_frame(records, pstate=pstate)
    if case == "no terminator":
        b = bytearray(frame)
        for off in range(A.RESERVED + 528, A.SIZEOF_FRAME - 16, 16):     # fill with junk records
            b[off:off + 8] = (0x77).to_bytes(4, "little") + (16).to_bytes(4, "little")
        frame = bytes(b)
    r, m = run_guest(arm64_guest(frame, fields, sp_off), arch="arm64", sve_vl=256)
    assert r.exit_status == 128 + 11 and r.message == "killed by SIGSEGV", (case, r.message)
    assert "bad signal frame" in r.fault["why"]


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
@pytest.mark.parametrize("seed", range(6))
def test_random_frames_never_hurt_the_host(run_guest, arch, seed):
    """rt_sigreturn on seeded random bytes (with valid-looking headers sprinkled in): the guest
    may die of SIGSEGV/SIGILL or run on, but emukern never raises and never hangs."""
    import random
    rnd = random.Random(seed)
    size = (R.SIZEOF_FRAME if arch == "riscv64" else A.SIZEOF_FRAME) + 256
    b = bytearray(rnd.getrandbits(8) for _ in range(size))
    if arch == "riscv64":
        b[R.SC_RESERVED:R.SC_RESERVED + 4] = bytes(4) if seed % 2 else b[R.SC_RESERVED:R.SC_RESERVED + 4]
        if seed % 3 == 0:
            b[R.SC_EXT_HDR:R.SC_EXT_HDR + 8] = bytes(8)
        src = riscv_guest(bytes(b), {})
    else:
        b[A.RESERVED:A.RESERVED + 8] = A.FPSIMD_MAGIC.to_bytes(4, "little") + (528).to_bytes(4, "little")
        if seed % 2:
            b[A.RESERVED + 528:A.RESERVED + 544] = bytes(16)
        b[A.SC_PSTATE:A.SC_PSTATE + 8] = bytes(8) if seed % 3 else b[A.SC_PSTATE:A.SC_PSTATE + 8]
        src = arm64_guest(bytes(b), {})
    r, m = run_guest(src, arch=arch, max_insns=200_000)
    assert r.stop_reason in ("exited", "killed", "budget")
    if r.stop_reason == "killed":
        assert r.message.startswith("killed by SIG")
