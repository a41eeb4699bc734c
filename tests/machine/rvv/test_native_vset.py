"""vsetvli / vsetivli / vsetvl executed in C by the INTR hook (emukern/machine/rvv/native.py,
ek_rvv_intr in native/counter.c) give exactly what the Python unit gives (exec_cfg.run_vsetvl).

A generated guest runs every form — rd and rs1 x0 or not, the vsetivli immediate AVL, vsetvl's
vtype from a register (bit 63, reserved bits), every SEW/LMUL including the reserved vlmul and the
fractional LMULs ELEN 64 forbids, the keep-vl form (rs1 = rd = x0) with the same and another
VLMAX, right after a native vsetvli and right after a Python entry — and stores rd, vl and vtype
after each.  It runs at VLEN 128/256/512/1024 with the native path on and off (EMUKERN_NATIVE_VSET);
stdout and the --json summary must be identical, and the native run must really have executed
them in C.  Against qemu-riscv64 (the oracle for instruction semantics) the cases the spec
defines are compared too (the keep-vl form whose VLMAX changes is reserved: not compared).
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from emukern.api import Machine
from emukern.bench.peers import qemu_cmd
from emukern.machine.counter import native_available

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native hooks")

T0, A0, A1 = 5, 10, 11
VLENS = (128, 256, 512, 1024)
AVLS = (0, 1, 3, 17, 64, 1000, 1 << 63, (1 << 64) - 1)
# vtype immediates: every vsew x vlmul (vsew 4..7 and vlmul 4 reserved), ta/ma, reserved bits
VTYPES = sorted({(s << 3) | l for s in range(5) for l in range(8)} | {0xC0 | 0x10, 0x40 | 0x1B, 0x100 | 0x08,
                                                                     0x200, 0x400 | 0x10, 0x7FF})


def vsetvli(rd: int, rs1: int, zimm: int) -> int:
    return (zimm & 0x7FF) << 20 | rs1 << 15 | 7 << 12 | rd << 7 | 0x57


def vsetivli(rd: int, uimm: int, zimm: int) -> int:
    return 3 << 30 | (zimm & 0x3FF) << 20 | uimm << 15 | 7 << 12 | rd << 7 | 0x57


def vsetvl(rd: int, rs1: int, rs2: int) -> int:
    return 1 << 31 | rs2 << 20 | rs1 << 15 | 7 << 12 | rd << 7 | 0x57


def _vlmax(vtype: int, vlen: int) -> int:
    """0 for a vtype that sets vill (ELEN 64)."""
    lm, sew = vtype & 7, 8 << ((vtype >> 3) & 7)
    if vtype >> 8 or lm == 4 or (vtype >> 3) & 7 > 3:
        return 0
    if lm < 4:
        return (vlen << lm) // sew
    if sew > 64 >> (8 - lm):
        return 0
    return (vlen >> (8 - lm)) // sew


def cases() -> list[tuple[str, list[int], int, int, bool]]:
    """(label, words, a0 = AVL, a1 = vtype for vsetvl, defined for any VLEN by the spec)."""
    out = []
    for zimm in VTYPES:
        for avl in AVLS[::2] if zimm not in (0x10, 0x1B) else AVLS:
            for rd in (0, T0):
                for rs1 in (0, A0):
                    out.append((f"vsetvli x{rd},x{rs1},{zimm:#x} avl={avl}", [vsetvli(rd, rs1, zimm)], avl, 0,
                                not (rd == 0 and rs1 == 0)))
        if zimm < 0x400:
            for uimm in (0, 1, 7, 31):
                for rd in (0, T0):
                    out.append((f"vsetivli x{rd},{uimm},{zimm:#x}", [vsetivli(rd, uimm, zimm)], 0, 0, True))
    for vt in (*VTYPES, 1 << 63, (1 << 63) | 0x10, 1 << 8, 0xFFFF_FFFF_FFFF_FFFF, 0x10 | 1 << 40):
        for avl in (0, 5, 1000, (1 << 64) - 1):
            for rd in (0, T0):
                for rs1 in (0, A0):
                    out.append((f"vsetvl x{rd},x{rs1},a1={vt:#x} avl={avl}", [vsetvl(rd, rs1, A1)], avl, vt,
                                not (rd == 0 and rs1 == 0)))
        # rs2 = x0: vtype 0 (e8, m1)
    out.append(("vsetvl t0,a0,x0", [vsetvl(T0, A0, 0)], 9, 0, True))
    # keep vl (rs1 = rd = x0) after a vsetvli: the same VLMAX keeps vl, another one sets vill
    first = 0x10                                             # e32, m1
    for zimm in (0x10, 0x0F, 0x17, 0x08, 0x11, 0x00, 0x1B, 0x12, 0x04, 0x100):
        for avl in (0, 3, 1000):
            for pre in ([vsetvli(T0, A0, first)], [vsetvli(T0, A0, 0x04)], [vsetvl(0, A0, A1)]):
                out.append((f"keep {zimm:#x} after {pre[0]:#x} avl={avl}", pre + [vsetvli(0, 0, zimm)], avl,
                            1 << 63 if pre[0] == vsetvl(0, A0, A1) else 0, False))
                out.append((f"keep-vl (vsetvl) {zimm:#x} after {pre[0]:#x} avl={avl}",
                            pre + [vsetvl(0, 0, A1)], avl, zimm, False))
    return out


def guest(case_list: list[tuple[str, list[int], int, int, bool]]) -> str:
    lines = ['.include "syscalls.inc"', ".globl _start", "_start:", "    la s0, buf", "    mv s1, s0",
             "    vsetvli t0, zero, e8, m1, ta, ma        # first use (VS Off: the kernel's trap)"]
    for i, (_label, words, avl, vt, _defined) in enumerate(case_list):
        lines += [f"    li a0, {avl:#x}", f"    li a1, {vt:#x}", "    li t0, 0x5a5a"]
        if i % 3 == 1:
            lines.append("    csrr t3, vl                # a Python entry just before")
        lines += [f"    .4byte {w:#010x}" for w in words]
        lines += ["    csrr t1, vl", "    csrr t2, vtype", "    sd t0, 0(s0)", "    sd t1, 8(s0)",
                  "    sd t2, 16(s0)", "    addi s0, s0, 24"]
    lines += ["    li a0, 1", "    mv a1, s1", "    sub a2, s0, s1", "    li a7, SYS_write", "    ecall",
              "    li a0, 0", "    li a7, SYS_exit_group", "    ecall",
              ".bss", ".align 3", f"buf: .space {24 * len(case_list)}"]
    return "\n".join(lines)


CASES = cases()


@pytest.fixture(scope="module")
def elf(tmp_path_factory):
    from emukern.api import resolve_program
    src = tmp_path_factory.mktemp("vset") / "vset_forms.S"
    src.write_text("# arch: riscv64\n" + guest(CASES) + "\n")
    path, _ = resolve_program(src, "riscv64")
    return path


def _run(elf, monkeypatch, vlen: int, native: bool, **options):
    monkeypatch.setenv("EMUKERN_NATIVE_VSET", "1" if native else "0")
    m = Machine(arch="riscv64", vlen=vlen, **options)
    m.load(elf)
    r = m.run()
    cpu = m.cpu(0)
    return r, json.dumps(r.to_json(), sort_keys=True), cpu


@needs_native
@pytest.mark.parametrize("vlen", VLENS)
def test_native_forms_equal_python(elf, monkeypatch, vlen):
    r_on, j_on, c_on = _run(elf, monkeypatch, vlen, True)
    r_off, j_off, c_off = _run(elf, monkeypatch, vlen, False)
    assert r_off.exit_status == 0 and len(r_off.stdout) == 24 * len(CASES)
    assert r_on.stdout == r_off.stdout
    assert j_on == j_off
    assert (c_on.vector_insns, c_on.vector_cycles) == (c_off.vector_insns, c_off.vector_cycles)
    assert c_off.native_vset == 0
    # every case's vsetvl word ran in C except the keep-vl ones right after a Python entry
    words = sum(len(w) for _l, w, *_ in CASES)
    assert words * 0.6 < c_on.native_vset <= words + 1


@needs_native
def test_native_results_are_the_rules(elf, monkeypatch):
    """The values themselves, from the rules (not only "the same as Python"), at VLEN 256."""
    r, _, _ = _run(elf, monkeypatch, 256, True)
    import struct
    vals = struct.unpack(f"<{3 * len(CASES)}Q", r.stdout)
    checked = 0
    for i, (label, words, avl, vt, _d) in enumerate(CASES):
        w = words[-1]
        rd, rs1 = (w >> 7) & 31, (w >> 15) & 31
        if w >> 31 == 0:
            raw = (w >> 20) & 0x7FF
        elif w >> 30 == 3:
            raw = (w >> 20) & 0x3FF
        else:
            raw = vt
        vmax = _vlmax(raw, 256)
        got_rd, got_vl, got_vtype = vals[3 * i:3 * i + 3]
        keep = rd == 0 and rs1 == 0 and w >> 30 != 3
        if keep and len(words) == 2:
            # after the first word: vl = min(avl, its VLMAX), then keep it if VLMAX is the same
            p = words[0]
            praw = (p >> 20) & 0x7FF if p >> 31 == 0 else vt       # (the vsetvl reads a1)
            pmax = _vlmax(praw, 256)
            pvl = min(avl, pmax)
            same = pmax and vmax == pmax
            assert (got_vl, got_vtype) == ((pvl, raw) if same else (0, 1 << 63)), label
            checked += 1
        elif not keep:
            if w >> 30 == 3:
                want = min(rs1, vmax)
            elif rs1:
                want = min(avl, vmax)
            else:
                want = vmax
            assert got_vl == (want if vmax else 0), label
            assert got_vtype == (raw if vmax else 1 << 63), label
            assert got_rd == (got_vl if rd else 0x5A5A), label
            checked += 1
    assert checked > 0.75 * len(CASES)     # (a lone keep-vl word depends on the case before)


@needs_native
@pytest.mark.parametrize("vsetvl_cost", [1, 7])
def test_native_charges_the_cost_table(elf, monkeypatch, vsetvl_cost):
    """A user's vsetvl cost (--cost rvv.vsetvl.base=N) is charged the same on both paths, with a
    tick period that puts ticks among the vsetvli (the deadline moves by the extra cycles)."""
    opts = {"costs": {"rvv.vsetvl.base": vsetvl_cost}, "hz": 64000}
    r_on, j_on, c_on = _run(elf, monkeypatch, 512, True, **opts)
    r_off, j_off, c_off = _run(elf, monkeypatch, 512, False, **opts)
    assert j_on == j_off and r_on.stdout == r_off.stdout
    assert c_on.native_vset > 100
    assert c_on.extra_user == c_off.extra_user
    if vsetvl_cost > 1:
        assert c_on.extra_user >= c_on.native_vset * (vsetvl_cost - 1)


@needs_native
def test_exact_counting_turns_the_native_path_off(elf, monkeypatch):
    monkeypatch.setenv("EMUKERN_EXACT_COUNT", "1")
    r, j, c = _run(elf, monkeypatch, 256, True)
    monkeypatch.setenv("EMUKERN_EXACT_COUNT", "0")
    r2, j2, c2 = _run(elf, monkeypatch, 256, True)
    assert c.counter.exact and c.native_vset == 0
    assert c2.native_vset > 0
    assert r.stdout == r2.stdout and j == j2


def test_pure_python_still_runs(elf, monkeypatch):
    """EMUKERN_PURE_PYTHON (no C library): the Python path, the same results."""
    import emukern.machine.counter as counter
    ref, jref, _ = _run(elf, monkeypatch, 128, False)
    monkeypatch.setenv("EMUKERN_PURE_PYTHON", "1")
    monkeypatch.setattr(counter, "_native_lib", None)
    monkeypatch.setattr(counter, "_native_error", None)
    r, j, c = _run(elf, monkeypatch, 128, True)
    assert c.counter.kind == "python" and c.native_vset == 0
    assert r.stdout == ref.stdout and j == jref


@needs_native
def test_first_use_trap_still_reaches_the_kernel(elf, monkeypatch):
    """VS Off: the first vsetvli is the kernel's first-use trap (riscv_v_first_use_handler), on
    the native path as on the Python one; the later ones never reach the kernel."""
    _r, _j, c = _run(elf, monkeypatch, 256, True)
    m_logs = []
    for native in (True, False):
        monkeypatch.setenv("EMUKERN_NATIVE_VSET", "1" if native else "0")
        m = Machine(arch="riscv64", vlen=256)
        m.load(elf)
        m.run()
        m_logs.append([(t.kind, t.pc, t.handler, t.decision) for t in m.kernel.trap_log])
    assert m_logs[0] == m_logs[1]
    first = [t for t in m_logs[0] if "first_use" in t[2]]
    assert len(first) == 1
    assert c.native_vset > 0


@needs_native
def test_reserved_opcfg_is_sigill_on_both_paths(run_guest, monkeypatch, tmp_path):
    """bit 31 set, bits 30:25 non-zero: reserved; the C hook leaves it to Python (SIGILL)."""
    src = tmp_path / "reserved.S"
    src.write_text("# arch: riscv64\n.globl _start\n_start:\nvsetvli t0, zero, e8, m1, ta, ma\n"
                   "vsetvli t0, zero, e16, m1, ta, ma\n.4byte 0x82a57057\nli a7, 94\necall\n")
    res = []
    for native in (True, False):
        monkeypatch.setenv("EMUKERN_NATIVE_VSET", "1" if native else "0")
        r, _m = run_guest(src)
        res.append((r.signal, json.dumps(r.to_json(), sort_keys=True)))
    assert res[0] == res[1] and res[0][0] == 4


QEMU = shutil.which("qemu-riscv64")


@pytest.mark.qemu
@pytest.mark.skipif(QEMU is None, reason="qemu-riscv64 is not installed")
@pytest.mark.parametrize("vlen", (128, 512))
def test_native_forms_match_qemu(elf, monkeypatch, vlen):
    r, _, c = _run(elf, monkeypatch, vlen, True)
    assert c.native_vset > 0
    q = subprocess.run(qemu_cmd("riscv64", vlen) + [str(elf)], capture_output=True, timeout=60)
    assert q.returncode == 0
    import struct
    mine = struct.unpack(f"<{3 * len(CASES)}Q", r.stdout)
    theirs = struct.unpack(f"<{3 * len(CASES)}Q", q.stdout)
    compared = 0
    for i, (label, _w, _a, _v, defined) in enumerate(CASES):
        if defined:
            assert mine[3 * i:3 * i + 3] == theirs[3 * i:3 * i + 3], label
            compared += 1
    assert compared > 300
