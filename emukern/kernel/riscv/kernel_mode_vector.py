"""Kernel-mode vector on RISC-V — mirrors arch/riscv/kernel/kernel_mode_vector.c and the
vectorised user copy of arch/riscv/lib/{uaccess.S, uaccess_vector.S, riscv_v_helpers.c}.

Since Linux 6.8 ``__asm_copy_to_user``/``__asm_copy_from_user`` hand a copy of at least
``CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD`` bytes (default 768) to ``enter_vector_usercopy()``, which
brackets an RVV copy loop with ``kernel_vector_begin()``/``kernel_vector_end()``.  Those borrow the
*user's* vector register file:

* ``kernel_vector_begin`` saves the user context with ``riscv_v_vstate_save`` — which writes it
  back only if sstatus.VS is Dirty — and calls ``riscv_v_vstate_set_restore``, so the task's
  context is reloaded from memory on the way back to user (TIF_RISCV_V_DEFER_RESTORE);
* the copy loop overwrites v0-v7 (one e8/m8 group) and vl/vtype;
* ``kernel_vector_end`` turns V off for the kernel again.

What the user sees afterwards depends on both modelled changes.  Before "treat VS_INITIAL as
discard", syscall entry left a used context Dirty (clobbered or not, per the sysctl), so the save
in ``kernel_vector_begin`` captures the live registers and the restore gives them back.  After it,
syscall entry leaves VS=Initial: nothing is saved, ``riscv_v_vstate_set_restore`` marks the
context Clean, and the return to user reloads the *last saved* context — a stale one — without
the task ever blocking.  With ``abi.riscv_v_vstate_discard=0`` that breaks the knob's promise that
vector registers survive a syscall; with the knob at 1 the registers are unspecified anyway.

The copy runs as real RVV instruction words on the CPU's unit (the loop of uaccess_vector.S:
``vsetvli``/``vle8ff.v``/``csrr vl``/``vse8.v`` plus four scalar instructions per iteration), so
its cycles come from the RVV cost model.  This models the non-preemptive configuration
(``get_cpu_vector_context``); with ``CONFIG_RISCV_ISA_V_PREEMPTIVE`` Linux saves the same Dirty-only
user context on entry (``riscv_v_start_kernel_context``) and also calls set_restore, so the user
visible outcome is the same.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel.riscv import vector
from emukern.machine.cpu_riscv import VS_NAMES, VS_OFF, RiscvCpu

if TYPE_CHECKING:
    from emukern.kernel.kernel import Kernel
    from emukern.kernel.task import Task

# __asm_vector_usercopy's loop (pDst=a0, pSrc=a1, iNum=a2, iVL=a3, vData=v0, LMUL m8);
# words checked against llvm-mc in tests/kernel/riscv/test_kernel_mode_vector.py
W_VSETVLI_A3_A2_E8M8 = 0x0C3676D7          # vsetvli a3, a2, e8, m8, ta, ma
W_VLE8FF_V0_A1 = 0x03058007                # vle8ff.v v0, (a1)
W_CSRR_A3_VL = 0xC20026F3                  # csrr a3, vl
W_VSE8_V0_A0 = 0x02050027                  # vse8.v v0, (a0)
USERCOPY_LOOP = (W_VSETVLI_A3_A2_E8M8, W_VLE8FF_V0_A1, W_CSRR_A3_VL, W_VSE8_V0_A0)
SCALAR_PER_ITER = 4                         # add pSrc / add pDst / sub iNum / bnez
SCALAR_BEGIN_END = 2 + 2                    # riscv_v_enable/disable, SR_SUM set/clear

KBUF = 0xFFFF_FFD8_0000_0000                # where the kernel-side buffer lives in the model


class _UserCopyMemory:
    """What the copy loop's loads and stores reach: the user's address space below the kernel
    buffer's address, the kernel buffer at it (a user address that faults is a MemoryFault)."""

    def __init__(self, task: "Task", kbuf: bytearray) -> None:
        self.mm = task.mm
        self.kbuf = kbuf

    def load(self, addr: int, size: int) -> bytes:
        if addr >= KBUF:
            off = addr - KBUF
            return bytes(self.kbuf[off: off + size])
        return self.mm.read(addr, size)

    def store(self, addr: int, data: bytes) -> None:
        if addr >= KBUF:
            off = addr - KBUF
            self.kbuf[off: off + len(data)] = data
        else:
            self.mm.write(addr, data)


