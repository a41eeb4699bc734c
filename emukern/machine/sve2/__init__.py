"""The SVE2 unit: AArch64 SVE2-family instructions Unicorn 2.1.4 cannot execute.

Unicorn 2.1.4 is QEMU 5.0's translator, which implements SVE but none of SVE2 or the SVE
matrix/bf16 extensions that QEMU 7.2's ``max`` CPU (emukern's default arm64 ID registers)
advertises.  The CPU takes an UNDEF for such a word; before the kernel sees it, the machine
hands it to this unit, which executes it on the architectural Z/P/FFR/FPCR/FPSR/NZCV state --
the way the RVV unit executes RVV for the RISC-V CPU.  It is hardware: it knows nothing of
tasks or policies.

Implemented (each module's docstring has the details): ``int_ops`` -- SQABS, SQNEG, EOR3,
BCAX, BSL, BSL1N, BSL2N, NBSL, XAR, PMUL, PMULLB/PMULLT (.Q: FEAT_SVE_PMULL128), WHILEGE/GT/HS/HI;
``int_arith`` -- ADDP, SMAXP, UMAXP, SMINP, UMINP, SQADD..UQSUBR, SHADD..UHSUBR, SADDL..UABDL B/T,
SADDW..USUBW B/T, MUL, SMULH, UMULH, SQDMULH, SQRDMULH, SMULL/UMULL/SQDMULL B/T, SMLAL/UMLAL/
SMLSL/UMLSL B/T; ``int_shift`` -- SSRA, USRA, SRSRA, URSRA, SRI, SLI, EORBT, EORTB, SADALP,
UADALP; ``crypto`` -- AESE, AESD, AESMC, AESIMC, SM4E, SM4EKEY, RAX1; ``bitperm`` --
BDEP, BEXT, BGRP; ``matmul`` -- the I8MM/F32MM/F64MM/BF16 instructions (separate work).
``features`` gates them by the CPU's ID registers, ``xfer`` is the Z/P transfer microcode,
``unit`` the instruction in flight, ``decode`` the table, ``bench`` the cost per instruction.

Layout: ``state.SveRegs`` is the register file one instruction sees; every instruction module
exports ``INSNS``, a tuple of ``state.Sve2Insn`` (mask/value encoding class, the ID-register
feature it belongs to, and the function that executes it).
"""
