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
    """LD1RO and the quadword permutes (F64MM): only at VL >= 256 (UNDEFINED below)."""
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
    for op in ("zip1", "zip2", "uzp1", "uzp2", "trn1", "trn2"):
        c.append((f"{op}.q", f"{op} z0.q, z1.q, z2.q"))
        c.append((f"{op}.q.alias", f"{op} z3.q, z3.q, z4.q"))
    c.append(("ld1ro.sp", f"{MEMBASE}mov x9, sp\n    mov sp, x4\n    ld1rob {{z2.b}}, p1/z, [sp, #64]\n"
                          f"    mov sp, x9"))
    return c


# special values per element size: zeros, denormals, normals around 1, the largest normals,
# infinities, quiet and signalling NaNs with payloads (both signs)
SPECIALS = {
    2: [0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF, 0x7C00,
        0xFC00, 0x7E00, 0xFE01, 0x7C01, 0xFD55, 0x4248, 0x1234, 0x0200, 0xC500],
    4: [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x3F800000, 0xBF800000,
        0x3F800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345,
        0x7F800001, 0xFFA5A5A5, 0x40490FDB, 0x33800000, 0x387FC000, 0x477FF000, 0x477FF001,
        0x38800000, 0x33000001, 0x00400000],
    8: [0x0, 0x8000000000000000, 0x1, 0x800FFFFFFFFFFFFF, 0x0010000000000000, 0x3FF0000000000000,
        0xBFF0000000000000, 0x3FF0000000000001, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
        0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0xFFF8123456789ABC,
        0x7FF0000000000001, 0xFFF5A5A5A5A5A5A5, 0x400921FB54442D18, 0x47EFFFFFE0000000,
        0x47EFFFFFF0000000, 0x3810000000000000, 0x380FFFFFFFFFFFFF, 0x36A0000000000001,
        0x3FF0000010000000, 0x3FF0000030000001],
}
FPCRS = {"": 0, ".dn": 1 << 25, ".fz": 1 << 24, ".fz16": 1 << 19, ".rp": 1 << 22, ".rm": 2 << 22,
         ".rz": 3 << 22, ".dnfz": (1 << 25) | (1 << 24) | (1 << 19)}


def specials_data(seed: int = 5) -> str:
    """spec_<es>_<k>: 256 bytes of special values mixed with random ones, in several orders."""
    rng = random.Random(seed)
    out = []
    for es, vals in SPECIALS.items():
        for k in "abc":
            n = 256 // es
            elems = [rng.choice(vals) if rng.random() < 0.7 else rng.getrandbits(8 * es) for _ in range(n)]
            data = b"".join(v.to_bytes(es, "little") for v in elems)
            out.append(f".balign 16\nspec_{es}_{k}: .byte " + ",".join(f"{b:#04x}" for b in data))
    return "\n".join(out) + "\n"


def _fp_case(body: str, fpcr: int, es: int, load_b: bool = True) -> str:
    """Load specials into z1 (and z2), set FPCR, clear FPSR, run ``body``, put FPSR in z7.d."""
    text = (f"adrp x5, spec_{es}_a\n    add x5, x5, :lo12:spec_{es}_a\n    ldr z1, [x5]\n"
            f"    adrp x5, spec_{es}_b\n    add x5, x5, :lo12:spec_{es}_b\n    ldr z2, [x5]\n")
    if not load_b:
        text = text.split("    adrp x5, spec")[0] + "\n"
    return (text + f"    mov x9, #{fpcr:#x}\n    msr fpcr, x9\n    msr fpsr, xzr\n    {body}\n"
            f"    mrs x9, fpsr\n    dup z7.d, x9\n    msr fpcr, xzr\n    msr fpsr, xzr")


def fp_cases() -> list[tuple[str, str]]:
    c: list[tuple[str, str]] = []
    T = {2: "h", 4: "s", 8: "d"}
    for op in ("faddp", "fmaxp", "fminp", "fmaxnmp", "fminnmp"):
        for es, t in T.items():
            for fx, fpcr in FPCRS.items():
                c.append((f"{op}.{t}{fx}", _fp_case(f"{op} z1.{t}, p1/m, z1.{t}, z2.{t}", fpcr, es)))
            c.append((f"{op}.{t}.random", f"{op} z0.{t}, p1/m, z0.{t}, z3.{t}"))
    conv = [("fcvtlt", "s", "h", 2), ("fcvtlt", "d", "s", 4), ("fcvtnt", "h", "s", 4),
            ("fcvtnt", "s", "d", 8), ("fcvtx", "s", "d", 8), ("fcvtxnt", "s", "d", 8)]
    for op, dt, st, es in conv:
        for fx, fpcr in FPCRS.items():
            c.append((f"{op}.{dt}{fx}", _fp_case(f"{op} z2.{dt}, p1/m, z1.{st}", fpcr, es)))
        c.append((f"{op}.{dt}.random", f"{op} z0.{dt}, p2/m, z1.{st}"))
    for es, t in T.items():
        for fx, fpcr in FPCRS.items():
            c.append((f"flogb.{t}{fx}", _fp_case(f"flogb z2.{t}, p1/m, z1.{t}", fpcr, es)))
        c.append((f"flogb.{t}.random", f"flogb z0.{t}, p1/m, z1.{t}"))
    for op in ("fmlalb", "fmlalt", "fmlslb", "fmlslt"):
        for fx, fpcr in FPCRS.items():
            body = ("adrp x5, spec_4_c\n    add x5, x5, :lo12:spec_4_c\n    ldr z3, [x5]\n"
                    f"    {op} z3.s, z1.h, z2.h\n    ptrue p6.b\n    adrp x5, spec_4_a\n"
                    f"    add x5, x5, :lo12:spec_4_a\n    ldr z4, [x5]\n    {op} z4.s, z1.h, z2.h[{len(fx) % 8}]")
            c.append((f"{op}{fx}", _fp_case(body, fpcr, 2)))
        c.append((f"{op}.random", f"{op} z0.s, z1.h, z2.h\n    {op} z3.s, z4.h, z5.h[7]\n"
                                  f"    {op} z6.s, z7.h, z0.h[2]"))
    c.append(("chain.fp2", _fp_case("faddp z1.s, p1/m, z1.s, z2.s\n    fcvtnt z3.h, p2/m, z1.s\n"
                                    "    fmlalt z4.s, z3.h, z2.h[1]\n    flogb z5.s, p3/m, z4.s", 0, 4)))
    return c


def cases() -> list[tuple[str, str]]:
    return perm_cases() + mem_cases() + fp_cases()


def guest_source(case_list: list[tuple[str, str]], seed: int = 2) -> str:
    """sve2_guest's program with ``membuf`` appended (random bytes, 64-byte aligned)."""
    data = random.Random(seed + 1000).randbytes(MEMBUF)
    return sve2_guest.guest_source(case_list, seed) + (
        "\n.data\n.balign 64\nmembuf: .byte " + ",".join(f"{b:#04x}" for b in data) + "\n"
        + specials_data())
