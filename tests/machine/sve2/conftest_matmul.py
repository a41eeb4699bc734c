"""Helpers for the matrix-multiply / BFloat16 tests: the instruction variants, a qemu-aarch64
batch guest that runs many cases of them in one process, and random operand generators.

The guest is one static ELF holding every variant in a 32-byte slot (load Zd, Zn, Zm and Pg
from the case record, execute the instruction, store Zd).  It reads all cases from stdin:
a 16-byte header (case count) and then per case a record of
``fpcr:u64, variant:u64, Zd[VL], Zn[VL], Zm[VL], Pg[VL/8] padded to VL``; per case it sets
FPCR, clears FPSR, runs the variant's slot and appends ``Zd[VL], FPSR:u64, pad:u64`` to its
output, which it writes to stdout at the end (after a 16-byte header: VL in bytes and the
count).  Instruction words come from the same llvm-mc run, so the decoder is checked against
LLVM's encoder too.
"""
from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from emukern.loader.asm import find_tools

MATTR = "-mattr=+sve,+i8mm,+f32mm,+f64mm,+bf16"


@dataclass(frozen=True)
class Variant:
    text: str          # the instruction as assembled
    d: int
    n: int
    m: int             # for BFCVT/BFCVTNT: unused source, loaded anyway
    pg: int
    kind: str          # operand generator: "int8", "f32", "f64", "bf16", "f32src"

    @property
    def mnemonic(self) -> str:
        return self.text.split()[0]


def _variants() -> list[Variant]:
    v: list[Variant] = []
    for mn in ("smmla", "ummla", "usmmla"):
        v.append(Variant(f"{mn} z5.s, z17.b, z3.b", 5, 17, 3, 0, "int8"))
    v.append(Variant("smmla z9.s, z9.b, z9.b", 9, 9, 9, 0, "int8"))           # all aliased
    v.append(Variant("usdot z30.s, z1.b, z31.b", 30, 1, 31, 0, "int8"))
    for mn in ("usdot", "sudot"):
        for i in range(4):
            v.append(Variant(f"{mn} z{8 + i}.s, z{20 + i}.b, z{i + 4}.b[{i}]", 8 + i, 20 + i,
                             i + 4, 0, "int8"))
    v.append(Variant("fmmla z2.s, z10.s, z18.s", 2, 10, 18, 0, "f32"))
    v.append(Variant("fmmla z7.s, z7.s, z19.s", 7, 7, 19, 0, "f32"))           # Zda = Zn
    v.append(Variant("fmmla z12.d, z13.d, z14.d", 12, 13, 14, 0, "f64"))
    v.append(Variant("bfcvt z3.h, p1/m, z25.s", 3, 25, 26, 1, "f32src"))
    v.append(Variant("bfcvt z4.h, p7/m, z4.s", 4, 4, 26, 7, "f32src"))         # Zd = Zn
    v.append(Variant("bfcvtnt z6.h, p2/m, z11.s", 6, 11, 12, 2, "f32src"))
    v.append(Variant("bfdot z15.s, z16.h, z29.h", 15, 16, 29, 0, "bf16"))
    for i in range(4):
        v.append(Variant(f"bfdot z{16 + i}.s, z{24 + i}.h, z{7 - i}.h[{i}]", 16 + i, 24 + i,
                         7 - i, 0, "bf16"))
    v.append(Variant("bfmmla z21.s, z22.h, z23.h", 21, 22, 23, 0, "bf16"))
    v.append(Variant("bfmlalb z1.s, z2.h, z3.h", 1, 2, 3, 0, "bf16"))
    v.append(Variant("bfmlalt z27.s, z28.h, z0.h", 27, 28, 0, 0, "bf16"))
    for mn in ("bfmlalb", "bfmlalt"):
        for i in range(8):
            v.append(Variant(f"{mn} z{10 + i}.s, z{20 + i}.h, z{i}.h[{i}]", 10 + i, 20 + i, i,
                             0, "bf16"))
    return v


VARIANTS: list[Variant] = _variants()

