"""Differential cases for the SVE2 integer remainder (int_mac, int_narrow, int_complex,
int_misc2): (name, assembly) pairs run by sve2_guest's guest (random z0-z7, p0-p7, x2-x3 per
case), compared with ``qemu-aarch64 -cpu max`` by test_sve2a_qemu.py.  Kept apart from
sve2_guest.cases() so the two halves of the SVE2 work add cases without touching one list."""
from __future__ import annotations

SIZES = ("b", "h", "s", "d")
WIDE = {"h": "b", "s": "h", "d": "s"}
NARROW = {"h": "b", "s": "h", "d": "s"}
BITS = {"b": 8, "h": 16, "s": 32, "d": 64}
MINMAX = {"b": "mov z2.b, #-128\n    mov z3.b, #127",
          "h": "mov z2.h, #-128, lsl #8\n    mov z3.h, #127, lsl #8",
          "s": "mov z2.s, #0x80000000\n    mov z3.s, #0x7fffffff",
          "d": "mov z2.d, #0x8000000000000000\n    mov z3.d, #0x7fffffffffffffff"}
# the largest index of a same-size / widening indexed form, by (destination) element size
SAME_IDX = {"h": 7, "s": 3, "d": 1}
LONG_IDX = {"s": 7, "d": 3}


