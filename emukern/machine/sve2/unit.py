"""The SVE2 unit: decode, feature gate, and execution of one SVE2-family word on the CPU state.

The CPU (machine/cpu_arm64.py) offers the unit every EL0 UNDEF whose word lies in the SVE
encoding space while EL0 may use SVE.  :meth:`Sve2Unit.step` returns

* ``True``: the word is an instruction the unit implements and the CPU model advertises; it was
  executed on the live registers (through the microcode in :mod:`.xfer`); the CPU retires it;
* ``False``: the hardware being modelled does not have it (not advertised, or not an SVE2-family
  instruction at all, or an unallocated field inside a class): the CPU takes the UNDEF as before.

Honest failure: a word that *is* an SVE2-family instruction (the disassembler knows it), of a
feature the CPU model advertises and the unit models, but that the unit does not implement,
raises :class:`Sve2NotImplemented` instead of a SIGILL the modelled CPU would never raise -- a
program that probes the ID registers and then uses the feature would otherwise be told the
hardware lacks what it just advertised.  The hint names ``--cpu-model unicorn-max`` (which
advertises only what Unicorn executes).  A feature of which the unit implements nothing yet
(e.g. the matrix-multiply ones before their module is filled) keeps today's UNDEF.
"""
from __future__ import annotations

from typing import Any, Callable

from unicorn import arm64_const as A

from emukern.errors import EmukernError

from . import decode
from .features import features_from_idregs
from .state import Sve2Insn, Sve2Undefined, SveRegs
from .xfer import P_AREA, Z_AREA, SveTransfer

# capstone mnemonic -> feature, for the words the unit does not implement (the diagnostic
# only): everything else that decodes in the SVE space and Unicorn refuses is FEAT_SVE2
_MNEMONIC_FEATURE = {
    **{m: "sveaes" for m in ("aese", "aesd", "aesmc", "aesimc")},
    **{m: "svesm4" for m in ("sm4e", "sm4ekey")},
    "rax1": "svesha3",
    **{m: "svebitperm" for m in ("bdep", "bext", "bgrp")},
    **{m: "svei8mm" for m in ("smmla", "ummla", "usmmla", "usdot", "sudot")},
    "fmmla": "svef32mm",                      # .S; the .D form is F64MM (see _feature_of)
    **{m: "svef64mm" for m in ("ld1rob", "ld1roh", "ld1row", "ld1rod")},
    **{m: "svebf16" for m in ("bfdot", "bfmmla", "bfmlalb", "bfmlalt", "bfcvt", "bfcvtnt")},
}


class Sve2NotImplemented(EmukernError):
    """An advertised SVE2-family instruction emukern's SVE2 unit does not execute."""


class Sve2Unit:
    """One CPU's SVE2 unit: the features it was built with and its transfer microcode."""

    def __init__(self, pfr0: int, zfr0: int, xfer: SveTransfer) -> None:
        self.features = features_from_idregs(pfr0, zfr0)
        self.xfer = xfer
        self.insns = 0                       # instructions executed
        self.by_name: dict[str, int] = {}

    def decode(self, word: int) -> Sve2Insn | None:
        """The instruction the CPU executes for ``word``, or None (UNDEF)."""
        insn = decode.lookup(word)
        if insn is None or insn.feature not in self.features:
            return None
        return insn

    def check_unimplemented(self, word: int) -> None:
        """Raise :class:`Sve2NotImplemented` for an advertised, modelled but unimplemented
        SVE2-family word (see the module docstring); return for anything else."""
        if decode.lookup(word) is not None:
            return                           # implemented, just not advertised: a real UNDEF
        name = _disasm(word)
        if name is None:
            return                           # unallocated: UNDEF on every CPU
        feature = _feature_of(name)
        if feature in self.features and feature in decode.IMPLEMENTED_FEATURES:
            raise Sve2NotImplemented(
                f"the SVE2-family instruction {name} ({word:#010x}, {feature}) is advertised by "
                f"the CPU model's ID registers but not implemented by emukern's SVE2 unit",
                hint="run with --cpu-model unicorn-max (its ID registers advertise only what "
                     "the machine executes), or avoid the instruction")

    def step(self, word: int, insn: Sve2Insn, vl_bytes: int, uc: Any, pc: int,
             xreg: Callable[[int], int]) -> bool:
        """Execute ``insn`` on the live state; the PC is set past it.  False (state untouched,
        PC unchanged) when the word is unallocated inside its class."""
        x = self.xfer
        saved = x.open()
        try:
            x.save_z_p(0)
            buf = x.buf
            z = [bytearray(buf[Z_AREA + n * vl_bytes:Z_AREA + (n + 1) * vl_bytes]) for n in range(32)]
            pb = vl_bytes // 8
            p = [int.from_bytes(buf[P_AREA + n * pb:P_AREA + (n + 1) * pb], "little") for n in range(16)]
            regs = SveRegs(vl_bytes, z, p, fpcr=uc.reg_read(A.UC_ARM64_REG_FPCR),
                           fpsr=uc.reg_read(A.UC_ARM64_REG_FPSR),
                           nzcv=uc.reg_read(A.UC_ARM64_REG_NZCV) >> 28, xreg=xreg)
            try:
                insn.fn(word, regs)
            except Sve2Undefined:
                x.close(saved, pc)
                return False
            if regs.written_z:
                for n in regs.written_z:
                    buf[Z_AREA + n * vl_bytes:Z_AREA + (n + 1) * vl_bytes] = bytes(regs.z[n])
                x.load_z(min(regs.written_z), max(regs.written_z))
            if regs.written_p:
                for n in regs.written_p:
                    buf[P_AREA + n * pb:P_AREA + (n + 1) * pb] = regs.p[n].to_bytes(pb, "little")
                x.load_p(min(regs.written_p), max(regs.written_p))
        except BaseException:
            x.close(saved, pc)
            raise
        x.close(saved, pc + 4)
        if regs.flags_written:
            uc.reg_write(A.UC_ARM64_REG_NZCV, regs.nzcv << 28)
        if regs.fpsr_written:
            uc.reg_write(A.UC_ARM64_REG_FPSR, regs.fpsr)
        self.insns += 1
        self.by_name[insn.name] = self.by_name.get(insn.name, 0) + 1
        return True


def _feature_of(text: str) -> str:
    mnemonic, _, ops = text.partition(" ")
    if mnemonic == "fmmla" and ops.startswith("z") and ".d" in ops.split(",")[0]:
        return "svef64mm"
    if mnemonic in ("zip1", "zip2", "uzp1", "uzp2", "trn1", "trn2") and ".q" in ops:
        return "svef64mm"                  # the 128-bit element permutes come with F64MM
    return _MNEMONIC_FEATURE.get(mnemonic, "sve2")


_md: Any = None


def _disasm(word: int) -> str | None:
    """The disassembler's text for a word, or None when it does not decode (capstone 5 knows
    SVE2 and the matrix extensions)."""
    global _md
    if _md is None:
        import capstone
        _md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    for i in _md.disasm(word.to_bytes(4, "little"), 0):
        return f"{i.mnemonic} {i.op_str}".strip()
    return None