_GUEST = """\
    .text
    .global _start
_start:
    adrp x19, inbuf
    add x19, x19, :lo12:inbuf
    mov x20, x19
    ldr x25, =INBUF_SIZE
    add x25, x25, x19
1:  mov x0, #0
    mov x1, x20
    sub x2, x25, x20
    cbz x2, 2f
    mov x8, #63
    svc #0
    cmp x0, #0
    b.le 2f
    add x20, x20, x0
    b 1b
2:  ldr x21, [x19]
    add x22, x19, #16
    adrp x23, outbuf
    add x23, x23, :lo12:outbuf
    mov x24, x23
    rdvl x0, #1
    str x0, [x24], #8
    str x21, [x24], #8
    adr x26, slots
next:
    cbz x21, done
    ldr x0, [x22]
    msr fpcr, x0
    msr fpsr, xzr
    ldr x1, [x22, #8]
    add x22, x22, #16
    add x1, x26, x1, lsl #5
    br x1
back:
    mrs x0, fpsr
    stp x0, xzr, [x24], #16
    addvl x22, x22, #4
    sub x21, x21, #1
    b next
done:
    mov x20, x23
3:  mov x0, #1
    mov x1, x20
    sub x2, x24, x20
    cbz x2, 4f
    mov x8, #64
    svc #0
    cmp x0, #0
    b.le 4f
    add x20, x20, x0
    b 3b
4:  mov x0, #0
    mov x8, #93
    svc #0
    .ltorg
    .balign 32
slots:
{slots}
    .bss
    .balign 64
inbuf: .skip INBUF_SIZE
outbuf: .skip OUTBUF_SIZE
"""

INBUF_SIZE = 8 << 20
OUTBUF_SIZE = 4 << 20


def _slot(v: Variant) -> str:
    # 8 instructions = 32 bytes; the instruction under test is the 5th (offset 16).
    return "\n".join([
        "    .balign 32",
        f"    ldr z{v.d}, [x22, #0, mul vl]",
        f"    ldr z{v.n}, [x22, #1, mul vl]",
        f"    ldr z{v.m}, [x22, #2, mul vl]",
        f"    ldr p{v.pg}, [x22, #24, mul vl]",
        f"    {v.text}",
        f"    str z{v.d}, [x24]",
        "    addvl x24, x24, #1",
        "    b back",
    ])


