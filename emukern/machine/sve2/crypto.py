"""SVE2 cryptographic instructions of the SVE2 unit.

Implemented, each on every 128-bit segment of the vector (the Arm ARM's SVE forms apply the
AdvSIMD crypto operation per segment):

* FEAT_SVE_AES (ID_AA64ZFR0_EL1.AES >= 1): AESE, AESD (AddRoundKey then (Inv)ShiftRows and
  (Inv)SubBytes, destructive Zdn with key Zm), AESMC, AESIMC ((Inv)MixColumns, destructive Zdn).
* FEAT_SVE_SM4 (ID_AA64ZFR0_EL1.SM4): SM4E (four encryption rounds of Zdn with round keys Zm),
  SM4EKEY (four key-expansion rounds of Zn with constants Zm).
* FEAT_SVE_SHA3 (ID_AA64ZFR0_EL1.SHA3): RAX1 (Zd.D = Zn.D xor (Zm.D rotated left by 1)).
"""
from __future__ import annotations

from .elems import pack, rol, unpack, zd, zm, zn
from .state import Sve2Insn, SveRegs


# ---- AES (FIPS-197), tables computed from the field arithmetic ----------------------------------
def _gmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = ((a << 1) ^ 0x11B) if a & 0x80 else a << 1
        b >>= 1
    return r


def _aes_sbox() -> tuple[bytes, bytes]:
    # the multiplicative inverses through powers of the generator 3 (x = 3**i, so 1/x =
    # 3**(255 - i)): one pass over the field instead of searching each inverse by trial
    # multiplication, which cost an arm64 run ~16 ms of start-up (this module loads with the SVE2 unit)
    power, log = [0] * 255, [0] * 256
    x = 1
    for i in range(255):
        power[i], log[x] = x, i
        x = _gmul(x, 3)
    inv = [0] + [power[(255 - log[a]) % 255] for a in range(1, 256)]
    sbox = bytearray(256)
    for x in range(256):
        b = inv[x]
        s = b
        for i in range(1, 5):
            s ^= ((b << i) | (b >> (8 - i))) & 0xFF
        sbox[x] = s ^ 0x63
    isbox = bytearray(256)
    for x in range(256):
        isbox[sbox[x]] = x
    return bytes(sbox), bytes(isbox)