def usercopy_threshold(k: "Kernel") -> int:
    """riscv_v_usercopy_threshold (CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD); 0 = never vectorise."""
    return int(k.config.riscv_v_ucopy_threshold)


def may_use_vector_usercopy(k: "Kernel", cpu: RiscvCpu, n: int) -> bool:
    """The test at the top of __asm_copy_{to,from}_user: has_vector() and n >= the threshold
    (may_use_simd() is true in syscall context)."""
    t = usercopy_threshold(k)
    return cpu.rvv is not None and t > 0 and n >= t and not k.percpu[cpu.index].kernel_mode_v


def kernel_vector_begin(k: "Kernel", cpu: RiscvCpu, task: "Task") -> str:
    """get_cpu_vector_context + riscv_v_vstate_save (Dirty only) + riscv_v_vstate_set_restore."""
    k.percpu[cpu.index].kernel_mode_v = True   # RISCV_KERNEL_MODE_V: no nesting, no preemption
    vs_before = cpu.vs
    saved = vs_before == vector.VS_DIRTY        # riscv_v_vstate_save writes back only Dirty
    if vs_before != VS_OFF:
        vector.riscv_v_vstate_save(k, cpu, task)
        vector.riscv_v_vstate_set_restore(k, cpu, task)
    k.kernel_vector_regions += 1
    return (f"kernel_vector_begin: VS={VS_NAMES[vs_before]}, "
            + ("user context saved" if saved else "nothing saved" if vs_before != VS_OFF else "V off for the task")
            + (f", restore pending (VS={VS_NAMES[cpu.vs]})" if vs_before != VS_OFF else ""))


def kernel_vector_end(k: "Kernel", cpu: RiscvCpu, task: "Task") -> None:
    """riscv_v_disable + put_cpu_vector_context."""
    k.percpu[cpu.index].kernel_mode_v = False


def __asm_vector_usercopy(k: "Kernel", cpu: RiscvCpu, task: "Task", dst: int, src: int, n: int,
                          kbuf: bytearray) -> int:
    """The RVV copy loop; returns the bytes left (non-zero when a user access faulted)."""
    regs = vector._StubRegs({10: dst, 11: src, 12: n})
    mem = _UserCopyMemory(task, kbuf)
    unit = cpu.rvv
    cycles = SCALAR_BEGIN_END
    try:
        while regs.x[12]:
            for w in USERCOPY_LOOP:
                cycles += unit.execute(w, regs, mem).cycles
            step = regs.x[13]
            regs.write(11, regs.x[11] + step)
            regs.write(10, regs.x[10] + step)
            regs.write(12, regs.x[12] - step)
            cycles += SCALAR_PER_ITER
    except MemoryFault:
        unit.vstart = 0                      # the fixup path: the kernel resets vstart
    cpu.charge(cycles)
    k.percpu[cpu.index].kernel_vector_cycles += cycles
    return regs.x[12]


def enter_vector_usercopy(k: "Kernel", cpu: RiscvCpu, task: "Task", user: int, n: int,
                          data: bytes | None) -> tuple[bytes, str]:
    """copy_from_user (``data`` None: returns the n user bytes) or copy_to_user (writes ``data``)
    through kernel-mode vector.  A faulting user access leaves the rest to the scalar fallback,
    which raises MemoryFault (the syscall's -EFAULT), as fallback_scalar_usercopy does."""
    note = kernel_vector_begin(k, cpu, task)
    kbuf = bytearray(n) if data is None else bytearray(data)
    try:
        if data is None:
            left = __asm_vector_usercopy(k, cpu, task, KBUF, user, n, kbuf)
        else:
            left = __asm_vector_usercopy(k, cpu, task, user, KBUF, n, kbuf)
    finally:
        kernel_vector_end(k, cpu, task)
    if left:
        done = n - left
        if data is None:
            kbuf[done:] = task.mm.read(user + done, left)
        else:
            task.mm.write(user + done, bytes(kbuf[done:]))
    return bytes(kbuf), note
