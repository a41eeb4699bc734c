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
its cycles come from the RVV cost model.  Without ``CONFIG_RISCV_ISA_V_PREEMPTIVE`` the region
is not preemptible (``get_cpu_vector_context`` raises preempt_count); a tick inside it is acted on
at its end (``local_bh_enable``, full model only).  With it (``--kconfig PREEMPT=full``, where it
defaults to y) Linux saves the same Dirty-only user context on entry
(``riscv_v_start_kernel_context``) and calls set_restore, and the region itself is preemptible:
the kernel's own vector registers are saved at switch-out (``__switch_to_vector``) and reloaded
when the interrupt returns into the region (``riscv_v_context_nesting_end``), see
:class:`KernelVCopy`.  What the user sees afterwards is the same either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel.preempt import (IRQ, PREEMPT_ENABLE, PREEMPTED, preempt_disable, preempt_enable,
                                    preempt_point, riscv_v_preemptive)
from emukern.kernel.arch.riscv import vector
from emukern.machine.cpu_riscv import VS_NAMES, VS_OFF, RiscvCpu

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
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


@dataclass
class KernelVCopy:
    """A vectorised user copy in progress: the loop's scalar registers, the word it is at, its
    buffers — and, with CONFIG_RISCV_ISA_V_PREEMPTIVE, the task's kernel vector context
    (``thread.kernel_vstate``, allocated per task by riscv_v_thread_alloc at copy_thread) and the
    RISCV_PREEMPT_V flags: ``started`` (the region owns V preemptibly), ``dirty`` (the kernel wrote
    vector registers since the last save) and ``need_restore``."""
    regs: vector._StubRegs
    mem: _UserCopyMemory
    kbuf: bytearray
    n: int
    word: int = 0
    started: bool = False
    dirty: bool = False
    need_restore: bool = False
    kvstate: vector.VState | None = None
    note: str = ""
    switches: int = 0


def kernel_vector_begin(k: "Kernel", cpu: RiscvCpu, task: "Task", preemptible: bool = False) -> str:
    """kernel_vector_begin.  Without CONFIG_RISCV_ISA_V_PREEMPTIVE: get_cpu_vector_context
    (local_bh_disable — preempt_count goes up, so nothing preempts the region) and
    riscv_v_vstate_save (Dirty only).  With it, riscv_v_start_kernel_context: the region stays
    preemptible (RISCV_PREEMPT_V), the same Dirty-only save of the user context.  Both then
    riscv_v_vstate_set_restore for the return to user."""
    if not preemptible:
        k.percpu[cpu.index].kernel_mode_v = True   # RISCV_KERNEL_MODE_V: no nesting
        preempt_disable(task)                       # local_bh_disable's SOFTIRQ_DISABLE_OFFSET
    vs_before = cpu.vs
    saved = vs_before == vector.VS_DIRTY        # riscv_v_vstate_save writes back only Dirty
    if vs_before != VS_OFF:
        vector.riscv_v_vstate_save(k, cpu, task)
        vector.riscv_v_vstate_set_restore(k, cpu, task)
    k.kernel_vector_regions += 1
    return (f"kernel_vector_begin{' (preemptible)' if preemptible else ''}: VS={VS_NAMES[vs_before]}, "
            + ("user context saved" if saved else "nothing saved" if vs_before != VS_OFF else "V off for the task")
            + (f", restore pending (VS={VS_NAMES[cpu.vs]})" if vs_before != VS_OFF else ""))


def kernel_vector_end(k: "Kernel", cpu: RiscvCpu, task: "Task", preemptible: bool = False,
                      in_loop: bool = False) -> bool:
    """riscv_v_disable + put_cpu_vector_context (or riscv_v_stop_kernel_context).  True when the
    local_bh_enable that ends a non-preemptible region is a point where the full model preempts
    (preempt_check_resched: a tick came during the region)."""
    if preemptible:
        return False
    k.percpu[cpu.index].kernel_mode_v = False
    if not in_loop:                     # a one-shot copy: nothing could act on the point here
        task.preempt_count -= 1
        return False
    return preempt_enable(k, cpu, task)


