"""The vector guest programs of ``guest_asm/riscv/vec_*.S`` run under emukern at VLEN 128, 256
and 512: each checks its vector result against a scalar one computed in the same program (exit
status 0 = match), and here its stdout is also checked against values computed in Python.
The ``rvv_unit`` benchmark is run in quick mode (structure only, no timing assertions).
No qemu needed (``test_rvv_elf_diff.py`` compares the same programs with qemu-riscv64)."""
from __future__ import annotations

import io
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from emukern.api import Machine
from emukern.loader.asm import assemble

GUEST = Path(__file__).resolve().parents[3] / "guest_asm" / "riscv"
VLENS = (128, 256, 512)
M32 = (1 << 32) - 1


def _run(prog: str, vlen: int, argv: list[str] | None = None) -> tuple[int, bytes, Machine]:
    m = Machine(vlen=vlen).load(assemble(GUEST / f"{prog}.S", "riscv64"), argv or [])
    r = m.run()
    return r.exit_status, r.stdout, m


def _s32(v: int) -> int:
    v &= M32
    return v - (1 << 32) if v >> 31 else v


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("n", [1, 255, 4099])
def test_vec_memcpy(vlen: int, n: int) -> None:
    status, out, m = _run("vec_memcpy", vlen, [str(n)])
    assert status == 0
    assert out == bytes((i * 7 + (i >> 8) + 1) & 0xFF for i in range(n))
    # strip-mined at e8/m8: ceil(n / VLMAX) iterations of vsetvli + vle8.v + vse8.v
    vlmax = vlen            # VLEN * 8 / 8
    assert m.cpu(0).vector_insns == 3 * -(-n // vlmax)


def test_vec_memcpy_default_is_64k() -> None:
    status, out, _ = _run("vec_memcpy", 256)
    assert status == 0 and len(out) == 65536


@pytest.mark.parametrize("vlen", VLENS)
def test_vec_strlen(vlen: int) -> None:
    status, out, _ = _run("vec_strlen", vlen)
    assert status == 0
    recs = [struct.unpack_from("<QQ8s", out, i) for i in range(0, len(out), 24)]
    cases = [0, 1, 1, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513,
             1000, 1024, 2047, 3000, 4000]
    assert [r[0] for r in recs] == cases + [4096 - 100 - 1, 0]
    # the string ending just before an unmapped page: vle8ff.v shortened vl to the mapped bytes
    start = 100
    vlmax = vlen
    assert recs[-2][1] == (4096 - start) % vlmax or recs[-2][1] == vlmax
    assert recs[-1][1] == 1                          # the empty string at the page's last byte


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("n", [1, 77, 1000])
def test_vec_saxpy(vlen: int, n: int) -> None:
    status, out, _ = _run("vec_saxpy", vlen, [str(n)])
    assert status == 0
    want = []
    for i in range(n):
        x = (i * 2654435761) & M32
        y = ((i ^ 0x5A5A) - 300000) & M32
        want.append((-7 * x + y) & M32)
    assert list(struct.unpack(f"<{n}I", out)) == want


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("n", [1, 5, 999])
def test_vec_reduce(vlen: int, n: int) -> None:
    status, out, _ = _run("vec_reduce", vlen, [str(n)])
    assert status == 0
    data = [(((i * 0x9E3779B1) & M32) ^ ((i << 7) & M32)) for i in range(n)]
    sd = [_s32(v) for v in data]
    half = [h for v in data for h in (v & 0xFFFF, v >> 16)]
    and_, or_, xor = M32, 0, 0
    for v in data:
        and_ &= v
        or_ |= v
        xor ^= v

    def s16(v: int) -> int:
        v &= 0xFFFF
        return v - 0x10000 if v >> 15 else v
    want = [_s32(sum(data)), max(sd), min(sd), _s32(max(data)), _s32(min(data)), _s32(and_),
            _s32(or_), _s32(xor), _s32(sum(v for v in sd if v > 0)), s16(sum(half)),
            s16(max(half))]
    assert list(struct.unpack("<11q", out)) == want


def test_programs_detect_a_broken_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-program scalar check really checks: a unit whose vadd is off by one fails saxpy."""
    from emukern.machine.rvv import alu
    good = alu.SWAR["vadd"]
    monkeypatch.setitem(alu.SWAR, "vadd", lambda a, b, h, full: good(a, b, h, full) ^ 1)
    status, _, _ = _run("vec_saxpy", 256, ["50"])
    assert status == 1


def test_rvv_unit_bench_quick() -> None:
    from emukern.bench import reproduce, rvv_unit
    assert "rvv_unit" in reproduce.EXPERIMENTS
    assert rvv_unit.TITLE
    ctx = SimpleNamespace(quick=True, console=Console(file=io.StringIO(), width=120))
    res = rvv_unit.run(ctx)
    assert res["vlen"] == 256 and res["quick"] is True
    assert set(res["unit_us"]) == {f"{i} e32 {l}" for i in ("vadd.vv", "vle32.v", "vse32.v")
                                   for l in ("m1", "m8")}
    assert set(res["trap_path"]) == {f"{k} e32 {l}" for k in ("vadd.vv", "vle32+vse32")
                                     for l in ("m1", "m8")}
    for d in res["trap_path"].values():
        assert d["us_per_insn"] > 0 and d["cpu_us_per_insn"] >= 0 and d["vector_insns"] > 0
    assert all(v > 0 for v in res["unit_us"].values())
    mc = res["memcpy"]
    assert mc["bytes"] == 65536 and mc["emukern_status"] == 0 and mc["emukern_s"] > 0
    assert mc["vector_insns"] == 3 * 65536 // 256
    assert "vector memcpy" in ctx.console.file.getvalue()
    if mc["qemu_s"] is None:
        assert "qemu" in mc["note"]
    else:
        assert mc["qemu_status"] == 0 and mc["stdout_match"] is True and mc["ratio"] > 0
    # the verdicts follow the measured figures (a bool of any value would have passed before)
    assert res["unit_meets_target"] == (res["worst_m1_unit_us"] <= rvv_unit.TARGET_US_M1)
    assert res["trap_path_meets_target"] == (res["worst_m1_trap_path_us"] <= rvv_unit.TARGET_US_M1)


@pytest.mark.parametrize("vlen", VLENS)
def test_first_vector_instruction_reexecutes_after_first_use_trap(vlen: int, run_guest) -> None:
    """The kernel's first-use trap turns V on and the *same* instruction runs again (it used to
    be skipped: the INTR hook sees epc + 4 and nothing moved the PC back)."""
    r, m = run_guest("""
        .globl _start
        _start: vsetvli a0, zero, e8, m1, ta, ma
                vmv.v.i v1, 5
                vmv.x.s a1, v1
                add a0, a0, a1
                li a7, 94
                ecall""", arch="riscv64", vlen=vlen)
    assert r.exit_status == (vlen // 8 + 5) & 0xFF
    assert m.cpu(0).vector_insns == 3
    illegal = [t for t in m.trap_log if t.kind == "illegal"]
    assert len(illegal) == 1 and illegal[0].pc == m.symbol("_start")


def test_illegal_vector_instruction_traps_at_its_own_pc(run_guest) -> None:
    """A vector word the unit rejects reaches the kernel with sepc = that instruction."""
    r, m = run_guest("""
        .globl _start
        _start: vsetvli a0, zero, e8, m1, ta, ma
        bad:    vadd.vv v1, v2, v3, v0.t
                .4byte 0x00218057               # vadd.vv v0, v2, v3, v0.t: reserved
                li a7, 94
                ecall""", arch="riscv64")
    assert r.signal == 4                                  # SIGILL
    last = [t for t in m.trap_log if t.kind == "illegal"][-1]
    assert last.pc == m.symbol("bad") + 4
