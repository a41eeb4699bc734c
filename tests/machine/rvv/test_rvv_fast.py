"""The unit's specialised executors (emukern/machine/rvv/fast.py) against the general handlers.

A random program of vsetvli / vadd-family / vle / vse words (masked and unmasked, misaligned
groups, faulting and page-crossing accesses, non-zero vstart) runs on two units: one through
``execute`` (which builds and uses the specialised closures), one through the decoded general
handler only.  Every step must give the same result object, the same exception and the same
vector state and memory."""
from __future__ import annotations

import random

import pytest
from rvv_helpers import Mem, Regs, enc, vmem, vsetvli

from emukern.errors import IllegalInstruction, MemoryFault
from emukern.machine.rvv import RVVUnit
from emukern.machine.rvv.decode import decode

A0, A1, A2 = 10, 11, 12
SEWS = (8, 16, 32, 64)
LMULS = (0.25, 0.5, 1, 2, 4, 8)
OPS = ("vadd", "vsub", "vrsub", "vand", "vor", "vxor")


class PartialMem(Mem):
    """Like a real multi-page write: the bytes before the faulting one are written, then it
    raises (why the general handler splits stores at page boundaries)."""

    def store(self, addr: int, data: bytes) -> None:
        try:
            super().store(addr, data)
        except MemoryFault as exc:
            bad = min([f for f in self.faults if addr <= f < addr + len(data)]
                      + [self.base + len(self.buf)])
            if addr >= self.base and bad > addr:
                self.buf[addr - self.base:bad - self.base] = data[:bad - addr]
            raise exc


def _general(u: RVVUnit, word: int, x: Regs, mem: Mem):
    d = decode(word)
    return d.run(u, d, x, mem)


def _random_word(rng: random.Random) -> int:
    k = rng.random()
    if k < 0.12:
        return vsetvli(5, A2, rng.choice(SEWS), rng.choice(LMULS))
    if k < 0.6:
        op = rng.choice(OPS)
        form = rng.choice(("vv", "vx", "vi") if op != "vsub" else ("vv", "vx"))
        if op == "vrsub" and form == "vv":
            form = "vx"
        vm = rng.random() < 0.8
        regs = [rng.choice((0, 1, 2, 4, 8, 16, 24, 3, 5)) for _ in range(3)]
        s1 = regs[2] if form == "vv" else (A1 if form == "vx" else rng.randrange(32))
        return enc(f"{op}.{form}", regs[0] or 8, regs[1], s1, vm)
    load = rng.random() < 0.5
    return vmem(load, rng.choice(SEWS), rng.choice((8, 16, 1, 0, 4)), A0, vm=rng.random() < 0.85)


def _state(u: RVVUnit) -> tuple:
    return bytes(u.v), u.vl, u.vtype, u.vstart


def _step(u: RVVUnit, word: int, x: Regs, mem: Mem, general: bool):
    try:
        r = _general(u, word, x, mem) if general else u.execute(word, x, mem)
        return ("ok", r.cycles, r.dirty)
    except (IllegalInstruction, MemoryFault) as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("vlen", [128, 256, 1024])
@pytest.mark.parametrize("seed", range(6))
def test_fast_matches_general(vlen: int, seed: int) -> None:
    rng = random.Random(seed * 7919 + vlen)
    units = [RVVUnit(vlen=vlen), RVVUnit(vlen=vlen)]
    regs, mems = [Regs(), Regs()], [PartialMem(), PartialMem()]
    init = bytes(rng.randrange(256) for _ in range(len(units[0].v)))
    minit = bytes(rng.randrange(256) for _ in range(len(mems[0].buf)))
    for u, m in zip(units, mems):
        u.v[:] = init
        m.buf[:] = minit
        m.faults = {m.base + 0x1000 + 24, m.base + 0x3000 + 3}
    words = [_random_word(rng) for _ in range(40)] + [
        vsetvli(5, A2, 32, 1), vsetvli(5, A2, 8, 8), vsetvli(5, A2, 32, 8), enc("vadd.vv", 8, 16, 24),
        enc("vxor.vx", 8, 16, A1), vmem(True, 32, 8, A0), vmem(False, 32, 8, A0)]
    fast_hits = 0
    for step in range(1500):
        word = rng.choice(words)
        # addresses: aligned, page-crossing, near a fault, outside memory
        addr = rng.choice((0x10000, 0x10ff0, 0x10fc0, 0x11000, 0x12f80, 0x13000, 0x13ff8,
                           0x20000, 0x10000 + rng.randrange(0x4000)))
        avl = rng.choice((0, 1, 3, 7, 1 << 20, rng.randrange(300)))
        scalar = rng.getrandbits(64)
        vstart = rng.choice((0,) * 12 + (1, 2))
        for u, x in zip(units, regs):
            x.write(A0, addr)
            x.write(A1, scalar)
            x.write(A2, avl)
            if vstart and u.vl > vstart:
                u.vstart = vstart
        fast_hits += word in units[0].fast
        a = _step(units[0], word, regs[0], mems[0], general=False)
        b = _step(units[1], word, regs[1], mems[1], general=True)
        assert a == b, f"step {step} word {word:#010x}"
        assert _state(units[0]) == _state(units[1]), f"step {step} word {word:#010x}"
        assert mems[0].buf == mems[1].buf, f"step {step} word {word:#010x}"
    assert fast_hits > 100         # the specialised executors really ran