def cases() -> list[tuple[str, str]]:
    c: list[tuple[str, str]] = []
    # ---- int_mac ------------------------------------------------------------------------
    for op in ("mul", "sqdmulh", "sqrdmulh", "mla", "mls", "sqrdmlah", "sqrdmlsh"):
        for t, top in SAME_IDX.items():
            for i in sorted({0, 1, top}):
                c.append((f"{op}.idx.{t}.{i}", f"{op} z0.{t}, z1.{t}, z{7 if t == 'd' else 2}.{t}[{i}]"))
            c.append((f"{op}.idx.{t}.edge", f"{MINMAX[t]}\n    {op} z3.{t}, z2.{t}, z2.{t}[{top}]\n"
                                            f"    {op} z4.{t}, z2.{t}, z3.{t}[0]"))
    for op in ("sqrdmlah", "sqrdmlsh"):
        for t in SIZES:
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{t}, z2.{t}"))
            c.append((f"{op}.{t}.edge", f"{MINMAX[t]}\n    {op} z3.{t}, z2.{t}, z2.{t}\n"
                                        f"    {op} z2.{t}, z2.{t}, z3.{t}"))
    for op in ("smull", "umull", "sqdmull", "smlal", "umlal", "smlsl", "umlsl", "sqdmlal", "sqdmlsl"):
        for bt in "bt":
            for t, top in LONG_IDX.items():
                for i in sorted({0, 1, top}):
                    c.append((f"{op}{bt}.idx.{t}.{i}",
                              f"{op}{bt} z0.{t}, z1.{WIDE[t]}, z{7 if t == 'd' else 2}.{WIDE[t]}[{i}]"))
            c.append((f"{op}{bt}.idx.edge", f"{MINMAX['h']}\n    {MINMAX['s'].replace('z2', 'z4').replace('z3', 'z5')}\n"
                                             f"    {op}{bt} z4.s, z2.h, z2.h[3]\n    {op}{bt} z5.s, z3.h, z2.h[0]"))
    for op in ("sqdmlalb", "sqdmlalt", "sqdmlslb", "sqdmlslt", "sqdmlalbt", "sqdmlslbt"):
        for t in ("h", "s", "d"):
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{WIDE[t]}, z2.{WIDE[t]}"))
        c.append((f"{op}.edge", f"{MINMAX['h']}\n    {MINMAX['s'].replace('z2', 'z4').replace('z3', 'z5')}\n"
                                f"    {op} z4.s, z2.h, z2.h\n    {op} z5.s, z2.h, z2.h"))
    for op in ("saba", "uaba"):
        for t in SIZES:
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{t}, z2.{t}"))
    for op in ("sabalb", "sabalt", "uabalb", "uabalt"):
        for t in ("h", "s", "d"):
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{WIDE[t]}, z2.{WIDE[t]}"))
    # ---- int_narrow ---------------------------------------------------------------------
    for op in ("shrn", "rshrn", "sqshrn", "uqshrn", "sqrshrn", "uqrshrn", "sqshrun", "sqrshrun"):
        for bt in "bt":
            for t in ("b", "h", "s"):
                bits = BITS[t]
                for sh in sorted({1, bits // 2 + 1, bits}):
                    c.append((f"{op}{bt}.{t}.{sh}", f"{op}{bt} z0.{t}, z1.{WIDE_OF(t)}, #{sh}"))
    for op in ("sqxtn", "uqxtn", "sqxtun"):
        for bt in "bt":
            for t in ("b", "h", "s"):
                c.append((f"{op}{bt}.{t}", f"{op}{bt} z0.{t}, z1.{WIDE_OF(t)}"))
                c.append((f"{op}{bt}.{t}.edge", f"{MINMAX[WIDE_OF(t)]}\n    {op}{bt} z2.{t}, z2.{WIDE_OF(t)}\n"
                                                f"    {op}{bt} z3.{t}, z3.{WIDE_OF(t)}"))
    for op in ("addhn", "raddhn", "subhn", "rsubhn"):
        for bt in "bt":
            for t in ("b", "h", "s"):
                c.append((f"{op}{bt}.{t}", f"{op}{bt} z0.{t}, z1.{WIDE_OF(t)}, z2.{WIDE_OF(t)}"))
    for op in ("sshll", "ushll"):
        for bt in "bt":
            for t in ("h", "s", "d"):
                bits = BITS[WIDE[t]]
                for sh in sorted({0, 3, bits - 1}):
                    c.append((f"{op}{bt}.{t}.{sh}", f"{op}{bt} z0.{t}, z1.{WIDE[t]}, #{sh}"))
    # ---- int_complex --------------------------------------------------------------------
    for op in ("cadd", "sqcadd"):
        for t in SIZES:
            for rot in (90, 270):
                c.append((f"{op}.{t}.{rot}", f"{op} z0.{t}, z0.{t}, z1.{t}, #{rot}"))
            c.append((f"{op}.{t}.edge", f"{MINMAX[t]}\n    {op} z2.{t}, z2.{t}, z3.{t}, #90\n"
                                        f"    {op} z3.{t}, z3.{t}, z2.{t}, #270"))
    for op in ("cmla", "sqrdcmlah"):
        for t in SIZES:
            for rot in (0, 90, 180, 270):
                c.append((f"{op}.{t}.{rot}", f"{op} z0.{t}, z1.{t}, z2.{t}, #{rot}"))
            c.append((f"{op}.{t}.edge", f"{MINMAX[t]}\n    {op} z3.{t}, z2.{t}, z2.{t}, #0\n"
                                        f"    {op} z2.{t}, z3.{t}, z2.{t}, #90"))
        for t, top in (("h", 3), ("s", 1)):
            for rot in (0, 90, 180, 270):
                for i in sorted({0, top}):
                    c.append((f"{op}.idx.{t}.{rot}.{i}", f"{op} z0.{t}, z1.{t}, z{7 if t == 's' else 2}.{t}[{i}], #{rot}"))
    for t, n in (("s", "b"), ("d", "h")):
        for rot in (0, 90, 180, 270):
            c.append((f"cdot.{t}.{rot}", f"cdot z0.{t}, z1.{n}, z2.{n}, #{rot}"))
            for i in sorted({0, 3 if t == "s" else 1}):
                c.append((f"cdot.idx.{t}.{rot}.{i}", f"cdot z0.{t}, z1.{n}, z{7 if t == 'd' else 2}.{n}[{i}], #{rot}"))
    for op in ("adclb", "adclt", "sbclb", "sbclt"):
        for t in ("s", "d"):
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{t}, z2.{t}"))
            c.append((f"{op}.{t}.carry", f"mov z3.{t}, #-1\n    {op} z0.{t}, z1.{t}, z3.{t}\n"
                                         f"    {op} z3.{t}, z3.{t}, z3.{t}"))
    for op in ("saddlbt", "ssublbt", "ssubltb"):
        for t in ("h", "s", "d"):
            c.append((f"{op}.{t}", f"{op} z0.{t}, z1.{WIDE[t]}, z2.{WIDE[t]}"))
    # ---- int_misc2 -----------------------------------------------------------------------
    for op in ("srshl", "urshl", "sqshl", "uqshl", "sqrshl", "uqrshl"):
        for rev in ("", "r"):
            for t in SIZES:
                c.append((f"{op}{rev}.{t}", f"{op}{rev} z0.{t}, p1/m, z0.{t}, z1.{t}"))
                # small shift amounts (the random ones are mostly far out of range)
                c.append((f"{op}{rev}.{t}.small", f"asr z2.{t}, z2.{t}, #{BITS[t] - 3}\n"
                                                  f"    {op}{rev} z{'2' if rev else '3'}.{t}, p1/m, "
                                                  f"z{'2' if rev else '3'}.{t}, z{'3' if rev else '2'}.{t}"))
    for op in ("srshr", "urshr"):
        for t in SIZES:
            for sh in sorted({1, BITS[t] // 2 + 1, BITS[t]}):
                c.append((f"{op}.{t}.{sh}", f"{op} z0.{t}, p1/m, z0.{t}, #{sh}"))
    for op in ("sqshl", "uqshl", "sqshlu"):
        for t in SIZES:
            for sh in sorted({0, 1, BITS[t] // 2 + 1, BITS[t] - 1}):
                c.append((f"{op}.imm.{t}.{sh}", f"{op} z0.{t}, p1/m, z0.{t}, #{sh}"))
    for op in ("urecpe", "ursqrte"):
        c.append((f"{op}.s", f"{op} z0.s, p1/m, z1.s"))
        c.append((f"{op}.s.all", f"{op} z2.s, p0/m, z2.s"))
    # a run of consecutive words from all four modules
    c.append(("chain.sve2a", "sqrdmlah z0.h, z1.h, z2.h[5]\n    shrnb z3.b, z0.h, #3\n"
                             "    shrnt z3.b, z1.h, #5\n    cmla z4.s, z3.s, z0.s, #90\n"
                             "    srshl z4.s, p2/m, z4.s, z1.s\n    adclb z5.d, z4.d, z3.d\n"
                             "    sqdmlalbt z6.d, z5.s, z4.s"))
    return c


def WIDE_OF(t: str) -> str:
    """The source element of a narrowing instruction whose result elements are ``t``."""
    return {"b": "h", "h": "s", "s": "d"}[t]