def build_guest(workdir: Path, variants: list[Variant]) -> tuple[Path, list[int]]:
    """Assemble and link the batch guest; return its path and each variant's instruction word
    (as llvm-mc encodes the variant's text)."""
    mc, ld = find_tools()
    src = _GUEST.replace("{slots}", "\n".join(_slot(v) for v in variants))
    src = src.replace("INBUF_SIZE", str(INBUF_SIZE)).replace("OUTBUF_SIZE", str(OUTBUF_SIZE))
    s = workdir / "matmul_batch.S"
    s.write_text(src)
    obj, elf = workdir / "matmul_batch.o", workdir / "matmul_batch.elf"
    subprocess.run([mc, "-triple=aarch64", MATTR, "-filetype=obj", str(s), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    subprocess.run([ld, "-static", "-e", "_start", "--build-id=none", str(obj), "-o", str(elf)],
                   check=True, capture_output=True, text=True)
    enc = subprocess.run([mc, "-triple=aarch64", MATTR, "-show-encoding"],
                         input="\n".join(v.text for v in variants) + "\n",
                         check=True, capture_output=True, text=True).stdout
    words = [int.from_bytes(bytes(int(b, 16) for b in m.group(1).split(",")), "little")
             for m in re.finditer(r"encoding: \[([^\]]*)\]", enc)]
    assert len(words) == len(variants)
    return elf, words


def qemu_available() -> bool:
    return shutil.which("qemu-aarch64") is not None


@dataclass
class Case:
    variant: int
    fpcr: int
    zd: bytes
    zn: bytes
    zm: bytes
    pg: int


def run_qemu(elf: Path, vl: int, cases: list[Case]) -> list[tuple[bytes, int]]:
    """Run the cases under ``qemu-aarch64 -cpu max,sve<VL bits>=on`` with that VL as the
    process's vector length; (Zd, FPSR) per case."""
    parts = [struct.pack("<QQ", len(cases), 0)]
    for c in cases:
        parts += [struct.pack("<QQ", c.fpcr, c.variant), c.zd, c.zn, c.zm,
                  c.pg.to_bytes(vl // 8, "little") + bytes(vl - vl // 8)]
    data = b"".join(parts)
    assert len(data) <= INBUF_SIZE and len(cases) * (vl + 16) + 16 <= OUTBUF_SIZE
    cpu = f"max,sve{8 * vl}=on,sve-default-vector-length={vl}"
    r = subprocess.run(["qemu-aarch64", "-cpu", cpu, str(elf)], input=data,
                       capture_output=True, timeout=300)
    assert r.returncode == 0, f"qemu exit {r.returncode}: {r.stderr[-400:]!r}"
    out = r.stdout
    got_vl, count = struct.unpack_from("<QQ", out, 0)
    assert (got_vl, count) == (vl, len(cases))
    res, off = [], 16
    for _ in cases:
        zd = out[off:off + vl]
        fpsr = struct.unpack_from("<Q", out, off + vl)[0]
        res.append((zd, fpsr))
        off += vl + 16
    assert off == len(out)
    return res


# --------------------------------------------------------------------------------------------
# operands

def _rand_float_bits(rng: random.Random, e: int, f: int) -> int:
    """A value of an (e, f) binary format biased towards the interesting cases: specials,
    subnormals, both ends of the exponent range, short mantissas (exact and tie cases) and a
    narrow central range so that sums cancel and round."""
    bias = (1 << (e - 1)) - 1
    emax = (1 << e) - 1
    sign = rng.getrandbits(1)
    frac = rng.getrandbits(f)
    r = rng.random()
    if r < 0.04:
        ef, frac = 0, 0                                    # zero
    elif r < 0.08:
        ef, frac = emax, 0                                 # infinity
    elif r < 0.11:
        ef, frac = emax, frac | (1 << (f - 1))             # quiet NaN
    elif r < 0.14:
        ef, frac = emax, (frac & ((1 << (f - 1)) - 1)) or 1  # signalling NaN
    elif r < 0.22:
        ef, frac = 0, frac or 1                            # subnormal
    elif r < 0.32:
        ef = rng.randint(emax - 1 - bias // 2, emax - 1)   # large: products overflow
    elif r < 0.44:
        ef = rng.randint(1, bias // 2)                     # small: products underflow
    elif r < 0.50:
        ef, frac = bias - 1, (1 << f) - 1 - rng.getrandbits(3)  # just below 1.0
    elif r < 0.56:
        ef, frac = 1, rng.getrandbits(3)                   # just above the smallest normal:
        # with the previous case their products land just below it and round up into it
    elif r < 0.62:
        ef = rng.randint(bias - 4, bias + 4)
        frac &= ~((1 << (f - rng.randint(1, 4))) - 1) & ((1 << f) - 1)  # few mantissa bits
    else:
        ef = rng.randint(bias - 12, bias + 12)
    return (sign << (e + f)) | (ef << f) | frac


def rand_fp(rng: random.Random, kind: str) -> int:
    if kind == "f64":
        return _rand_float_bits(rng, 11, 52)
    if kind == "bf16":
        return _rand_float_bits(rng, 8, 7)
    if rng.random() < 0.25:                                # exactly representable in bf16
        return _rand_float_bits(rng, 8, 7) << 16
    if rng.random() < 0.05:                                # rounds up to the smallest normal
        return (rng.getrandbits(1) << 31) | 0x007F8000 | rng.getrandbits(15)
    if rng.random() < 0.04:                                # past the largest BFloat16
        return (rng.getrandbits(1) << 31) | 0x7F7F8000 | rng.getrandbits(15)
    if rng.random() < 0.1:                                 # BFloat16 round-half cases
        return (_rand_float_bits(rng, 8, 7) << 16) | 0x8000 | (rng.getrandbits(1) * rng.getrandbits(15))
    return _rand_float_bits(rng, 8, 23)


def rand_vector(rng: random.Random, kind: str, vl: int) -> bytes:
    if kind == "int8":
        extremes = (0, 1, 0x7F, 0x80, 0xFF)
        return bytes(rng.choice(extremes) if rng.random() < 0.3 else rng.getrandbits(8)
                     for _ in range(vl))
    esize = {"f64": 8, "bf16": 2}.get(kind, 4)
    vals = [rand_fp(rng, kind) for _ in range(vl // esize)]
    if rng.random() < 0.25:
        # Mirror pairs with opposite signs so products cancel exactly (the sign of an exact
        # zero then depends on the rounding mode).
        top = 1 << (8 * esize - 1)
        for i in range(0, len(vals) - 1, 2):
            if rng.random() < 0.5:
                vals[i + 1] = vals[i] ^ top
    return b"".join(x.to_bytes(esize, "little") for x in vals)


def rand_fpcr(rng: random.Random) -> int:
    """FPCR.DN, FZ and RMode, the fields these instructions may honour (AH/FIZ are RES0 on a
    CPU without FEAT_AFP; trap enables are not implemented by QEMU)."""
    return (rng.getrandbits(1) << 25) | (rng.getrandbits(1) << 24) | (rng.getrandbits(2) << 22)


def rand_case(rng: random.Random, vi: int, v: Variant, vl: int) -> Case:
    akind = "int8" if v.kind == "int8" else ("f64" if v.kind == "f64" else "f32")
    skind = {"f32src": "f32"}.get(v.kind, v.kind)
    zd = rand_vector(rng, akind, vl)
    zn = rand_vector(rng, skind, vl)
    zm = rand_vector(rng, skind, vl)
    if rng.random() < 0.1:
        zm = zn                                            # squares: same-sign products
    pg = rng.getrandbits(vl)
    return Case(vi, rand_fpcr(rng), zd, zn, zm, pg)