def test_fast_executor_follows_vl_and_costs() -> None:
    """A cached closure re-checks vl (a new vsetvli) and set_costs drops the cached ones."""
    u, x, mem = RVVUnit(vlen=256), Regs(), Mem()
    add = enc("vadd.vv", 8, 16, 24)
    x.write(A2, 8)
    u.execute(vsetvli(5, A2, 32, 1), x, mem)
    u.v[16 * 32:17 * 32] = bytes(range(32))
    u.v[24 * 32:25 * 32] = bytes([1] * 32)
    r1 = u.execute(add, x, mem)
    assert add in u.fast
    assert u.v[8 * 32:9 * 32] == bytes(i + 1 for i in range(32))
    x.write(A2, 2)
    u.execute(vsetvli(5, A2, 32, 1), x, mem)
    u.v[8 * 32:9 * 32] = bytes(32)
    u.execute(add, x, mem)
    assert u.v[8 * 32:9 * 32] == bytes(i + 1 for i in range(8)) + bytes(24)   # vl=2 elements
    u.set_costs({k: v * 2 for k, v in u.cost_params.items()})
    assert not u.fast
    r2 = u.execute(add, x, mem)
    assert r2.cycles >= r1.cycles


def _vset_word(rng: random.Random) -> int:
    """A vsetvli or vsetivli: any rd/rs1 (x0 included), any vtype immediate (reserved bits,
    vlmul 4, SEW > ELEN and LMUL < SEW/ELEN included: they give vill)."""
    rd, rs1 = rng.choice((0, 5, A2)), rng.choice((0, A2, 7))
    if rng.random() < 0.5:
        zimm = rng.choice((rng.randrange(256), rng.randrange(1 << 11)))
        return (zimm << 20) | (rs1 << 15) | (7 << 12) | (rd << 7) | 0x57
    zimm = rng.choice((rng.randrange(256), rng.randrange(1 << 10)))
    return (3 << 30) | (zimm << 20) | (rng.randrange(32) << 15) | (7 << 12) | (rd << 7) | 0x57


@pytest.mark.parametrize("vlen", [64, 512, 4096])
def test_vsetvl_executors_match_the_general_handler(vlen: int) -> None:
    """vsetvli/vsetivli executors are built once per word and valid in every state: the same
    vl, vtype, vstart, rd and result as exec_cfg.run_vsetvl, from vill and from legal vtypes
    (rs1 = rd = x0 keeps vl only where VLMAX is unchanged)."""
    rng = random.Random(vlen)
    units, regs = [RVVUnit(vlen=vlen), RVVUnit(vlen=vlen)], [Regs(), Regs()]
    words = [_vset_word(rng) for _ in range(60)]
    built = 0
    for step in range(3000):
        word = rng.choice(words)
        avl = rng.choice((0, 1, 3, 17, 1 << 20, (1 << 64) - 1, rng.randrange(600)))
        x7 = rng.getrandbits(64) if step % 7 == 0 else 2
        for u, x in zip(units, regs):
            x.write(A2, avl)
            x.write(7, x7)
            if step % 11 == 0 and u.vl:
                u.vstart = 1
        built += word in units[0].fast
        a = _step(units[0], word, regs[0], mems := Mem(), general=False)
        b = _step(units[1], word, regs[1], mems, general=True)
        assert a == b, f"step {step} word {word:#010x}"
        assert _state(units[0]) == _state(units[1]), f"step {step} word {word:#010x}"
        assert regs[0].r == regs[1].r, f"step {step} word {word:#010x}"
    assert built > 2000             # every word got its executor at its first execution
