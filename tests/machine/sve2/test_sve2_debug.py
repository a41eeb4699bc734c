"""The SVE2 unit under the debugger: stepping one instruction at a time through a run of SVE2
words (each word one step: the debugger turns batching off) ends where a plain run ends."""
from __future__ import annotations

from emukern.api import Machine
from emukern.debug.engine import Debugger

GUEST = """// arch: arm64
.globl _start
_start:
    ptrue p0.b
    index z1.h, #-9, #4
    index z2.h, #5, #-3
    sqabs z0.h, p0/m, z1.h
    eor3 z0.d, z0.d, z1.d, z2.d
    bdep z3.h, z0.h, z2.h
    smlalb z4.s, z3.h, z1.h
    adr x1, buf
    str z4, [x1]
    mov x0, #1
    rdvl x2, #1
    mov x8, #64
    svc #0
    mov x0, #0
    mov x8, #93
    svc #0
.data
buf: .zero 256
"""


def test_stepi_through_sve2_words_matches_run(tmp_path):
    src = tmp_path / "sve2_steps.S"
    src.write_text(GUEST)
    ref = Machine(sve_vl=256).load(str(src))
    r = ref.run()
    assert r.exit_status == 0
    d = Debugger(lambda: Machine(sve_vl=256).load(str(src)))
    n = 0
    while not d.finished:
        if d.k.deferred_trap is None:
            d.stepi(1)
        else:
            d.finish()
        n += 1
        assert n < 200
    assert d.exit_status == 0
    assert d.k.cpus[0].user_insns == r.user_insns
    assert bytes(d.k.stdout) == r.stdout
    unit = d.k.cpus[0].sve2
    assert unit.insns == 4 and unit.runs == 4          # one step, one transfer, per SVE2 word
