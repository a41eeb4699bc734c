"""The SVE2 unit: AArch64 SVE2-family instructions Unicorn 2.1.4 cannot execute.

Unicorn 2.1.4 is QEMU 5.0's translator, which implements SVE but none of SVE2 or the SVE
matrix/bf16 extensions that QEMU 7.2's ``max`` CPU (emukern's default arm64 ID registers)
advertises.  The CPU takes an UNDEF for such a word; before the kernel sees it, the machine
hands it to this unit, which executes it on the architectural Z/P/FFR/FPCR/FPSR/NZCV state --
the way the RVV unit executes RVV for the RISC-V CPU.  It is hardware: it knows nothing of
tasks or policies.

Layout: ``state.SveRegs`` is the register file one instruction sees; every instruction module
exports ``INSNS``, a tuple of ``state.Sve2Insn`` (mask/value encoding class, the ID-register
feature it belongs to, and the function that executes it).
"""
