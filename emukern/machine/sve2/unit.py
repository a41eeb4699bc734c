"""The SVE2 unit: decode, feature gate, and execution of one SVE2-family word on the CPU state.

The CPU (machine/cpu_arm64.py) offers the unit every EL0 UNDEF whose word lies in the SVE
encoding space while EL0 may use SVE.  When :meth:`Sve2Unit.decode` finds an instruction the
unit implements and the CPU model advertises, :meth:`Sve2Unit.begin` starts it: the microcode of
:mod:`.xfer` stores Z/P, the instruction runs on them in Python at the SAVE ``brk``
(:meth:`Sve2Unit.on_brk`), LOAD writes back what it wrote, and the PC moves past it -- one
retired instruction.  Otherwise (not advertised, not an SVE2-family instruction, or an
unallocated field inside a class) the CPU takes the UNDEF as before.

Honest failure: a word that *is* an SVE2-family instruction (the disassembler knows it), of a
feature the CPU model advertises and the unit models, but that the unit does not implement,
raises :class:`Sve2NotImplemented` instead of a SIGILL the modelled CPU would never raise -- a
program that probes the ID registers and then uses the feature would otherwise be told the
hardware lacks what it just advertised.  The hint names ``--cpu-model unicorn-max`` (which
advertises only what Unicorn executes).  A feature of which the unit implements nothing yet
(e.g. the matrix-multiply ones before their module is filled) keeps today's UNDEF.
"""
from __future__ import annotations

from typing import Any

from unicorn import arm64_const as A

from emukern.errors import EmukernError, MemoryFault
from emukern.machine.trap import ESR_EC_DABT_LOW, Trap, TrapKind

from . import decode
from .features import features_from_idregs
from .state import Sve2Insn, Sve2Undefined, SveRegs
from . import xfer

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
    # SME / SVE2.1 words in the SVE space (no CPU model here advertises them: they stay UNDEF)
    **{m: "sme" for m in ("psel", "sclamp", "uclamp", "revd", "ld1q", "st1q")},
    **{m: "svebf16" for m in ("bfdot", "bfmmla", "bfmlalb", "bfmlalt", "bfcvt", "bfcvtnt")},
}


ESR_IL = 1 << 25                 # a 32-bit instruction (as cpu_arm64's syndromes)


class Sve2NotImplemented(EmukernError):
    """An advertised SVE2-family instruction emukern's SVE2 unit does not execute."""


class _Op:
    """One SVE2 instruction in flight: its word, where it is, what the guest had in x0/x1 and in
    the counter, and which microcode ``brk`` comes next."""
    __slots__ = ("word", "insn", "pc", "x01", "count", "deadline", "regs", "expect", "end", "ran")

    def __init__(self, word: int, insn: Sve2Insn, pc: int, x01: tuple[int, int], count: int,
                 deadline: int) -> None:
        self.word, self.insn, self.pc, self.x01 = word, insn, pc, x01
        self.count, self.deadline = count, deadline
        self.regs: SveRegs | None = None
        self.expect = xfer.SAVE_BRK
        self.end = pc + 4                 # the PC after the last instruction of the run
        self.ran: list[str] = []