AES_SBOX, AES_INV_SBOX = _aes_sbox()
# the state is column-major: byte i is row i % 4, column i // 4; ShiftRows moves row r left by r
_SHIFT_ROWS = [((i // 4 + i % 4) % 4) * 4 + i % 4 for i in range(16)]       # out[i] = in[_SR[i]]
_INV_SHIFT_ROWS = [((i // 4 - i % 4) % 4) * 4 + i % 4 for i in range(16)]
_MUL = {k: bytes(_gmul(x, k) for x in range(256)) for k in (2, 3, 9, 11, 13, 14)}


def _mix(col: bytes, m: tuple[int, int, int, int]) -> bytes:
    out = bytearray(4)
    for r in range(4):
        acc = 0
        for c in range(4):
            k = m[(c - r) % 4]
            acc ^= col[c] if k == 1 else _MUL[k][col[c]]
        out[r] = acc
    return bytes(out)


def _segments(vec: bytes | bytearray):
    for i in range(0, len(vec), 16):
        yield bytes(vec[i:i + 16])


def _aes_round(decrypt: bool):
    sbox = AES_INV_SBOX if decrypt else AES_SBOX
    perm = _INV_SHIFT_ROWS if decrypt else _SHIFT_ROWS

    def run(w: int, r: SveRegs) -> None:
        d, k = r.z[zd(w)], r.z[zn(w)]           # AESE/AESD Zdn, Zdn, Zm: Zm is in the Zn field
        x = bytes(a ^ b for a, b in zip(d, k))
        out = bytearray()
        for seg in _segments(x):
            out += bytes(sbox[seg[perm[i]]] for i in range(16))
        r.set_z(zd(w), out)
    return run


def _aes_mix(inverse: bool):
    m = (14, 11, 13, 9) if inverse else (2, 3, 1, 1)

    def run(w: int, r: SveRegs) -> None:
        out = bytearray()
        for seg in _segments(r.z[zd(w)]):
            for c in range(4):
                out += _mix(seg[4 * c:4 * c + 4], m)
        r.set_z(zd(w), out)
    return run


# ---- SM4 (GB/T 32907-2016) ------------------------------------------------------------------------
# the standard's S-box
SM4_SBOX = bytes.fromhex(
    "d690e9fecce13db716b614c228fb2c052b679a762abe04c3aa44132649860699"
    "9c4250f491ef987a33540b43edcfac62e4b31ca9c908e89580df94fa758f3fa6"
    "4707a7fcf37317ba83593c19e6854fa8686b81b27164da8bf8eb0f4b70569d35"
    "1e240e5e6358d1a225227c3b01217887d40046579fd327524c3602e7a0c4c89e"
    "eabf8ad240c738b5a3f7f2cef96115a1e0ae5da49b341a55ad933230f58cb1e3"
    "1df6e22e8266ca60c02923ab0d534e6fd5db3745defd8e2f03ff6a726d6c5b51"
    "8d1baf92bbddbc7f11d95c411f105ad80ac13188a5cd7bbd2d74d012b8e5b4b0"
    "8969974a0c96777e65b9f109c56ec68418f07dec3adc4d2079ee5f3ed7cb3948")
assert len(SM4_SBOX) == 256 and len(set(SM4_SBOX)) == 256


def _tau(v: int) -> int:
    return int.from_bytes(bytes(SM4_SBOX[b] for b in v.to_bytes(4, "little")), "little")


def _sm4_rounds(key_schedule: bool):
    def run(w: int, r: SveRegs) -> None:
        if key_schedule:                          # SM4EKEY Zd, Zn, Zm
            data, consts, dst = r.z[zn(w)], r.z[zm(w)], zd(w)
        else:                                     # SM4E Zdn, Zdn, Zm (Zm in the Zn field)
            data, consts, dst = r.z[zd(w)], r.z[zn(w)], zd(w)
        words = unpack(data, 4)
        ks = unpack(consts, 4)
        out: list[int] = []
        for s in range(0, len(words), 4):
            x = words[s:s + 4]
            for i in range(4):
                t = _tau(x[1] ^ x[2] ^ x[3] ^ ks[s + i])
                if key_schedule:
                    t ^= rol(t, 13, 32) ^ rol(t, 23, 32)
                else:
                    t ^= rol(t, 2, 32) ^ rol(t, 10, 32) ^ rol(t, 18, 32) ^ rol(t, 24, 32)
                x = [x[1], x[2], x[3], x[0] ^ t]
            out += x
        r.set_z(dst, pack(out, 4))
    return run


# ---- SHA3 ---------------------------------------------------------------------------------------
def rax1(w: int, r: SveRegs) -> None:
    a = unpack(r.z[zn(w)], 8)
    b = unpack(r.z[zm(w)], 8)
    r.set_z(zd(w), pack([x ^ rol(y, 1, 64) for x, y in zip(a, b)], 8))


INSNS: tuple[Sve2Insn, ...] = (
    Sve2Insn("aese", 0xFFFFFC00, 0x4522E000, "sveaes", _aes_round(False)),
    Sve2Insn("aesd", 0xFFFFFC00, 0x4522E400, "sveaes", _aes_round(True)),
    Sve2Insn("aesmc", 0xFFFFFFE0, 0x4520E000, "sveaes", _aes_mix(False)),
    Sve2Insn("aesimc", 0xFFFFFFE0, 0x4520E400, "sveaes", _aes_mix(True)),
    Sve2Insn("sm4e", 0xFFFFFC00, 0x4523E000, "svesm4", _sm4_rounds(False)),
    Sve2Insn("sm4ekey", 0xFFE0FC00, 0x4520F000, "svesm4", _sm4_rounds(True)),
    Sve2Insn("rax1", 0xFFE0FC00, 0x4520F400, "svesha3", rax1),
)
