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


MEMBASE = "adrp x4, membuf\n    add x4, x4, :lo12:membuf\n    "
READBACK = ("\n    ldr z4, [x4]\n    ldr z5, [x4, #1, mul vl]\n    ldr z6, [x4, #2, mul vl]"
            "\n    ldr z7, [x4, #3, mul vl]")


def mem_cases() -> list[tuple[str, str]]:
    """LDNT1 gathers and STNT1 scatters on membuf (valid addresses; the fault is tested apart)."""
    c: list[tuple[str, str]] = []
    loads = {"s": ("b", "h", "w", "sb", "sh"), "d": ("b", "h", "w", "d", "sb", "sh", "sw")}
    span = {"s": "0xffc", "d": "0xff8"}
    for t, kinds in loads.items():
        for k in kinds:
            c.append((f"ldnt1{k}.{t}", f"{MEMBASE}and z1.{t}, z1.{t}, #{span[t]}\n"
                                       f"    ldnt1{k} {{z0.{t}}}, p1/z, [z1.{t}, x4]"))
            c.append((f"ldnt1{k}.{t}.alias", f"{MEMBASE}and z3.{t}, z3.{t}, #{span[t]}\n"
                                             f"    ldnt1{k} {{z3.{t}}}, p2/z, [z3.{t}, x4]"))
        c.append((f"ldnt1.{t}.xzr", f"{MEMBASE}and z2.d, z2.d, #0xff8\n    dup z1.d, x4\n"
                                    f"    add z1.d, z1.d, z2.d\n    ldnt1d {{z0.d}}, p1/z, [z1.d]") if t == "d"
                 else (f"ldnt1.{t}.ptrue", f"{MEMBASE}ptrue p5.s\n    and z1.s, z1.s, #0xffc\n"
                                          f"    ldnt1w {{z0.s}}, p5/z, [z1.s, x4]"))
    small = {"s": "0x3c", "d": "0x38"}
    stores = {"s": ("b", "h", "w"), "d": ("b", "h", "w", "d")}
    for t, kinds in stores.items():
        for k in kinds:
            c.append((f"stnt1{k}.{t}", f"{MEMBASE}and z1.{t}, z1.{t}, #{small[t]}\n"
                                       f"    stnt1{k} {{z0.{t}}}, p1, [z1.{t}, x4]{READBACK}"))
        c.append((f"stnt1b.{t}.bytes", f"{MEMBASE}and z1.{t}, z1.{t}, #0x3f\n"
                                        f"    stnt1b {{z2.{t}}}, p2, [z1.{t}, x4]{READBACK}"))
    c.append(("stnt1.xzr", f"{MEMBASE}and z2.d, z2.d, #0x38\n    dup z1.d, x4\n    add z1.d, z1.d, z2.d\n"
                           f"    stnt1d {{z3.d}}, p3, [z1.d]{READBACK}"))
    c.append(("chain.mem2", f"{MEMBASE}and z1.d, z1.d, #0x38\n    stnt1d {{z0.d}}, p1, [z1.d, x4]\n"
                            f"    ldnt1sw {{z2.d}}, p2/z, [z1.d, x4]\n    ldnt1h {{z3.d}}, p3/z, [z1.d, x4]"))
    return c


def ld1ro_cases() -> list[tuple[str, str]]:
    """LD1RO (F64MM): only at VL >= 256 (UNDEFINED below)."""
    c: list[tuple[str, str]] = []
    for k, sh in (("b", 0), ("h", 1), ("w", 2), ("d", 3)):
        t = {"b": "b", "h": "h", "w": "s", "d": "d"}[k]
        for imm in (0, 32, 224, -32, -256):
            c.append((f"ld1ro{k}.imm{imm}", f"{MEMBASE}add x4, x4, #2048\n"
                                            f"    ld1ro{k} {{z0.{t}}}, p1/z, [x4, #{imm}]"))
        lsl = f", lsl #{sh}" if sh else ""
        c.append((f"ld1ro{k}.ss", f"{MEMBASE}and x3, x3, #0x3f\n    ld1ro{k} {{z0.{t}}}, p1/z, [x4, x3{lsl}]"))
        c.append((f"ld1ro{k}.ptrue", f"{MEMBASE}ptrue p6.{t}\n    mov x3, #5\n"
                                     f"    ld1ro{k} {{z1.{t}}}, p6/z, [x4, x3{lsl}]"))
    c.append(("ld1ro.sp", f"{MEMBASE}mov x9, sp\n    mov sp, x4\n    ld1rob {{z2.b}}, p1/z, [sp, #64]\n"
                          f"    mov sp, x9"))
    return c


def cases() -> list[tuple[str, str]]:
    return perm_cases() + mem_cases()


def guest_source(case_list: list[tuple[str, str]], seed: int = 2) -> str:
    """sve2_guest's program with ``membuf`` appended (random bytes, 64-byte aligned)."""
    data = random.Random(seed + 1000).randbytes(MEMBUF)
    return sve2_guest.guest_source(case_list, seed) + (
        "\n.data\n.balign 64\nmembuf: .byte " + ",".join(f"{b:#04x}" for b in data) + "\n")