def _copy_loop(k: "Kernel", cpu: RiscvCpu, task: "Task", st: KernelVCopy) -> bool:
    """The RVV copy loop from where ``st`` is; False when an interrupt preempted it between two
    instructions (only in a preemptible region).  A faulting user access ends it early (the bytes
    left stay in a2 for the scalar fallback)."""
    regs, unit = st.regs, cpu.rvv
    pc = k.percpu[cpu.index]
    try:
        while regs.x[12]:
            while st.word < len(USERCOPY_LOOP):
                c = unit.execute(USERCOPY_LOOP[st.word], regs, st.mem).cycles
                cpu.charge(c)
                pc.kernel_vector_cycles += c
                st.word += 1
                st.dirty = True                  # the kernel's sstatus.VS is Dirty now
                if st.started and (cpu.now >= pc.next_tick or pc.need_resched) \
                        and preempt_point(k, cpu, task, IRQ, "kernel-mode vector copy"):
                    return False
            step = regs.x[13]
            regs.write(11, regs.x[11] + step)
            regs.write(10, regs.x[10] + step)
            regs.write(12, regs.x[12] - step)
            cpu.charge(SCALAR_PER_ITER)
            pc.kernel_vector_cycles += SCALAR_PER_ITER
            st.word = 0
    except MemoryFault:
        unit.vstart = 0                      # the fixup path: the kernel resets vstart
    return True


def __asm_vector_usercopy(k: "Kernel", cpu: RiscvCpu, task: "Task", dst: int, src: int, n: int,
                          kbuf: bytearray) -> int:
    """The RVV copy loop, run to its end; returns the bytes left (non-zero when a user access faulted)."""
    st = KernelVCopy(vector._StubRegs({10: dst, 11: src, 12: n}), _UserCopyMemory(task, kbuf), kbuf, n)
    cpu.charge(SCALAR_BEGIN_END)
    k.percpu[cpu.index].kernel_vector_cycles += SCALAR_BEGIN_END
    _copy_loop(k, cpu, task, st)
    return st.regs.x[12]


# ---- the user copy, resumable across a preemption (the switch halves are in vector.py) ------------
def enter_vector_usercopy(k: "Kernel", cpu: RiscvCpu, task: "Task", user: int, n: int,
                          data: bytes | None, res: Any = None) -> tuple[Any, str]:
    """copy_from_user (``data`` None: returns the n user bytes) or copy_to_user (writes ``data``)
    through kernel-mode vector.  A faulting user access leaves the rest to the scalar fallback,
    which raises MemoryFault (the syscall's -EFAULT), as fallback_scalar_usercopy does.

    ``res`` (kernel/preempt.py) is the progress of a long syscall loop: with
    CONFIG_RISCV_ISA_V_PREEMPTIVE (PREEMPT=full) an interrupt can preempt the copy between two
    of its instructions; it then returns (PREEMPTED, note) with the loop kept in ``res.kvec``,
    and the continuation resumes the loop — restoring the kernel vector context first."""
    preemptible = res is not None and riscv_v_preemptive(k) and not task.preempt_count
    st: KernelVCopy | None = res.kvec if res is not None else None
    note = ""
    if st is None:
        note = kernel_vector_begin(k, cpu, task, preemptible)
        kbuf = bytearray(n) if data is None else bytearray(data)
        dst, src = (KBUF, user) if data is None else (user, KBUF)
        st = KernelVCopy(vector._StubRegs({10: dst, 11: src, 12: n}), _UserCopyMemory(task, kbuf), kbuf, n,
                         started=preemptible)
        cpu.charge(SCALAR_BEGIN_END)
        k.percpu[cpu.index].kernel_vector_cycles += SCALAR_BEGIN_END
    elif st.need_restore:
        # riscv_v_context_nesting_end: back in the region after the switch, reload the kernel
        # vector context saved at switch-out and mark it clean
        if st.kvstate is not None:
            vector.__riscv_v_vstate_restore(k, cpu, st.kvstate)
            k.preempt_stats.kernel_vstate_restores += 1
        st.need_restore = False
        st.dirty = False
    try:
        done = _copy_loop(k, cpu, task, st)
    except BaseException:  # noqa: BLE001 - cleanup only: drop the half-done copy state, then re-raise
        if res is not None:
            res.kvec = None
        kernel_vector_end(k, cpu, task, st.started)
        raise
    if not done:
        res.kvec = st
        return PREEMPTED, note
    if res is not None:
        res.kvec = None
    if kernel_vector_end(k, cpu, task, st.started, in_loop=res is not None) and res is not None:
        res.preempt_after = PREEMPT_ENABLE
    kbuf = st.kbuf
    left = st.regs.x[12]
    if left:
        done_b = n - left
        if data is None:
            kbuf[done_b:] = task.mm.read(user + done_b, left)
        else:
            task.mm.write(user + done_b, bytes(kbuf[done_b:]))
    return bytes(kbuf), note
