"""Differential tests against qemu-riscv64 for the instruction groups the upstream-successors
issue added to the RVV unit: widening/narrowing arithmetic, the fixed-point group, multiply-add,
add-with-carry, vsext/vzext, gathers and compress, vmsbf/vmsif/vmsof/viota, widening reductions,
indexed and segment loads/stores.

Each case is a generated static ELF: for several vtypes (SEW 8..64, LMUL 1/2..8, AVL below,
at and above VLMAX) every instruction of a group runs unmasked and masked (v0 random) on random
register contents, and after each one the destination group (and vxsat, for fixed-point) is
stored to a result area; the program then writes all registers, CSRs and its 64 KiB data area
to stdout.  emukern and ``qemu-riscv64 -cpu rv64,v=true,vlen=N`` must print identical bytes, at
VLEN 128 and 256.  Combinations that are illegal for a vtype (EEW > ELEN, EMUL out of range)
are left out by the generator; those SIGILL paths are checked in test_rvv_ext_rules.py.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from test_rvv_elf_diff import CSR_DUMP, HARNESS, XINIT, _describe, _qemu, pytestmark  # noqa: F401

from emukern.api import Machine
from emukern.loader.asm import assemble

VLENS = (128, 256)
SRC = 8192             # loads read mem[0, SRC)
STORES = 8192          # stores write mem[SRC, SRC + STORES)
RESULTS = 49152        # result dumps go to mem[SRC + STORES, ...)
MEMSZ = SRC + STORES + RESULTS
LMULS = {"mf8": -3, "mf4": -2, "mf2": -1, "m1": 0, "m2": 1, "m4": 2, "m8": 3}
# (SEW, LMUL, AVL register, vxrm): a7 = 40, a4 = 17, a0 = 3, zero = VLMAX
CONFIGS = [(8, "m1", "a7", 0), (16, "mf2", "a4", 1), (32, "m2", "zero", 2), (8, "m4", "a7", 3),
           (64, "m1", "a0", 0), (16, "m8", "a4", 1), (32, "mf2", "a7", 2), (8, "mf4", "zero", 3)]

# name template -> (dest EEW rel, vs2 rel, vs1 rel or None, masked forms allowed)
# {x} is a scalar register, {i} a signed immediate, {u} an unsigned one
ARITH: dict[str, list[tuple[str, int, int, int | None]]] = {
    "widen": [
        ("vwaddu.vv", 1, 0, 0), ("vwadd.vx", 1, 0, None), ("vwsubu.vx", 1, 0, None),
        ("vwsub.vv", 1, 0, 0), ("vwaddu.wv", 1, 1, 0), ("vwadd.wx", 1, 1, None),
        ("vwsubu.wx", 1, 1, None), ("vwsub.wv", 1, 1, 0), ("vwmulu.vv", 1, 0, 0),
        ("vwmulu.vx", 1, 0, None), ("vwmulsu.vx", 1, 0, None), ("vwmulsu.vv", 1, 0, 0),
        ("vwmul.vv", 1, 0, 0), ("vwmul.vx", 1, 0, None), ("vwadd.vv", 1, 0, 0),
        ("vwaddu.vx", 1, 0, None), ("vwsubu.vv", 1, 0, 0), ("vwsub.vx", 1, 0, None),
        ("vwaddu.wx", 1, 1, None), ("vwadd.wv", 1, 1, 0), ("vwsubu.wv", 1, 1, 0),
        ("vwsub.wx", 1, 1, None)],
    "wmacc": [
        ("vwmaccu.vv", 1, 0, 0), ("vwmaccu.vx", 1, 0, None), ("vwmacc.vv", 1, 0, 0),
        ("vwmacc.vx", 1, 0, None), ("vwmaccsu.vv", 1, 0, 0), ("vwmaccsu.vx", 1, 0, None),
        ("vwmaccus.vx", 1, 0, None)],
    "narrow": [
        ("vnsrl.wv", 0, 1, 0), ("vnsrl.wx", 0, 1, None), ("vnsrl.wi", 0, 1, None),
        ("vnsra.wv", 0, 1, 0), ("vnsra.wx", 0, 1, None), ("vnsra.wi", 0, 1, None),
        ("vnclipu.wv", 0, 1, 0), ("vnclipu.wx", 0, 1, None), ("vnclipu.wi", 0, 1, None),
        ("vnclip.wv", 0, 1, 0), ("vnclip.wx", 0, 1, None), ("vnclip.wi", 0, 1, None)],
    "fixed": [
        ("vsaddu.vv", 0, 0, 0), ("vsaddu.vx", 0, 0, None), ("vsaddu.vi", 0, 0, None),
        ("vsadd.vv", 0, 0, 0), ("vsadd.vx", 0, 0, None), ("vsadd.vi", 0, 0, None),
        ("vssubu.vv", 0, 0, 0), ("vssubu.vx", 0, 0, None), ("vssub.vv", 0, 0, 0),
        ("vssub.vx", 0, 0, None), ("vaaddu.vv", 0, 0, 0), ("vaaddu.vx", 0, 0, None),
        ("vaadd.vv", 0, 0, 0), ("vaadd.vx", 0, 0, None), ("vasubu.vv", 0, 0, 0),
        ("vasubu.vx", 0, 0, None), ("vasub.vv", 0, 0, 0), ("vasub.vx", 0, 0, None),
        ("vsmul.vv", 0, 0, 0), ("vsmul.vx", 0, 0, None), ("vssrl.vv", 0, 0, 0),
        ("vssrl.vx", 0, 0, None), ("vssrl.vi", 0, 0, None), ("vssra.vv", 0, 0, 0),
        ("vssra.vx", 0, 0, None), ("vssra.vi", 0, 0, None)],
    "madd": [
        ("vmacc.vv", 0, 0, 0), ("vmacc.vx", 0, 0, None), ("vnmsac.vv", 0, 0, 0),
        ("vnmsac.vx", 0, 0, None), ("vmadd.vv", 0, 0, 0), ("vmadd.vx", 0, 0, None),
        ("vnmsub.vv", 0, 0, 0), ("vnmsub.vx", 0, 0, None)],
    "ext": [
        ("vzext.vf2", 0, -1, None), ("vsext.vf2", 0, -1, None), ("vzext.vf4", 0, -2, None),
        ("vsext.vf4", 0, -2, None), ("vzext.vf8", 0, -3, None), ("vsext.vf8", 0, -3, None)],
    "gather": [
        ("vrgather.vv", 0, 0, 0), ("vrgather.vx", 0, 0, None), ("vrgather.vi", 0, 0, None),
        ("vrgatherei16.vv", 0, 0, 99)],
}
SCALARS = ["a0", "a1", "a4", "a5", "t3", "t4", "t5", "t6", "a3", "a7"]


def _fits(sew: int, lmul: int, rel: int) -> bool:
    eew = sew << rel if rel >= 0 else sew >> -rel
    return 8 <= eew <= 64 and -3 <= lmul + rel <= 3


def _dump(lines: list[str], reg: int, emul: int) -> int:
    """Store register group ``reg`` (2**emul registers, at least one) at s3; bytes used at
    VLEN=256 (the budget is counted for the larger VLEN)."""
    g = 1 << max(emul, 0)
    lines += [f"vs{g}r.v v{reg}, (s3)", "csrr t2, vlenb", f"li t1, {g}", "mul t2, t2, t1",
              "add s3, s3, t2"]
    return g * 32


def _arith_insn(name: str, rng: random.Random, masked: bool, vs1rel: int | None) -> str:
    m = ", v0.t" if masked else ""
    base, sfx = name.split(".")
    if base in ("vmacc", "vnmsac", "vmadd", "vnmsub") or base.startswith("vwmacc"):
        s1 = "v24" if sfx == "vv" else rng.choice(SCALARS)
        return f"{name} v8, {s1}, v16{m}"
    if sfx.startswith("vf"):
        return f"{name} v8, v16{m}"
    if sfx in ("vv", "wv"):
        return f"{name} v8, v16, v24{m}"
    if sfx in ("vx", "wx"):
        return f"{name} v8, v16, {rng.choice(SCALARS)}{m}"
    if base in ("vsaddu", "vsadd"):
        return f"{name} v8, v16, {rng.randint(-16, 15)}{m}"
    return f"{name} v8, v16, {rng.randint(0, 31)}{m}"


def _arith_bodies(group: str) -> list[str]:
    rng = random.Random(group)
    bodies: list[str] = []
    lines: list[str] = []
    used = 0
    for sew, lm, avl, rm in CONFIGS:
        lmul = LMULS[lm]
        cfg = [f"vsetvli t0, {avl}, e{sew}, {lm}, tu, mu", f"csrwi vxrm, {rm}"]
        body: list[str] = []
        size = 0
        for name, drel, s2rel, s1rel in ARITH[group]:
            rels = [drel, s2rel]
            if s1rel == 99:            # vrgatherei16: index EEW is 16
                rels.append((16 // sew).bit_length() - 1 if sew <= 16 else -((sew // 16).bit_length() - 1))
            elif s1rel is not None:
                rels.append(s1rel)
            if not all(_fits(sew, lmul, r) for r in rels):
                continue
            for masked in (False, True):
                body.append(_arith_insn(name, rng, masked, s1rel))
                size += _dump(body, 8, lmul + drel)
                if group == "fixed":
                    body += ["csrr t2, vxsat", "sd t2, 0(s3)", "addi s3, s3, 8", "csrwi vxsat, 0"]
                    size += 8
        if not body:
            continue
        if used + size > RESULTS - 64:
            bodies.append("\n".join(lines))
            lines, used = [], 0
        lines += cfg + body
        used += size
    if lines:
        bodies.append("\n".join(lines))
    return bodies


def _special_bodies() -> dict[str, list[str]]:
    """Mask-destination and mask-source groups: carry, compress, vmsbf & co., widening sums."""
    out: dict[str, list[str]] = {}
    rng = random.Random("special")
    carry: list[str] = []
    unary: list[str] = []
    for sew, lm, avl, rm in CONFIGS:
        lmul = LMULS[lm]
        cfg = [f"vsetvli t0, {avl}, e{sew}, {lm}, tu, mu"]
        c = list(cfg)
        for name in ("vadc.vvm v8, v16, v24, v0", "vadc.vxm v8, v16, {x}, v0",
                     "vadc.vim v8, v16, {i}, v0", "vsbc.vvm v8, v16, v24, v0",
                     "vsbc.vxm v8, v16, {x}, v0"):
            c.append(name.format(x=rng.choice(SCALARS), i=rng.randint(-16, 15)))
            _dump(c, 8, lmul)
        for name in ("vmadc.vvm v4, v16, v24, v0", "vmadc.vxm v4, v16, {x}, v0",
                     "vmadc.vim v4, v16, {i}, v0", "vmadc.vv v4, v16, v24",
                     "vmadc.vx v4, v16, {x}", "vmadc.vi v4, v16, {i}",
                     "vmsbc.vvm v4, v16, v24, v0", "vmsbc.vxm v4, v16, {x}, v0",
                     "vmsbc.vv v4, v16, v24", "vmsbc.vx v4, v16, {x}"):
            c.append(name.format(x=rng.choice(SCALARS), i=rng.randint(-16, 15)))
            _dump(c, 4, 0)
        carry += c
        u = list(cfg)
        # sparse masks so that the first set bit moves around
        u += ["vmand.mm v5, v16, v24", "vmand.mm v5, v5, v17", "vmand.mm v6, v5, v25",
              "vmand.mm v6, v6, v18"]
        for src in ("v5", "v6"):
            for nm in ("vmsbf.m", "vmsif.m", "vmsof.m"):
                for m in ("", ", v0.t"):
                    u.append(f"{nm} v4, {src}{m}")
                    _dump(u, 4, 0)
            for m in ("", ", v0.t"):
                u.append(f"viota.m v8, {src}{m}")
                _dump(u, 8, lmul)
            u.append(f"vcompress.vm v8, v16, {src}")
            _dump(u, 8, lmul)
        if sew < 64:
            for nm in ("vwredsumu.vs", "vwredsum.vs"):
                for m in ("", ", v0.t"):
                    u.append(f"{nm} v4, v16, v24{m}")
                    _dump(u, 4, 0)
        unary += u
    out["carry"] = ["\n".join(carry)]
    out["mask_unary"] = ["\n".join(unary)]
    return out


def _mem_bodies() -> dict[str, list[str]]:
    """Indexed and segment accesses: loads from mem[0, 8K), stores to mem[8K, 16K)."""
    rng = random.Random("mem")
    idx: list[str] = []          # one body per vtype: the dumps of all of them would not fit
    seg: list[str] = []
    for sew, lm, avl, rm in CONFIGS:
        lmul = LMULS[lm]
        cfg = [f"vsetvli t0, {avl}, e{sew}, {lm}, tu, mu"]
        b = list(cfg)
        for ieew in (8, 16, 32, 64):
            irel = (ieew // sew).bit_length() - 1 if ieew >= sew else -((sew // ieew).bit_length() - 1)
            if not -3 <= lmul + irel <= 3:
                continue
            b.append(f"la t1, idx{ieew}")
            b.append("vl8re8.v v24, (t1)")
            for kind in ("vluxei", "vloxei"):
                for m in ("", ", v0.t"):
                    b.append(f"{kind}{ieew}.v v8, (s1), v24{m}")
                    _dump(b, 8, lmul)
            for kind in ("vsuxei", "vsoxei"):
                for m in ("", ", v0.t"):
                    b.append(f"{kind}{ieew}.v v{8 if m else 16}, (s4), v24{m}")
            nf = rng.choice([2, 3, 4])
            if nf << max(lmul, 0) <= 8:
                for m in ("", ", v0.t"):
                    b.append(f"vluxseg{nf}ei{ieew}.v v8, (s1), v24{m}")
                    _dump(b, 8, 3)
                    b.append(f"vsoxseg{nf}ei{ieew}.v v8, (s4), v24{m}")
        idx.append("\n".join(b))
        s = list(cfg)
        for eew in (8, 16, 32, 64):
            erel = (eew // sew).bit_length() - 1 if eew >= sew else -((sew // eew).bit_length() - 1)
            emul = lmul + erel
            if not -3 <= emul <= 3:
                continue
            for nf in range(2, 9):
                if nf << max(emul, 0) > 8:
                    continue
                regs = (nf << max(emul, 0)) - 1        # dump the smallest whole-register group
                dl = regs.bit_length()                 # holding all nf fields
                m = rng.choice(["", ", v0.t"])
                off = rng.randint(0, 64)
                stride = rng.choice([nf * eew // 8, nf * eew // 8 + 3, -(nf * eew // 8), 0])
                s += [f"addi t1, s1, {off}", f"vlseg{nf}e{eew}.v v8, (t1){m}"]
                _dump(s, 8, dl)
                s += [f"addi t1, s4, {off}", f"vsseg{nf}e{eew}.v v8, (t1){m}"]
                s += [f"li t1, {off + 4096}", "add t1, t1, s1", f"li t2, {stride}",
                      f"vlsseg{nf}e{eew}.v v8, (t1), t2{m}"]
                _dump(s, 8, dl)
                s += [f"li t1, {off + 4096}", "add t1, t1, s4", f"vssseg{nf}e{eew}.v v8, (t1), t2{m}"]
                s += [f"addi t1, s1, {off + 128}", f"vlseg{nf}e{eew}ff.v v8, (t1){m}",
                      "csrr t2, vl", "sd t2, 0(s3)", "addi s3, s3, 8"]
                _dump(s, 8, dl)
        seg.append("\n".join(s))
    return {"indexed": idx, "segment": seg}


def _cases() -> dict[str, str]:
    out: dict[str, str] = {}
    for g in ARITH:
        for k, b in enumerate(_arith_bodies(g)):
            out[f"{g}{k}"] = b
    for d in (_special_bodies(), _mem_bodies()):
        for g, bodies in d.items():
            for k, b in enumerate(bodies):
                out[f"{g}{k}"] = b
    return out


CASES = _cases()


def _program(body: str, vlen: int, seed: str) -> str:
    vlenb = vlen // 8
    rng = random.Random(f"{seed}/{vlen}")
    pool = [0, 1, 0xFF, 0x80, 0x7F]
    vin = bytes(rng.choice(pool) if rng.random() < 0.2 else rng.getrandbits(8)
                for _ in range(32 * vlenb))
    src = bytes(rng.getrandbits(8) for _ in range(SRC))
    out_size = 32 * 8 + 8 * 8 + 32 * vlenb
    lines = [".globl _start", "_start:", "  la s0, vin"]
    for g in range(4):
        lines += [f"  vl8re8.v v{8 * g}, (s0)", f"  addi s0, s0, {8 * vlenb}"]
    lines += ["  li t0, 1", "  slli t0, t0, 63", "  vsetvl zero, zero, t0"]
    lines += [f"  li x{r}, 0" for r in range(1, 32) if r not in HARNESS]
    lines += [f"  li x{r}, {v}" for r, v in XINIT.items()]
    lines += ["  la s1, mem", f"  li s4, {SRC}", "  add s4, s4, s1",
              f"  li s3, {SRC + STORES}", "  add s3, s3, s1"]
    lines += ["  " + ln.strip() for ln in body.splitlines() if ln.strip()]
    lines += ["  la s2, out"]
    lines += [f"  sd x{r}, {8 * r}(s2)" for r in range(1, 32) if r not in HARNESS]
    for i, c in enumerate(CSR_DUMP):
        lines += [f"  csrr t0, {c}", f"  sd t0, {256 + 8 * i}(s2)"]
    lines += ["  addi s0, s2, 320"]
    for g in range(4):
        lines += [f"  vs8r.v v{8 * g}, (s0)", f"  addi s0, s0, {8 * vlenb}"]
    lines += ["  li a0, 1", "  mv a1, s2", f"  li a2, {out_size}", "  li a7, 64", "  ecall",
              "  li a0, 1", "  la a1, mem", f"  li a2, {MEMSZ}", "  li a7, 64", "  ecall",
              "  li a0, 0", "  li a7, 94", "  ecall", ".data", ".balign 4096", "mem:"]
    lines += [f"  .byte {', '.join(str(b) for b in src[i:i + 32])}" for i in range(0, SRC, 32)]
    lines += [f"  .space {STORES + RESULTS}"]
    # index tables (8 registers' worth at VLEN 256 each): offsets inside the 4 KiB below
    for ieew in (8, 16, 32, 64):
        n = 256 // (ieew // 8)
        top = 255 if ieew == 8 else 4032
        vals = [rng.randrange(0, top) for _ in range(n)]
        lines += [".balign 64", f"idx{ieew}:"]
        d = {8: ".byte", 16: ".half", 32: ".word", 64: ".dword"}[ieew]
        lines += [f"  {d} {', '.join(str(v) for v in vals[i:i + 16])}" for i in range(0, n, 16)]
    lines += [".balign 64", "vin:"]
    lines += [f"  .byte {', '.join(str(b) for b in vin[i:i + 32])}" for i in range(0, len(vin), 32)]
    lines += [".balign 64", "out:", f"  .space {out_size}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_ext_against_qemu(case: str, vlen: int, tmp_path: Path) -> None:
    src = tmp_path / f"rvv_ext_{case}.S"
    elf = assemble(src, "riscv64", text=_program(CASES[case], vlen, case))
    q = _qemu(elf, vlen)
    assert q.returncode == 0, f"qemu: status {q.returncode} {q.stderr[-500:]!r}"
    r = Machine(vlen=vlen).load(elf).run()
    assert r.exit_status == 0, f"emukern: exit status {r.exit_status}"
    if r.stdout != q.stdout:
        pytest.fail(f"{case} at VLEN={vlen}: first difference in "
                    f"{_describe(r.stdout, q.stdout, vlen)}")


def test_ext_bodies_cover_the_new_groups() -> None:
    """Every instruction name the issue added appears in some generated body."""
    text = "\n".join(CASES.values())
    names = {n for g in ARITH.values() for n, *_ in g}
    names |= {"vadc.vvm", "vmadc.vi", "vmsbc.vxm", "vmsbf.m", "vmsif.m", "vmsof.m", "viota.m",
              "vcompress.vm", "vwredsumu.vs", "vwredsum.vs", "vluxei8.v", "vloxei64.v",
              "vsuxei16.v", "vsoxei32.v", "vlseg3e8.v", "vsseg3e8.v", "vlsseg2e16.v",
              "vssseg8e8.v", "vlseg2e64ff.v"}
    missing = sorted(n for n in names if n + " " not in text)
    assert not missing, missing
    assert shutil.which("llvm-mc")
