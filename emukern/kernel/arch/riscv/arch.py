"""RISC-V kernel glue: syscall ABI (a7, a0-a5 -> a0), FP context, traps, and the vector hooks.

The vector-state policy lives in :mod:`emukern.kernel.arch.riscv.vector` (arch/riscv/kernel/vector.c,
arch/riscv/include/asm/vector.h); this file only calls its hook points where Linux does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel.arch.riscv import syscalls as riscv_syscalls
from emukern.kernel.arch.base import ArchBase
from emukern.kernel.arch.riscv import signal as riscv_signal
from emukern.kernel.arch.riscv import vector
from emukern.machine import regs
from emukern.kernel.arch.riscv import regset as riscv_regset

from emukern.kernel.thread_info import TIF_RISCV_V_DEFER_RESTORE
from emukern.machine.cpu_riscv import VS_CLEAN, VS_DIRTY, VS_INITIAL, VS_OFF, RiscvCpu
from emukern.kernel.arch.riscv import kernel_mode_vector as kmv
from emukern.kernel.arch.riscv.hwprobe import machine_isa
from emukern.kernel.arch.riscv.hwprobe import riscv_cpuinfo
from emukern.loader.stack import riscv_isa_hwcap

# sstatus.FS shares the VS encoding (SR_FS_OFF/INITIAL/CLEAN/DIRTY)
FS_OFF, FS_INITIAL, FS_CLEAN, FS_DIRTY = VS_OFF, VS_INITIAL, VS_CLEAN, VS_DIRTY
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.task import Task

A0, A7, SP, TP = 10, 17, 2, 4
_A0_REG = regs.regid("riscv64", "a0")


class RiscvThread:
    """thread_struct for RISC-V: scalar FP context plus the vector state (vector.py).

    ``fs`` is the task's saved ``regs->status & SR_FS`` while it is not on a CPU; ``fp`` its
    ``thread.fstate`` (None: all zeros, never saved)."""

    def __init__(self) -> None:
        self.fp: dict[str, Any] | None = None
        self.fs: int = FS_INITIAL       # start_thread: SR_FS_INITIAL when the CPU has an FPU
        self.v: Any = None


class RiscvArch(ArchBase[RiscvCpu]):
    SIGNAL: Any = riscv_signal     # setup_rt_frame / rt_sigreturn (arch/riscv/kernel/signal.c)
    name = "riscv64"
    uname_machine = "riscv64"
    timer_cause: int | None = (1 << 63) | 5     # scause of a supervisor timer interrupt
    SYSCALL_MODULES = (riscv_syscalls,)          # riscv_hwprobe, riscv_flush_icache

    ELF_MACHINE = 243    # EM_RISCV
    SYSCALL_ARG0_REG = 10    # a0
    MINSIGSTKSZ = 2048

    def user_sp(self, cpu: Any) -> int:
        return int(cpu.reg(2))           # sp is x2
    REGSETS = riscv_regset.RISCV_REGSETS
    SYSCALL_SLOTS = (0, 2, 17, 10, 10)    # user_regs_struct: pc, sp, a7, a0.., a0
    # arch/riscv/kernel/vdso/vdso.lds.S (6.12): every symbol under LINUX_4.15
    VDSO_SOURCE = "riscv64.S"
    VDSO_VERSION = "LINUX_4.15"
    VDSO_SYMBOLS = ("__vdso_rt_sigreturn", "__vdso_gettimeofday", "__vdso_clock_gettime",
                    "__vdso_clock_getres", "__vdso_getcpu", "__vdso_flush_icache",
                    "__vdso_riscv_hwprobe")
    VDSO_SIGRETURN = "__vdso_rt_sigreturn"

    def regset_get(self, child: Any, rs: Any) -> bytes:
        return riscv_regset.regset_get(self.k, child, rs)

    def regset_store(self, child: Any, rs: Any, full: bytes, words: list[int]) -> int:
        return riscv_regset.regset_store(self.k, child, rs, full, words)

    def core_thread_regsets(self, cpu: Any, t: Any, ctx: dict[str, Any]) -> tuple[bytes, bytes, bytes | None]:
        return riscv_regset.core_thread_regsets(self.k, cpu, t, ctx)

    def regset_access(self, task: Any, child: Any, rs: Any, write: bool, base: int, length: int) -> int | None:
        return riscv_regset.regset_access(self.k, task, child, rs, write, base, length)

    def make_cpu(self, index: int) -> RiscvCpu:
        c = self.k.config
        return RiscvCpu(index, self.k.clock, vlen=c.vlen, dlen=c.dlen, has_v=c.has_v)

    def boot(self) -> None:
        vector.riscv_v_setup(self.k)

    def hwcap(self) -> int:
        """riscv_fill_hwcap: one bit per single-letter extension of the harts' ISA string."""
        return riscv_isa_hwcap("rv64" + machine_isa(self.k)[0])

    def arch_dlinfo(self) -> list[tuple[int, int]]:
        """ARCH_DLINFO's cache entries, AT_L1I_CACHESIZE (40) .. AT_L3_CACHEGEOMETRY (47): the
        size and geometry of each cache level the device tree describes (cacheinfo).  The
        machine describes no caches (as QEMU's virt board, whose kernels give all eight as 0),
        so each is 0; the entries are there all the same, as Linux always emits them."""
        return [(t, 0) for t in range(40, 48)]

    def cpuinfo(self) -> str:
        return riscv_cpuinfo(self.k)

    def syscall_nr(self, cpu: RiscvCpu) -> int:
        return cpu.reg(A7)

    def syscall_args(self, cpu: RiscvCpu) -> tuple[int, ...]:
        return tuple(cpu.reg(i) for i in range(10, 16))

    def set_syscall_return(self, cpu: RiscvCpu, value: int) -> None:
        cpu.write_regid(_A0_REG, value)      # regs->a0 (hot path: straight to libunicorn)

    syscall_ret_regid = _A0_REG
    exit_work_tif = TIF_RISCV_V_DEFER_RESTORE      # exit_to_user below: nothing else to do

    def initial_context(self, entry: int, sp: int) -> dict[str, Any]:
        x = [0] * 32
        x[SP] = sp
        return {"x": x, "pc": entry}

    def clone_context(self, ctx: dict[str, Any], newsp: int, tls: int | None) -> dict[str, Any]:
        x = list(ctx["x"])
        x[A0] = 0
        if newsp:
            x[SP] = newsp
        if tls is not None:
            x[TP] = tls
        return {"x": x, "pc": ctx["pc"]}

    def new_thread_state(self, task: "Task", parent: "Task | None", exec_: bool) -> RiscvThread:
        th = RiscvThread()
        if parent is not None and parent.thread is not None:
            # arch_dup_task_struct: fstate_save(parent) first, so a Dirty live FP context is in
            # the copy (the parent is the current task of the CPU running clone)
            pcpu = self._cpu_running(parent)
            if pcpu is not None:
                self.fstate_save(pcpu, parent)
                th.fs = parent.thread.fs = pcpu.fs
            else:
                th.fs = parent.thread.fs
            th.fp = parent.thread.fp
        th.v = vector.riscv_v_new_task(self.k, task, parent, exec_)
        return th

    def _cpu_running(self, task: "Task") -> RiscvCpu | None:
        """The CPU ``task`` is current on (task.cpu is where it last ran), or None."""
        if self.k.percpu[task.cpu].curr is not task:
            return None
        cpu = self.k.cpus[task.cpu]
        assert isinstance(cpu, RiscvCpu)
        return cpu

    def exec_reset(self, cpu: RiscvCpu, task: "Task") -> None:
        assert isinstance(cpu, RiscvCpu)
        # flush_thread: the FP context is cleared; start_thread: SR_FS_INITIAL.  (Linux leaves
        # the live f registers as they were until the next restore; emukern zeroes them so an
        # exec'd image can never read its predecessor's values.)
        cpu.reset_fp()
        task.thread.fp = None
        task.thread.fs = FS_INITIAL
        cpu.fs = FS_INITIAL
        vector.riscv_v_exec(self.k, cpu, task)

    def exit_thread(self, cpu: RiscvCpu, task: "Task") -> None:
        vector.riscv_v_exit_thread(self.k, cpu, task)

    # --- hook points -------------------------------------------------------------------------
    def syscall_enter(self, cpu: RiscvCpu, task: "Task") -> str | None:
        """do_trap_ecall_u's riscv_v_vstate_discard(), whose VS-Off test Linux inlines at the
        call site: vector.riscv_v_syscall_enter, inline (a frame fewer on every syscall of a
        task using V; a change there is made here too)."""
        if cpu.vs == VS_OFF or cpu.rvv is None:
            return None                     # V never used (or off): nothing to discard
        # (through the module, where a plug-in's override of the kernel function is installed)
        decision = vector.riscv_v_vstate_discard(self.k, cpu, task)
        task.thread.v.last_decision = decision
        return decision

    def exit_to_user(self, cpu: RiscvCpu, task: "Task") -> str | None:
        """arch_exit_to_user_mode_prepare: vector.riscv_v_exit_to_user, inline (a frame fewer on
        every syscall of a task using V; a change there is made here too)."""
        k = self.k
        cpu.charge(k.cost.tif_check)        # the flag test (the only cost when it is clear)
        if not task.flags & TIF_RISCV_V_DEFER_RESTORE:     # the common case
            return None
        st = task.thread.v
        t = st.task                         # st.defer_restore, without the descriptor's frames
        if not t.flags & TIF_RISCV_V_DEFER_RESTORE:
            return None
        t.flags &= ~TIF_RISCV_V_DEFER_RESTORE
        st.last_decision = decision = vector.riscv_v_vstate_restore(k, cpu, task)
        return "return to user: " + decision

    # --- lazy FP: __switch_to_fpu (arch/riscv/include/asm/switch_to.h) ----------------------------
    def fstate_save(self, cpu: RiscvCpu, task: "Task", fs: int | None = None) -> bool:
        """fstate_save: only a Dirty context is written back (then marked Clean): a task that
        has not written an f register since its last save or restore costs nothing.  ``fs``:
        the CPU's FS when the caller has just read it (each read of sstatus is a trip into
        M-mode through Unicorn's register API)."""
        if (cpu.fs if fs is None else fs) != FS_DIRTY:
            return False
        task.thread.fp = cpu.save_fp()
        cpu.charge(self.k.cost.fp_save)
        cpu.fs = FS_CLEAN
        self.k.fp_saves += 1
        return True

    def fstate_restore(self, cpu: RiscvCpu, task: "Task") -> None:
        """fstate_restore: any context that is not Off is loaded (Initial included: its saved
        fstate is all zeros) and marked Clean."""
        th = task.thread
        if th.fs == FS_OFF:
            cpu.fs = FS_OFF
            return
        if th.fp is not None:
            cpu.load_fp(th.fp)
        else:
            cpu.reset_fp()
        cpu.charge(self.k.cost.fp_restore)
        cpu.fs = FS_CLEAN

    def switch_from(self, cpu: RiscvCpu, prev: "Task") -> None:
        """__switch_to: __switch_to_fpu's fstate_save(prev); riscv_v_vstate_save for vectors."""
        assert isinstance(cpu, RiscvCpu)
        if prev.alive:
            fs = cpu.fs
            # (fstate_save's own test first: only a Dirty context is saved)
            prev.thread.fs = FS_CLEAN if fs == FS_DIRTY and self.fstate_save(cpu, prev, fs) else fs
        vector.riscv_v_switch_from(self.k, cpu, prev)

    def switch_to(self, cpu: RiscvCpu, nxt: "Task") -> None:
        """__switch_to_fpu's fstate_restore(next), then the vector side."""
        assert isinstance(cpu, RiscvCpu)
        self.fstate_restore(cpu, nxt)
        vector.riscv_v_switch_to(self.k, cpu, nxt)

    def vector_usercopy(self, cpu: RiscvCpu, task: "Task", addr: int, n: int, data: bytes | None,
                        res: Any = None) -> Any:
        """raw_copy_{from,to}_user: copies of at least the threshold go through kernel-mode
        vector (enter_vector_usercopy); None means "not taken, copy with scalar code"."""
        assert isinstance(cpu, RiscvCpu)
        if not kmv.may_use_vector_usercopy(self.k, cpu, n):
            return None
        out, note = kmv.enter_vector_usercopy(self.k, cpu, task, addr, n, data, res)
        if note:
            text = (f"{'copy_from_user' if data is None else 'copy_to_user'} {n} bytes "
                    f"with kernel-mode vector: {note}")
            notes = self.k.syscall_notes
            # a long read/write copies page by page: the same note for each page is said once
            last = notes[-1] if notes else ""
            if last == text or last.startswith(text + " [x"):
                times = int(last.rsplit("[x", 1)[1][:-1]) if last != text else 1
                notes[-1] = f"{text} [x{times + 1}]"
            else:
                notes.append(text)
        return out

    def prctl(self, cpu: RiscvCpu, task: "Task", option: int, a2: int, a3: int, a4: int, a5: int) -> int | None:
        return vector.riscv_v_prctl(self.k, cpu, task, option, a2)

    TRAP_HANDLERS = {TrapKind.ILLEGAL: "do_trap_insn_illegal", TrapKind.MEM_FAULT: "do_page_fault",
                     TrapKind.BREAKPOINT: "do_trap_break"}

    def trap_handler_path(self, cpu: RiscvCpu, trap: Trap, classes: set[str]) -> str:
        if trap.kind is TrapKind.ILLEGAL and "first-use" in classes:
            return "do_trap_insn_illegal -> riscv_v_first_use_handler"
        return super().trap_handler_path(cpu, trap, classes)

    def handle_trap(self, cpu: RiscvCpu, task: "Task", trap: Trap) -> None:
        if trap.kind is TrapKind.ILLEGAL:
            trap.handler = self.TRAP_HANDLERS[TrapKind.ILLEGAL]
            # Linux: do_trap_insn_illegal -> riscv_v_first_use_handler before sending SIGILL
            if vector.riscv_v_first_use_handler(self.k, cpu, task, trap):
                return
        self.default_trap(cpu, task, trap)
