"""Cycle cost of vector instructions.

Model: a single-issue, in-order vector unit whose datapath processes DLEN bits per cycle (the
spec's DLEN: "the datapath width", with VLEN/DLEN beats per register, see the RVV spec's
section on mapping elements to registers).  An operation on a register group of EMUL
registers therefore takes ceil(EMUL*VLEN/DLEN) *beats*; fractional EMUL still needs one beat.

    cycles = max(1, round(base[kind] + per_beat[kind] * beats + per_reg[kind] * regs))

where regs = max(1, EMUL) is the number of architectural registers touched.  The constants
below are in the range of a simple in-order vector unit (one beat per cycle for ALU work,
a multi-cycle multiplier, an iterative divider, a load/store pipe with a few cycles of
address-generation/latency per access plus per-register writeback).  They are deliberately
round numbers, not any particular core's timings.  Override them with ``RVVUnit.set_costs``
or by passing ``params``; the CPU's cost table imports :data:`DEFAULT_COSTS` as its defaults.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

# kind -> constants; "<kind>.base", "<kind>.beat", "<kind>.reg"
DEFAULT_COSTS: dict[str, float] = {
    # simple integer ALU (add, logic, shifts, compares, min/max, merge, moves): 1 beat/cycle
    "arith.base": 0, "arith.beat": 1, "arith.reg": 0,
    # multiplier: pipelined, 1 beat/cycle after a short fill
    "mul.base": 2, "mul.beat": 1, "mul.reg": 0,
    # divider: iterative, a few cycles per beat
    "div.base": 4, "div.beat": 8, "div.reg": 0,
    # reductions: a beat per source register plus a log-depth tree at the end
    "reduce.base": 3, "reduce.beat": 1, "reduce.reg": 0,
    # mask-register logic and vcpop/vfirst: operate on one register
    "mask.base": 1, "mask.beat": 0, "mask.reg": 0,
    # slides/permutes: cross-lane, 2 cycles per beat
    "permute.base": 1, "permute.beat": 2, "permute.reg": 0,
    # scalar <-> vector element moves (vmv.x.s, vmv.s.x)
    "move.base": 1, "move.beat": 0, "move.reg": 0,
    # unit-stride / whole-register loads and stores: address gen + beats + per-register
    "load.base": 2, "load.beat": 1, "load.reg": 1,
    "store.base": 1, "store.beat": 1, "store.reg": 1,
    # strided accesses are split into one access per element: charged per beat extra
    "strided.base": 2, "strided.beat": 4, "strided.reg": 1,
    # vsetvl/vsetvli/vsetivli and vector CSR accesses
    "vsetvl.base": 1, "vsetvl.beat": 0, "vsetvl.reg": 0,
    "csr.base": 1, "csr.beat": 0, "csr.reg": 0,
}

KINDS = sorted({k.split(".")[0] for k in DEFAULT_COSTS})


def vector_cost(kind: str, emul_or_lmul: float, vlen: int, dlen: int,
                params: Mapping[str, float] | None = None) -> int:
    """Cycles for one instruction of ``kind`` on an EMUL (or LMUL) register group."""
    p = DEFAULT_COSTS if params is None else params
    if kind not in KINDS:
        raise KeyError(f"unknown vector cost kind {kind!r}")
    beats = max(1, math.ceil(emul_or_lmul * vlen / dlen))
    regs = max(1.0, emul_or_lmul)
    c = (p.get(f"{kind}.base", DEFAULT_COSTS[f"{kind}.base"])
         + p.get(f"{kind}.beat", DEFAULT_COSTS[f"{kind}.beat"]) * beats
         + p.get(f"{kind}.reg", DEFAULT_COSTS[f"{kind}.reg"]) * regs)
    return max(1, round(c))
