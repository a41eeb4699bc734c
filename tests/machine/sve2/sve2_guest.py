"""Build the SVE2 differential guest: every case loads the same kind of random inputs into
z0-z7 / p0-p7 / x2-x3, runs one instruction, and stores z0-z7, p0-p7 and NZCV; the guest
writes all results to stdout.  The same static ELF runs under emukern and under
``qemu-aarch64 -cpu max,sve<N>=on`` (QEMU 7.2 implements all of SVE2: a valid oracle for
instruction semantics), and the outputs are compared case by case."""
from __future__ import annotations

import random

SIZES = ("b", "h", "s", "d")
WIDE = {"h": "b", "s": "h", "d": "s"}


def cases() -> list[tuple[str, str]]:
    """(name, assembly) for every instruction and element size the unit implements."""
    c: list[tuple[str, str]] = []
    for t in SIZES:
        for op in ("sqabs", "sqneg"):
            c.append((f"{op}.{t}", f"{op} z0.{t}, p1/m, z1.{t}"))
            c.append((f"{op}.{t}.z0", f"{op} z3.{t}, p0/m, z3.{t}"))
    minint = {"b": "mov z1.b, #-128", "h": "mov z1.h, #-128, lsl #8",
              "s": "mov z1.s, #0x80000000", "d": "mov z1.d, #0x8000000000000000"}
    for t in SIZES:
        for op in ("sqabs", "sqneg"):
            c.append((f"{op}.{t}.min", f"{minint[t]}\n    {op} z0.{t}, p1/m, z1.{t}"))
    for op in ("eor3", "bcax", "bsl", "bsl1n", "bsl2n", "nbsl"):
        c.append((op, f"{op} z0.d, z0.d, z1.d, z2.d"))
        c.append((f"{op}.alias", f"{op} z4.d, z4.d, z4.d, z5.d"))
    for t, bits in (("b", 8), ("h", 16), ("s", 32), ("d", 64)):
        for sh in sorted({1, bits // 2 + 1, bits}):
            c.append((f"xar.{t}.{sh}", f"xar z0.{t}, z0.{t}, z1.{t}, #{sh}"))
    c.append(("pmul.b", "pmul z0.b, z1.b, z2.b"))
    for op in ("pmullb", "pmullt"):
        for t in ("h", "d", "q"):
            src = {"h": "b", "d": "s", "q": "d"}[t]
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{src}, z2.{src}"))
    for op in ("whilege", "whilegt", "whilehs", "whilehi"):
        for t in SIZES:
            for reg in ("x", "w"):
                c.append((f"{op}.{t}.{reg}", f"{op} p1.{t}, {reg}2, {reg}3"))
                c.append((f"{op}.{t}.{reg}.near",
                          f"mov x2, #5\n    mov x3, #1\n    {op} p2.{t}, {reg}2, {reg}3"))
                c.append((f"{op}.{t}.{reg}.wrap",
                          f"mov x2, #2\n    mov x3, #-4\n    {op} p3.{t}, {reg}2, {reg}3"))
        c.append((f"{op}.zr", f"mov x2, #40\n    {op} p4.b, x2, xzr"))
    for op in ("aese", "aesd"):
        c.append((op, f"{op} z0.b, z0.b, z1.b"))
    for op in ("aesmc", "aesimc"):
        c.append((op, f"{op} z0.b, z0.b"))
    c.append(("sm4e", "sm4e z0.s, z0.s, z1.s"))
    c.append(("sm4ekey", "sm4ekey z0.s, z1.s, z2.s"))
    c.append(("rax1", "rax1 z0.d, z1.d, z2.d"))
    for op in ("bdep", "bext", "bgrp"):
        for t in SIZES:
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{t}, z2.{t}"))
    from emukern.machine.sve2 import int_arith
    for name, *_ in [*int_arith.SATURATING, *int_arith.HALVING, *int_arith.PAIRWISE]:
        for t in SIZES:
            c.append((f"{name}.{t}", f"{name} z0.{t}, p1/m, z0.{t}, z1.{t}"))
    minmax = {"b": "mov z2.b, #-128\n    mov z3.b, #127", "h": "mov z2.h, #-128, lsl #8\n    mov z3.h, #127, lsl #8",
              "s": "mov z2.s, #0x80000000\n    mov z3.s, #0x7fffffff",
              "d": "mov z2.d, #0x8000000000000000\n    mov z3.d, #0x7fffffffffffffff"}
    for name, *_ in int_arith.SATURATING:
        for t in SIZES:
            c.append((f"{name}.{t}.edge", f"{minmax[t]}\n    {name} z2.{t}, p0/m, z2.{t}, z3.{t}\n"
                                          f"    {name} z3.{t}, p1/m, z3.{t}, z3.{t}"))
    for name, *_ in int_arith.LONG:
        for bt in "bt":
            for t in ("h", "s", "d"):
                c.append((f"{name}{bt}.{t}", f"{name}{bt} z0.{t}, z1.{WIDE[t]}, z2.{WIDE[t]}"))
    for name, *_ in int_arith.WIDE:
        for bt in "bt":
            for t in ("h", "s", "d"):
                c.append((f"{name}{bt}.{t}", f"{name}{bt} z0.{t}, z1.{t}, z2.{WIDE[t]}"))
    for name, *_ in int_arith.MUL_VECTORS:
        for t in SIZES:
            c.append((f"{name}.{t}", f"{name} z0.{t}, z1.{t}, z2.{t}"))
            c.append((f"{name}.{t}.edge", f"{minmax[t]}\n    {name} z0.{t}, z2.{t}, z2.{t}\n"
                                          f"    {name} z1.{t}, z3.{t}, z2.{t}"))
    for name, *_ in [*int_arith.LONG_MUL, *int_arith.MLA_LONG]:
        for bt in "bt":
            for t in ("h", "s", "d"):
                c.append((f"{name}{bt}.{t}", f"{name}{bt} z0.{t}, z1.{WIDE[t]}, z2.{WIDE[t]}"))
        c.append((f"{name}.edge", f"{minmax['h']}\n    {name}b z4.s, z2.h, z2.h\n    {name}t z5.s, z3.h, z2.h"))
    for op in ("ssra", "usra", "srsra", "ursra", "sri"):
        for t, bits in (("b", 8), ("h", 16), ("s", 32), ("d", 64)):
            for sh in sorted({1, bits // 2 - 1, bits}):
                c.append((f"{op}.{t}.{sh}", f"{op} z0.{t}, z1.{t}, #{sh}"))
    for t, bits in (("b", 8), ("h", 16), ("s", 32), ("d", 64)):
        for sh in sorted({0, 3, bits - 1}):
            c.append((f"sli.{t}.{sh}", f"sli z0.{t}, z1.{t}, #{sh}"))
    for op in ("eorbt", "eortb"):
        for t in SIZES:
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{t}, z2.{t}"))
    for op in ("sadalp", "uadalp"):
        for t in ("h", "s", "d"):
            c.append((f"{op}.{t}", f"{op} z0.{t}, p1/m, z1.{WIDE[t]}"))
    # runs of consecutive SVE2 words (the unit executes a run on one register copy)
    c.append(("chain.aes", "aese z0.b, z0.b, z1.b\n    aesmc z0.b, z0.b\n    aese z0.b, z0.b, z2.b\n"
                           "    aesmc z0.b, z0.b\n    aesd z3.b, z3.b, z0.b\n    aesimc z3.b, z3.b"))
    c.append(("chain.mixed", "sqabs z0.h, p1/m, z1.h\n    eor3 z0.d, z0.d, z2.d, z3.d\n"
                             "    whilehi p2.s, x2, x3\n    sqneg z4.s, p2/m, z0.s\n"
                             "    bdep z5.b, z4.b, z0.b\n    xar z6.h, z6.h, z5.h, #3\n"
                             "    pmullt z7.q, z6.d, z5.d\n    sm4e z7.s, z7.s, z4.s"))
    c.append(("chain.flags", "mov x2, #3\n    whilege p1.d, x2, xzr\n    whilegt p2.b, xzr, x2\n"
                             "    sqneg z0.d, p1/m, z1.d"))
    return c


MAX_VL = 256                # bytes
OUT_CASE = 8 * MAX_VL + 8 * (MAX_VL // 8) + 8     # stride of one case's results (at any VL)


def guest_source(case_list: list[tuple[str, str]], seed: int = 1) -> str:
    r = random.Random(seed)
    n = len(case_list)
    inp = r.randbytes(64 * n + 8 * MAX_VL + 8 * (MAX_VL // 8) + 16)
    body = []
    for i, (name, text) in enumerate(case_list):
        body.append(f"    // case {i}: {name}\n    bl load\n    {text}\n    bl store\n    add x19, x19, #64")
    data = ",".join(f"{b:#04x}" for b in inp)
    return f"""// arch: arm64
.globl _start
_start:
    adr x19, inp
    adr x20, out
    mov x21, x20
{chr(10).join(body)}
    mov x0, #1
    mov x1, x21
    sub x2, x20, x21
    mov x8, #64
    svc #0
    mov x0, #0
    mov x8, #93
    svc #0

load:
""" + "\n".join(f"    ldr z{k}, [x19, #{k}, mul vl]" for k in range(8)) + f"""
    add x9, x19, #{8 * MAX_VL}
""" + "\n".join(f"    ldr p{k}, [x9, #{k}, mul vl]" for k in range(8)) + f"""
    add x9, x9, #{8 * (MAX_VL // 8)}
    ldp x2, x3, [x9]
    msr nzcv, xzr
    ret

store:
""" + "\n".join(f"    str z{k}, [x20, #{k}, mul vl]" for k in range(8)) + f"""
    add x20, x20, #{8 * MAX_VL}
""" + "\n".join(f"    str p{k}, [x20, #{k}, mul vl]" for k in range(8)) + f"""
    add x20, x20, #{8 * (MAX_VL // 8)}
    mrs x9, nzcv
    str x9, [x20], #8
    ret

.data
.balign 16
inp: .byte {data}
.bss
.balign 16
out: .zero {OUT_CASE * n}
"""


def split(out: bytes, case_list: list[tuple[str, str]], vl_bytes: int) -> dict[str, bytes]:
    """One case's significant bytes (z0-z7 and p0-p7 at this VL, NZCV) by name."""
    res = {}
    for i, (name, _) in enumerate(case_list):
        blk = out[i * OUT_CASE:(i + 1) * OUT_CASE]
        z = blk[:8 * vl_bytes]
        p = blk[8 * MAX_VL:8 * MAX_VL + 8 * (vl_bytes // 8)]
        nz = blk[8 * MAX_VL + 8 * (MAX_VL // 8):]
        res[name] = z + p + nz
    return res
