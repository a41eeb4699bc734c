"""The ``vtype`` CSR: decoding, legality, and the text llvm uses for it.

Layout (XLEN=64): vlmul[2:0], vsew[5:3], vta[6], vma[7], reserved bits 8..62, vill bit 63.
"""
from __future__ import annotations

from dataclasses import dataclass

VILL = 1 << 63
XMASK = (1 << 64) - 1

# vlmul field -> log2(LMUL); the value 4 is reserved.
_LMUL_LOG2 = {0: 0, 1: 1, 2: 2, 3: 3, 5: -3, 6: -2, 7: -1}
_LMUL_TEXT = {0: "m1", 1: "m2", 2: "m4", 3: "m8", 5: "mf8", 6: "mf4", 7: "mf2"}


@dataclass(frozen=True, slots=True)
class VType:
    """A legal vtype value, pre-digested for the execution loops."""

    raw: int
    sew: int          # element width in bits
    sew_log2: int     # log2(SEW/8): 0..3, also the index into the struct format table
    lmul_log2: int    # -3..3
    vta: bool
    vma: bool
    vlmax: int
    group: int        # registers per LMUL group (1 for fractional LMUL)

    @property
    def lmul(self) -> float:
        return 2.0 ** self.lmul_log2


# (raw, vlen, elen) -> decode result: a vsetvli decodes its vtype on every execution, and a
# program uses a handful of vtypes (VType is immutable, so one object serves every user)
_DECODED: dict[tuple[int, int, int], "VType | None"] = {}


def decode_vtype(raw: int, vlen: int, elen: int) -> VType | None:
    """Return the decoded vtype, or None when the value is unsupported (vill).

    Unsupported means: vill already set, any reserved bit set, vlmul=4, SEW > ELEN, or
    LMUL < SEW/ELEN (e.g. e16 with mf8 when ELEN=64).
    """
    raw &= XMASK
    if raw >> 8:
        return None
    key = (raw, vlen, elen)
    try:
        return _DECODED[key]
    except KeyError:
        vt = _DECODED[key] = _decode_vtype(raw, vlen, elen)
        return vt


def _decode_vtype(raw: int, vlen: int, elen: int) -> VType | None:
    """decode_vtype for an 8-bit ``raw`` (the only values that can be legal)."""
    vlmul = raw & 7
    vsew = (raw >> 3) & 7
    if vlmul not in _LMUL_LOG2:
        return None
    sew = 8 << vsew
    if vsew > 3 or sew > elen:
        return None
    lmul_log2 = _LMUL_LOG2[vlmul]
    # LMUL >= SEW/ELEN  <=>  SEW <= ELEN * LMUL
    if lmul_log2 < 0 and sew > (elen >> -lmul_log2):
        return None
    if lmul_log2 >= 0:
        vlmax = (vlen << lmul_log2) // sew
    else:
        vlmax = (vlen >> -lmul_log2) // sew
    return VType(raw, sew, vsew, lmul_log2, bool(raw & 0x40), bool(raw & 0x80), vlmax,
                 1 << max(lmul_log2, 0))


def vtype_text(zimm: int) -> str:
    """vtype immediate as llvm prints it: ``e32, m1, ta, ma``, or the number if reserved."""
    vlmul = zimm & 7
    vsew = (zimm >> 3) & 7
    if zimm >> 8 or vlmul == 4 or vsew > 3:
        return str(zimm)
    ta = "ta" if zimm & 0x40 else "tu"
    ma = "ma" if zimm & 0x80 else "mu"
    return f"e{8 << vsew}, {_LMUL_TEXT[vlmul]}, {ta}, {ma}"
