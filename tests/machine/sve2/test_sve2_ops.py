"""The SVE2 unit's instruction functions and decode table as pure Python (no CPU): known answers
(FIPS-197 AES-128 through AESE/AESMC, the AES S-box, bit permutations), the decode table's
shape, and that every module's INSNS -- matmul.py's included -- reaches the decoder."""
from __future__ import annotations

import pytest

from emukern.machine.sve2 import bitperm, crypto, decode, int_ops, matmul
from emukern.machine.sve2.features import FEATURE_FIELDS, features_from_idregs, model_idregs
from emukern.machine.sve2.state import Sve2Insn, Sve2Undefined, SveRegs


def regs(vl: int = 16) -> SveRegs:
    return SveRegs.zeroed(vl)


def run(word: int, r: SveRegs) -> None:
    insn = decode.lookup(word)
    assert insn is not None, hex(word)
    insn.fn(word, r)


def test_aes_sbox_known_values():
    assert crypto.AES_SBOX[0x00] == 0x63 and crypto.AES_SBOX[0x53] == 0xED
    assert crypto.AES_SBOX[0xFF] == 0x16
    assert all(crypto.AES_INV_SBOX[crypto.AES_SBOX[x]] == x for x in range(256))


def _expand(key: bytes) -> list[bytes]:
    rcon = [1, 2, 4, 8, 16, 32, 64, 128, 27, 54]
    w = [key[i:i + 4] for i in range(0, 16, 4)]
    for i in range(4, 44):
        t = w[i - 1]
        if i % 4 == 0:
            t = bytes(crypto.AES_SBOX[b] for b in t[1:] + t[:1])
            t = bytes([t[0] ^ rcon[i // 4 - 1]]) + t[1:]
        w.append(bytes(a ^ b for a, b in zip(w[i - 4], t)))
    return [b"".join(w[4 * r:4 * r + 4]) for r in range(11)]


@pytest.mark.parametrize("vl", [16, 64])
def test_fips197_aes128_through_aese_aesmc(vl):
    """FIPS-197 appendix B, in every 128-bit segment: 9 x (AESE, AESMC), AESE, EOR."""
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    pt = bytes.fromhex("3243f6a8885a308d313198a2e0370734")
    rks = _expand(key)
    r = regs(vl)
    r.z[0] = bytearray(pt * (vl // 16))
    for rnd in range(10):
        r.z[1] = bytearray(rks[rnd] * (vl // 16))
        run(0x4522E000 | (1 << 5) | 0, r)             # aese z0.b, z0.b, z1.b
        if rnd < 9:
            run(0x4520E000, r)                         # aesmc z0.b, z0.b
    ct = bytes(a ^ b for a, b in zip(r.z[0], rks[10] * (vl // 16)))
    assert ct == bytes.fromhex("3925841d02dc09fbdc118597196a0b32") * (vl // 16)
    # and AESD/AESIMC undo it: each AESD (with a zero key) undoes one SubBytes/ShiftRows, the
    # round key is added back by hand, AESIMC undoes the MixColumns before it
    r.z[0] = bytearray(a ^ b for a, b in zip(ct, rks[10] * (vl // 16)))
    r.z[1] = bytearray(vl)
    for rnd in range(9, -1, -1):
        run(0x4522E400 | (1 << 5), r)                  # aesd z0.b, z0.b, z1.b
        r.z[0] = bytearray(a ^ b for a, b in zip(r.z[0], rks[rnd] * (vl // 16)))
        if rnd:
            run(0x4520E400, r)                         # aesimc z0.b, z0.b
    assert bytes(r.z[0]) == pt * (vl // 16)


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_bit_permutations(bits):
    import random
    rnd = random.Random(bits)
    for _ in range(200):
        v, m = rnd.getrandbits(bits), rnd.getrandbits(bits)
        ext = bitperm.bext(v, m, bits)
        assert bitperm.bdep(ext, m, bits) == v & m          # deposit undoes extract on the mask
        g = bitperm.bgrp(v, m, bits)
        assert bin(g).count("1") == bin(v).count("1")       # a permutation of the bits
        assert g & ((1 << bin(m).count("1")) - 1) == ext
    assert bitperm.bext(0b1011_0110, 0b1111_0000, 8) == 0b1011
    assert bitperm.bdep(0b11, 0b1010_0000, 8) == 0b1010_0000


def test_xar_tsz_zero_and_pmull_size_10_are_unallocated():
    r = regs()
    with pytest.raises(Sve2Undefined):
        run(0x04203400, r)
    with pytest.raises(Sve2Undefined):
        run(0x45806800, r)
    assert not r.written_z


def test_sqabs_merges_and_saturates():
    r = regs()
    r.z[1] = bytearray([0x80, 0x81, 0x7F, 0x00, 0xFF] + [0x90] * 11)
    r.z[0] = bytearray([0xAA] * 16)
    r.p[2] = 0b1_0111                                   # elements 0, 1, 2, 4
    run(0x4408A000 | (2 << 10) | (1 << 5) | 0, r)       # sqabs z0.b, p2/m, z1.b
    assert bytes(r.z[0][:5]) == bytes([0x7F, 0x7F, 0x7F, 0xAA, 0x01])
    assert bytes(r.z[0][5:]) == bytes([0xAA] * 11)


def test_table_shape():
    names = set()
    for insn in decode.TABLE:
        assert insn.value & ~insn.mask == 0, insn.name
        assert insn.feature in FEATURE_FIELDS, insn.name
        assert (insn.value >> 25) & 0xF == 0b0010, f"{insn.name} is outside the SVE encoding space"
        names.add(insn.name)
    assert len(names) == len(decode.TABLE)
    # the .Q forms of PMULLB/PMULLT need FEAT_SVE_PMULL128, the others FEAT_SVE2
    assert decode.lookup(0x45006800).feature == "svepmull128"
    assert decode.lookup(0x45406800).feature == "sve2"


def test_every_module_reaches_the_decoder(monkeypatch):
    fake = Sve2Insn("fake-mm", 0xFFFFFFFF, 0x64A0E400, "svef32mm", lambda w, r: None)
    monkeypatch.setattr(matmul, "INSNS", (fake,))
    table = decode.collect()
    assert fake in table
    for mod in (int_ops, crypto, bitperm):
        assert set(mod.INSNS) <= set(table)


def test_features_follow_the_id_registers():
    pfr0 = 1 << 32
    assert features_from_idregs(0, 0xFFFF_FFFF_FFFF_FFFF) == frozenset()     # no SVE at all
    assert features_from_idregs(pfr0, 0) == frozenset()
    assert features_from_idregs(pfr0, 0x1) == {"sve2"}
    assert features_from_idregs(pfr0, 0x11) == {"sve2", "sveaes"}
    assert features_from_idregs(pfr0, 0x21) == {"sve2", "sveaes", "svepmull128"}
    p, z = model_idregs("qemu-max", pfr0, 0)
    assert features_from_idregs(p, z) == set(FEATURE_FIELDS)
    assert model_idregs("unicorn-max", pfr0, 0) == (pfr0, 0)
    with pytest.raises(ValueError):
        model_idregs("cortex-a77", pfr0, 0)