class Sve2Unit:
    """One CPU's SVE2 unit: the features it was built with, its transfer page, and the
    instruction in flight (see :mod:`.xfer` for how a transfer runs inside the guest's run)."""

    def __init__(self, pfr0: int, zfr0: int, cpu: Any) -> None:
        self.features = features_from_idregs(pfr0, zfr0)
        self.cpu = cpu                       # the Arm64Cpu: uc, counter, code guard, registers
        self.page = xfer.TransferPage(cpu)
        self.op: _Op | None = None
        self.resume = False                  # the run just ended by a page-permission change
        self.insns = 0                       # instructions executed
        self.runs = 0                        # transfers (a run of consecutive words is one)
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

    # ---- one instruction: begin (from the UNDEF), then the microcode brks ----------------------
    def begin(self, pc: int, word: int, insn: Sve2Insn) -> None:
        """From the UNDEF hook: send the CPU into SAVE (x0/x1 = the transfer page's areas)."""
        cpu = self.cpu
        c = cpu.counter
        # the trapping word was counted as attempted: that count is its one retirement
        op = _Op(word, insn, pc, (cpu.reg(0), cpu.reg(1)), c.count, c.deadline)
        self.op = op
        self.runs += 1
        self.resume = False
        self.page.open()                     # (and the code guard)
        cpu.set_reg(0, xfer.XFER_BASE + xfer.Z_AREA)
        cpu.set_reg(1, xfer.XFER_BASE + xfer.P_AREA)
        c.deadline = op.count + xfer.SEQ_LEN + 8     # bounded, and never cut by a tick
        cpu.set_pc(xfer.save_entry())

    def on_brk(self, intno: int, pc: int) -> int | None:
        """A trap while an instruction is in flight: the brk closing SAVE or LOAD.  Returns the
        word when the instruction turned out UNDEF (unallocated field): the CPU then takes the
        exception at its PC; None otherwise."""
        op = self.op
        assert op is not None
        cpu = self.cpu
        if intno != 7 or pc != op.expect:
            self._finish(op.pc)
            raise xfer.MicrocodeOverrun(f"exception {intno} at {pc:#x} in the SVE2 unit's microcode "
                                        f"(expected the brk at {op.expect:#x}): emulator error")
        cpu.counter.count = op.count               # microcode is not a guest instruction
        if op.expect == xfer.SAVE_BRK:
            try:
                regs = self._execute(op)
            except Sve2Undefined:
                self._finish(op.pc)
                return op.word
            except MemoryFault as exc:
                self._finish(op.pc)
                self._data_abort(op, exc)
                return None
            except BaseException:
                self._finish(op.pc)
                raise
            try:
                self._run_on(op, regs)
            except BaseException:
                self._finish(op.pc)
                raise
            self._write_back(regs)
            if regs.written_z or regs.written_p:
                op.regs = regs
                op.expect = xfer.LOAD_BRK
                cpu.counter.deadline = op.count + xfer.SEQ_LEN + 8
                cpu.set_pc(xfer.load_entry(min(regs.written_z, default=None),
                                           min(regs.written_p, default=None)))
                return None
            op.regs = regs
        self._retire(op)
        return None

    def _execute(self, op: _Op) -> SveRegs:
        cpu = self.cpu
        vb = cpu.vl // 8
        pb = vb // 8
        buf = self.page.buf
        z = [bytearray(buf[n * vb:(n + 1) * vb]) for n in range(32)]
        p = [int.from_bytes(buf[xfer.P_AREA + n * pb:xfer.P_AREA + (n + 1) * pb], "little")
             for n in range(16)]
        x0, x1 = op.x01

        def xreg(n: int) -> int:
            return x0 if n == 0 else x1 if n == 1 else cpu.reg(n)
        rd = cpu._read                       # the CPU's direct register path
        mm = cpu.mm

        def read_mem(addr: int, n: int) -> bytes:
            return mm.read(addr, n)

        def write_mem(addr: int, data: bytes) -> None:
            mm.write(addr, data)

        def probe_write(addr: int, n: int) -> None:
            mm.read(addr, n, "w")              # a store's permission check, nothing stored
        regs = SveRegs(vb, z, p, fpcr=rd(A.UC_ARM64_REG_FPCR), fpsr=rd(A.UC_ARM64_REG_FPSR),
                       nzcv=rd(A.UC_ARM64_REG_NZCV) >> 28, xreg=xreg, read_mem=read_mem,
                       write_mem=write_mem, probe_write=probe_write, sp_reg=lambda: cpu.sp)
        op.insn.fn(op.word, regs)
        op.ran.append(op.insn.name)
        return regs

    def _run_on(self, op: _Op, regs: SveRegs) -> None:
        """Execute the SVE2 words that follow on the same register copy, as the RVV unit runs a
        run of vector instructions in one trap: no user instruction runs in between, so the
        transfer page stays open and Z/P move once.  Each one counts as one instruction; the
        run stops before the counter's deadline (a tick, a debugger step: less the charges not
        yet committed to it), at any other word, and when the CPU's ``batch_vector`` is off."""
        cpu = self.cpu
        if not cpu.batch_vector:
            return
        while True:
            room = op.deadline - (cpu.extra_user + cpu.sys_cycles + cpu.idle_cycles - cpu._committed)
            if op.count + 1 >= room:
                return
            if op.end & 0xFFF:
                # same page as the word just executed: executable, read it straight from Unicorn
                word = int.from_bytes(cpu.uc.mem_read(op.end, 4), "little")
            else:
                word = cpu._word(op.end)
            if word is None or (word >> 25) & 0xF != 0b0010:
                return
            insn = self.decode(word)
            if insn is None:
                return                        # the CPU takes it (UNDEF, or an SVE word Unicorn runs)
            snap = (list(regs.z), list(regs.p), regs.nzcv, regs.fpsr, set(regs.written_z),
                    set(regs.written_p), regs.flags_written, regs.fpsr_written)
            try:
                insn.fn(word, regs)
            except (Sve2Undefined, MemoryFault):
                # nothing of it happened (a store checks every address before it writes): the
                # CPU takes the word again on its own, and its UNDEF or data abort with it
                (regs.z, regs.p, regs.nzcv, regs.fpsr, regs.written_z, regs.written_p,
                 regs.flags_written, regs.fpsr_written) = snap
                return
            op.ran.append(insn.name)
            op.count += 1
            op.end += 4

    def _data_abort(self, op: _Op, exc: MemoryFault) -> None:
        """A load or store of the unit touched a bad address: the data abort the instruction
        takes (at its own PC, nothing of it retired), as the CPU's own loads raise it."""
        cpu = self.cpu
        wnr = (1 << 6) if exc.access == "w" else 0
        cpu._deliver(Trap(TrapKind.MEM_FAULT, cpu.arch, op.pc, cpu=cpu.index, addr=exc.addr,
                          access=exc.access, insn=op.word,
                          esr=(ESR_EC_DABT_LOW << 26) | ESR_IL | wnr))

    def _write_back(self, regs: SveRegs) -> None:
        vb = regs.vl
        pb = vb // 8
        buf = self.page.buf
        for n in regs.written_z:
            buf[n * vb:(n + 1) * vb] = bytes(regs.z[n])
        for n in regs.written_p:
            buf[xfer.P_AREA + n * pb:xfer.P_AREA + (n + 1) * pb] = regs.p[n].to_bytes(pb, "little")

    def _retire(self, op: _Op) -> None:
        regs = op.regs
        assert regs is not None
        wr = self.cpu._write
        if regs.flags_written:
            wr(A.UC_ARM64_REG_NZCV, regs.nzcv << 28)
        if regs.fpsr_written:
            wr(A.UC_ARM64_REG_FPSR, regs.fpsr)
        self._finish(op.end)
        self.insns += len(op.ran)
        for name in op.ran:
            self.by_name[name] = self.by_name.get(name, 0) + 1

    def _finish(self, pc: int) -> None:
        """Back to the guest at ``pc``: x0/x1, the counter's deadline, the page and guard."""
        op = self.op
        assert op is not None
        cpu = self.cpu
        cpu.set_reg(0, op.x01[0])
        cpu.set_reg(1, op.x01[1])
        cpu.set_pc(pc)
        cpu.counter.count = op.count
        cpu.counter.deadline = op.deadline
        self.page.close()                    # (and the code guard)
        self.op = None
        self.resume = True         # closing the page may have ended the run: it goes on

    def abort(self) -> None:
        """The run ended with an instruction in flight (an emulator error): clean up."""
        if self.op is not None:
            self._finish(self.op.pc)
        self.resume = False


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
