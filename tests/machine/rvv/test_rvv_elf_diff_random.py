"""Random differential programs against qemu-riscv64: sequences of legal vector instructions
(random vtype/AVL, operands, masks, scalar values) built from every implemented instruction
class, run as static ELFs under emukern and qemu at VLEN 128/256/512 with the harness of
``test_rvv_elf_diff.py`` (every x register, the vector CSRs, all 32 v registers and the 8 KiB
data area compared byte for byte).  Seeds are fixed, so a failure reproduces; set
``EMUKERN_RVV_FUZZ_SEEDS=N`` to run N more seeds per VLEN locally."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from test_rvv_elf_diff import QEMU, _describe, _program, _qemu, pytestmark  # noqa: F401

from emukern.api import Machine
from emukern.loader.asm import assemble

VLENS = (128, 256, 512)
SEEDS = int(os.environ.get("EMUKERN_RVV_FUZZ_SEEDS", "8"))
SEWS = (8, 16, 32, 64)
LMULS = {"mf8": -3, "mf4": -2, "mf2": -1, "m1": 0, "m2": 1, "m4": 2, "m8": 3}
XR = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "t3", "t4", "t5", "t6", "zero"]

OPI_VV = ["vadd", "vsub", "vminu", "vmin", "vmaxu", "vmax", "vand", "vor", "vxor", "vsll",
          "vsrl", "vsra"]
OPI_VX = OPI_VV + ["vrsub"]
OPI_VI = ["vadd", "vrsub", "vand", "vor", "vxor"]
OPI_VIU = ["vsll", "vsrl", "vsra"]
OPM = ["vmul", "vmulh", "vmulhu", "vmulhsu", "vdiv", "vdivu", "vrem", "vremu"]
CMP_VV = ["vmseq", "vmsne", "vmsltu", "vmslt", "vmsleu", "vmsle"]
CMP_VX = CMP_VV + ["vmsgtu", "vmsgt"]
CMP_VI = ["vmseq", "vmsne", "vmsleu", "vmsle", "vmsgtu", "vmsgt"]
RED = ["vredsum", "vredand", "vredor", "vredxor", "vredminu", "vredmin", "vredmaxu", "vredmax"]
MASKL = ["vmand", "vmnand", "vmandn", "vmor", "vmnor", "vmorn", "vmxor", "vmxnor"]


class Gen:
    def __init__(self, seed: str, vlen: int) -> None:
        self.r = random.Random(seed)
        self.vlen = vlen
        self.g = 1            # registers per group for the current LMUL
        self.sew = 8
        self.lines: list[str] = []

    def vstart_block(self) -> None:
        """vsetivli with a known vl < VLMAX, csrwi vstart, k (0 < k < vl), one instruction.
        QEMU 7.2 bugs avoided here: it may ignore vstart on its whole-register fast path when
        vl = VLMAX, it does not reset vstart >= vl, and its vslideup.vx/vi never reset a
        non-zero vstart (emukern follows the spec: every vector instruction resets vstart)."""
        r = self.r
        while True:
            sew = r.choice(SEWS)
            lm = r.choice(list(LMULS))
            l2 = LMULS[lm]
            if l2 < 0 and sew > 64 >> -l2:
                continue
            vlmax = (self.vlen << l2 if l2 >= 0 else self.vlen >> -l2) // sew
            if vlmax >= 3:
                break
        self.sew, self.g = sew, 1 << max(l2, 0)
        vl = r.randrange(2, min(vlmax, 32))
        pol = f"{r.choice(['ta', 'tu'])}, {r.choice(['ma', 'mu'])}"
        self.lines.append(f"vsetivli t0, {vl}, e{sew}, {lm}, {pol}")
        self.lines.append(f"csrwi vstart, {r.randrange(1, vl)}")
        self.insn(kinds=["opi", "opm", "cmp", "merge", "slide", "maskl", "mem"], vstart=True)
        # QEMU 7.2 translates a block with the vstart it had when the block started and
        # (wrongly) treats later instructions of the block as if vstart were still non-zero;
        # a jump starts a new block.
        self.lines += ["j 1f", "1:"]

    def vtype(self) -> None:
        r = self.r
        while True:
            sew = r.choice(SEWS)
            lm = r.choice(list(LMULS))
            if LMULS[lm] >= 0 or sew <= 64 >> -LMULS[lm]:
                break
        self.sew, self.g = sew, 1 << max(LMULS[lm], 0)
        pol = f"{r.choice(['ta', 'tu'])}, {r.choice(['ma', 'mu'])}"
        avl = r.choice(["zero", "a6", "t4", "a4", "a0", "imm"])
        if avl == "imm":
            self.lines.append(f"vsetivli t0, {r.randrange(32)}, e{sew}, {lm}, {pol}")
        elif avl == "zero":
            self.lines.append(f"vsetvli t0, zero, e{sew}, {lm}, {pol}")
        else:
            self.lines.append(f"vsetvli t0, {avl}, e{sew}, {lm}, {pol}")

    def vreg(self, exclude: tuple[int, ...] = (), nonzero: bool = False) -> int:
        """A group-aligned register whose group avoids ``exclude`` groups (start, size)."""
        g = self.g
        while True:
            v = self.r.randrange(0, 32, g)
            if nonzero and v == 0:
                continue
            if any(v < e + s and e < v + g for e, s in zip(exclude[::2], exclude[1::2])):
                continue
            return v

    def mask(self) -> tuple[str, bool]:
        m = self.r.random() < 0.4
        return (", v0.t" if m else ""), m

    def x(self) -> str:
        return self.r.choice(XR)

    def insn(self, kinds: list[str] | None = None, vstart: bool = False) -> None:
        r, g = self.r, self.g
        kind = r.choice(kinds or ["opi", "opi", "opm", "cmp", "merge", "slide", "red", "maskl",
                                  "pop", "move", "mem", "mem", "vtype", "setx", "vstart"])
        if kind == "vstart":
            self.vstart_block()
            return
        mk, masked = self.mask()
        if kind == "vtype":
            self.vtype()
        elif kind == "setx":
            val = r.choice([0, 1, -1, 2, 7, 31, 33, 127, 128, -128, 0x7FFF, 0x8000, 1 << 31,
                            (1 << 63) - 1, r.getrandbits(64)])
            self.lines.append(f"li {r.choice(XR[:-1])}, {val if val < 1 << 63 else val - (1 << 64)}")
        elif kind in ("opi", "opm"):
            vd = self.vreg(nonzero=masked)
            vs2, vs1 = self.vreg(), self.vreg()
            form = r.choice(["vv", "vx"] + (["vi", "viu"] if kind == "opi" else []))
            if kind == "opm":
                op = r.choice(OPM)
            else:
                op = r.choice({"vv": OPI_VV, "vx": OPI_VX, "vi": OPI_VI, "viu": OPI_VIU}[form])
            src = {"vv": f"v{vs1}", "vx": self.x(), "vi": str(r.randrange(-16, 16)),
                   "viu": str(r.randrange(32))}[form]
            self.lines.append(f"{op}.{form[:2]} v{vd}, v{vs2}, {src}{mk}")
        elif kind == "cmp":
            form = r.choice(["vv", "vx", "vi"])
            op = r.choice({"vv": CMP_VV, "vx": CMP_VX, "vi": CMP_VI}[form])
            vs2, vs1 = self.vreg(), self.vreg()
            srcs = [vs2] + ([vs1] if form == "vv" else [])
            # a single mask destination outside the source groups (or their lowest register)
            while True:
                vd = r.randrange(32)
                if all(vd == s or not (s <= vd < s + g) for s in srcs):
                    break
            src = {"vv": f"v{vs1}", "vx": self.x(), "vi": str(r.randrange(-16, 16))}[form]
            self.lines.append(f"{op}.{form} v{vd}, v{vs2}, {src}{mk}")
        elif kind == "merge":
            form = r.choice(["vv", "vx", "vi"])
            src = {"vv": f"v{self.vreg()}", "vx": self.x(), "vi": str(r.randrange(-16, 16))}[form]
            if r.random() < 0.5:
                self.lines.append(f"vmerge.{form}m v{self.vreg(nonzero=True)}, v{self.vreg()}, "
                                  f"{src}, v0")
            else:
                self.lines.append(f"vmv.v.{form[1]} v{self.vreg()}, {src}")
            if r.random() < 0.2 and not vstart:
                self.lines.append(f"vid.v v{self.vreg(nonzero=masked)}{mk}")
        elif kind == "slide":
            vs2 = self.vreg()
            op = r.choice(["vslideup.vx", "vslideup.vi", "vslidedown.vx", "vslidedown.vi",
                           "vslide1up.vx", "vslide1down.vx"][2 * vstart:])
            up = "up" in op
            vd = self.vreg(exclude=(vs2, g) if up else (), nonzero=masked)
            src = str(r.randrange(32)) if op.endswith("vi") else self.x()
            self.lines.append(f"{op} v{vd}, v{vs2}, {src}{mk}")
        elif kind == "red":
            self.lines.append(f"{r.choice(RED)}.vs v{r.randrange(32)}, v{self.vreg()}, "
                              f"v{r.randrange(32)}{mk}")
        elif kind == "maskl":
            self.lines.append(f"{r.choice(MASKL)}.mm v{r.randrange(32)}, v{r.randrange(32)}, "
                              f"v{r.randrange(32)}")
        elif kind == "pop":
            op = r.choice(["vcpop.m", "vfirst.m"])
            self.lines.append(f"{op} {r.choice(XR[:-1])}, v{r.randrange(32)}{mk}")
        elif kind == "move":
            c = r.random()
            if c < 0.35:
                self.lines.append(f"vmv.x.s {r.choice(XR[:-1])}, v{r.randrange(32)}")
            elif c < 0.7:
                self.lines.append(f"vmv.s.x v{r.randrange(32)}, {self.x()}")
            else:
                n = r.choice([1, 2, 4, 8])
                self.lines.append(f"vmv{n}r.v v{r.randrange(0, 32, n)}, v{r.randrange(0, 32, n)}")
        elif kind == "mem":
            self.mem(mk, masked, vstart)

    def mem(self, mk: str, masked: bool, vstart: bool = False) -> None:
        r = self.r
        c = r.random()
        # element width: EEW with EMUL = EEW/SEW*LMUL inside [1/8, 8]
        lml = {1: 0, 2: 1, 4: 2, 8: 3}[self.g] if self.g > 1 else 0
        choices = []
        for eew in SEWS:
            e = (eew.bit_length() - self.sew.bit_length()) + lml
            if -3 <= e <= 3:
                choices.append((eew, 1 << max(e, 0)))
        eew, eg = r.choice(choices)
        while True:
            vd = r.randrange(0, 32, eg)
            if not (masked and vd == 0):
                break
        # stay inside the 8 KiB area: at most 8 regs * 64 bytes = 512 bytes per unit-stride
        # access; strides of at most 2 elements (1 KiB) either way from the middle
        strided = 0.4 <= c < 0.6
        off = r.randrange(2048, 5000, 8) if strided else r.randrange(1024, 7000, eew // 8)
        self.lines.append(f"addi s3, s1, {off}" if off < 2048 else f"li s3, {off}")
        if off >= 2048:
            self.lines.append("add s3, s3, s1")
        if c < 0.4:
            self.lines.append(f"v{r.choice('ls')}e{eew}.v v{vd}, (s3){mk}")
        elif c < 0.6:
            stride = r.choice([0, 1, 2, -1]) * (eew // 8)
            self.lines.append(f"li s4, {stride}")
            self.lines.append(f"v{r.choice('ls')}se{eew}.v v{vd}, (s3), s4{mk}")
        elif c < 0.75:
            self.lines.append(f"vle{eew}ff.v v{vd}, (s3){mk}")
        elif c < 0.9:
            n = r.choice([1, 2, 4, 8])
            vd = r.randrange(0, 32, n)
            if r.random() < 0.5:
                self.lines.append(f"vl{n}re{eew}.v v{vd}, (s3)")
            else:
                self.lines.append(f"vs{n}r.v v{vd}, (s3)")
        elif not vstart:      # vlm/vsm count vstart in bytes: it could reach their evl
            self.lines.append(f"v{r.choice('ls')}m.v v{r.randrange(32)}, (s3)")
        else:
            self.lines.append(f"vle{eew}.v v{vd}, (s3){mk}")


def body(seed: str, vlen: int, n: int = 60) -> str:
    g = Gen(seed, vlen)
    g.vtype()
    for _ in range(n):
        g.insn()
    return "\n".join(g.lines)


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("seed", range(SEEDS))
def test_random_against_qemu(seed: int, vlen: int, tmp_path: Path) -> None:
    name = f"rand{seed}"
    src = _program(body(f"{seed}/{vlen}", vlen), vlen, name)
    elf = assemble(tmp_path / f"{name}.S", "riscv64", text=src)
    q = _qemu(elf, vlen)
    assert q.returncode == 0, f"qemu: status {q.returncode} {q.stderr[-300:]!r}"
    r = Machine(vlen=vlen).load(elf).run()
    assert r.exit_status == 0, f"emukern: exit status {r.exit_status}"
    if r.stdout != q.stdout:
        pytest.fail(f"seed {seed} VLEN={vlen}: first difference in "
                    f"{_describe(r.stdout, q.stdout, vlen)}")
