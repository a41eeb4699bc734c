"""Differential cases for the second half of the SVE2 unit (perm2, fp2, mem2): the same harness
as sve2_guest (random z0-z7/p0-p7/x2-x3 per case, z0-z7/p0-p7/NZCV compared), plus a 4 KiB
data area ``membuf`` (x4 points at it in memory cases) for the loads and stores."""
from __future__ import annotations

import random

import sve2_guest

SIZES = ("b", "h", "s", "d")
MEMBUF = 4096


def perm_cases() -> list[tuple[str, str]]:
    c: list[tuple[str, str]] = []
    for op in ("match", "nmatch"):
        for t in ("b", "h"):
            c.append((f"{op}.{t}", f"{op} p0.{t}, p1/z, z1.{t}, z2.{t}"))
            # few distinct values so that matches happen
            c.append((f"{op}.{t}.hits", f"and z1.{t}, z1.{t}, #3\n    and z2.{t}, z2.{t}, #3\n"
                                       f"    {op} p3.{t}, p2/z, z1.{t}, z2.{t}"))
            c.append((f"{op}.{t}.all", f"ptrue p4.{t}\n    and z3.{t}, z3.{t}, #7\n"
                                      f"    {op} p5.{t}, p4/z, z3.{t}, z3.{t}"))
    for t in ("s", "d"):
        c.append((f"histcnt.{t}", f"histcnt z0.{t}, p1/z, z1.{t}, z2.{t}"))
        c.append((f"histcnt.{t}.hits", f"and z1.{t}, z1.{t}, #3\n    and z2.{t}, z2.{t}, #3\n"
                                       f"    histcnt z0.{t}, p1/z, z1.{t}, z2.{t}"))
    c.append(("histseg", "histseg z0.b, z1.b, z2.b"))
    c.append(("histseg.hits", "and z1.b, z1.b, #3\n    and z2.b, z2.b, #3\n    histseg z0.b, z1.b, z2.b"))
    for t in SIZES:
        c.append((f"tbl2.{t}", f"tbl z0.{t}, {{z1.{t}, z2.{t}}}, z3.{t}"))
        c.append((f"tbl2.{t}.inrange", f"and z3.{t}, z3.{t}, #7\n    tbl z0.{t}, {{z1.{t}, z2.{t}}}, z3.{t}"))
        c.append((f"tbl2.{t}.wrap", f"and z0.{t}, z0.{t}, #15\n    tbl z4.{t}, {{z31.{t}, z0.{t}}}, z0.{t}"))
        c.append((f"tbx.{t}", f"tbx z0.{t}, z1.{t}, z3.{t}"))
        c.append((f"tbx.{t}.inrange", f"and z3.{t}, z3.{t}, #15\n    tbx z0.{t}, z1.{t}, z3.{t}"))
    for imm in (0, 1, 5, 15, 16, 17, 31, 32, 63, 64, 100, 255):
        c.append((f"ext2.{imm}", f"ext z0.b, {{z1.b, z2.b}}, #{imm}"))
    c.append(("ext2.wrap", "ext z5.b, {z31.b, z0.b}, #3"))
    for t in SIZES:
        c.append((f"splice2.{t}", f"splice z0.{t}, p1, {{z1.{t}, z2.{t}}}"))
        c.append((f"splice2.{t}.none", f"pfalse p6.b\n    splice z0.{t}, p6, {{z1.{t}, z2.{t}}}"))
        c.append((f"splice2.{t}.all", f"ptrue p6.{t}\n    splice z0.{t}, p6, {{z1.{t}, z2.{t}}}"))
    for op in ("whilewr", "whilerw"):
        for t in SIZES:
            c.append((f"{op}.{t}", f"{op} p1.{t}, x2, x3"))
            for a, b in ((100, 100), (100, 103), (103, 100), (100, 116), (116, 100), (0, 9), (9, 0),
                         (100, 4000), (100, 99), (1000, 1024)):
                c.append((f"{op}.{t}.{a}.{b}", f"mov x2, #{a}\n    mov x3, #{b}\n    {op} p2.{t}, x2, x3"))
        c.append((f"{op}.zr", f"mov x2, #40\n    {op} p4.b, x2, xzr"))
    c.append(("chain.perm2", "histseg z0.b, z1.b, z2.b\n    match p3.b, p1/z, z0.b, z2.b\n"
                             "    tbl z4.b, {z0.b, z1.b}, z2.b\n    ext z5.b, {z3.b, z4.b}, #7"))
    return c


def cases() -> list[tuple[str, str]]:
    return perm_cases()


def guest_source(case_list: list[tuple[str, str]], seed: int = 2) -> str:
    """sve2_guest's program with ``membuf`` appended (random bytes, 64-byte aligned)."""
    data = random.Random(seed + 1000).randbytes(MEMBUF)
    return sve2_guest.guest_source(case_list, seed) + (
        "\n.data\n.balign 64\nmembuf: .byte " + ",".join(f"{b:#04x}" for b in data) + "\n")
