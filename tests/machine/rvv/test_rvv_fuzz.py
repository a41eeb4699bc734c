"""Property test: no word in the vector opcode space can make the unit raise anything but
IllegalInstruction or MemoryFault, corrupt its state shape, or hang."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rvv_helpers import Mem, Regs

from emukern.errors import IllegalInstruction, MemoryFault
from emukern.machine.rvv import RVVUnit, disasm, is_vector_insn

OPCODES = [0x57, 0x07, 0x27]
CSR_WORDS = st.builds(lambda csr, f3, rs1, rd: (csr << 20) | (rs1 << 15) | (f3 << 12)
                      | (rd << 7) | 0x73,
                      st.sampled_from([0x008, 0x009, 0x00A, 0x00F, 0xC20, 0xC21, 0xC22]),
                      st.sampled_from([1, 2, 3, 5, 6, 7]), st.integers(0, 31),
                      st.integers(0, 31))
WORDS = st.one_of(st.builds(lambda hi, op: (hi << 7) | op, st.integers(0, (1 << 25) - 1),
                            st.sampled_from(OPCODES)), CSR_WORDS)


@settings(max_examples=1500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(WORDS, min_size=1, max_size=4),
       vlen=st.sampled_from([128, 256, 512]),
       vtype=st.integers(0, 0xFF) | st.integers(0, (1 << 64) - 1),
       avl=st.integers(0, 600),
       vstart=st.integers(0, 40),
       xvals=st.lists(st.integers(0, (1 << 64) - 1) | st.integers(0x10000, 0x10400),
                      min_size=32, max_size=32))
def test_random_vector_words(words: list[int], vlen: int, vtype: int, avl: int, vstart: int,
                             xvals: list[int]) -> None:
    u = RVVUnit(vlen=vlen)
    x = Regs()
    mem = Mem(0x10000, 0x400)                 # small buffer; everything else faults
    for i, v in enumerate(xvals):
        x.write(i, v)
    u.vtype = vtype
    if not u.vill:
        u.vl = min(avl, u.vlmax)
    u.vstart = vstart
    for w in words:
        text = disasm(w)
        if is_vector_insn(w):
            assert isinstance(text, str) and text
        else:                                 # scalar FP load/store widths
            assert text is None
        try:
            r = u.execute(w, x, mem)
        except (IllegalInstruction, MemoryFault):
            continue
        assert r.cycles >= 1 and isinstance(r.dirty, bool)
        assert len(u.v) == 32 * u.vlenb
        assert 0 <= u.vl <= max(u.vlmax, 0) and u.vstart < vlen
        assert all(0 <= x.read(i) < 1 << 64 for i in range(32))
