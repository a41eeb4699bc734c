"""arm64 kernel glue: syscall ABI (x8, x0-x5 -> x0), context, and the trap/FP hook points.

Exception handling mirrors arch/arm64/kernel/entry-common.c: ``el0_undef`` -> ``do_el0_undef``
(traps.py), ``el0_sys`` -> ``do_el0_sys`` (traps.py), ``el0_sve_acc`` -> ``do_sve_acc``
(fpsimd.py); syscall entry calls ``fpsimd_syscall_enter``; return to user runs
``fpsimd_restore_current_state`` when TIF_FOREIGN_FPSTATE is set; ``__switch_to`` calls
``fpsimd_thread_switch``.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from emukern.kernel.arch.base import ArchBase
from emukern.kernel.arch.arm64 import entry_fpsimd, fpsimd, pointer_auth, tagged_addr, traps
from emukern.kernel.arch.arm64 import signal as arm64_signal
from emukern.kernel.arch.arm64.fault import do_alignment_fault, is_alignment_fault
from emukern.kernel.thread_info import TIF_TAGGED_ADDR
from emukern.machine import regs
from emukern.kernel.arch.arm64 import ptrace as arm64_ptrace
from emukern.kernel.arch.arm64 import regset as arm64_regset

from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.machine.trap import ESR_EC_SOFTSTP_LOW, Trap, TrapKind
from emukern.kernel.arch.arm64.cpufeature import build_cpu_id_regs, cpu_model_id_regs
from emukern.kernel.arch.arm64.hwcap import arm64_cpuinfo
from emukern.kernel.arch.arm64.vec_sysctl import sve_sysctl_init
from emukern.machine.arm64_idregs import CPU_MODELS

if TYPE_CHECKING:
    from emukern.kernel.task import Task


_X0 = regs.regid("arm64", "x0")      # regs->regs[0]: the syscall return register

class Arm64Arch(ArchBase[Arm64Cpu]):
    SIGNAL: Any = arm64_signal     # setup_rt_frame / rt_sigreturn (arch/arm64/kernel/signal.c)
    name = "arm64"
    uname_machine = "aarch64"
    _elf_hwcaps: tuple[int, int] | None = None     # setup_elf_hwcaps' answer, computed once
    ptrauth_generation = 0          # pointer-auth keys made so far (pointer_auth._random_key)
    TRAP_HANDLERS = {TrapKind.ILLEGAL: "do_el0_undef", TrapKind.SYSREG: "do_el0_sys",
                     TrapKind.SVE_ACCESS: "do_sve_acc", TrapKind.MEM_FAULT: "do_page_fault",
                     TrapKind.BREAKPOINT: "do_el0_brk"}

    ELF_MACHINE = 183    # EM_AARCH64
    MINSIGSTKSZ = 5120   # arm64's uapi: room for the largest SVE frame of its era
    WANT_RENAMEAT = True
    HAS_SA_RESTORER = True

    def user_sp(self, cpu: Any) -> int:
        return int(cpu.sp)

    def record_fault(self, task: Any, addr: int | None, trap: Any) -> None:
        """arm64_force_sig_fault: the fault address and ESR go into the frame (esr_context)."""
        st = task.sigstate
        st.fault_address = addr or 0
        st.fault_code = trap.esr or 0
    REGSETS = arm64_regset.ARM64_REGSETS
    SYSCALL_SLOTS = (32, 31, 8, 0, 0)     # user_pt_regs: pc, sp, x8, x0.., x0
    # arch/arm64/kernel/vdso/vdso.lds.S (6.12) without __kernel_getrandom: glibc uses the
    # getrandom syscall when the vDSO has no vgetrandom
    VDSO_SOURCE = "arm64.S"
    VDSO_VERSION = "LINUX_2.6.39"
    VDSO_SYMBOLS = ("__kernel_rt_sigreturn", "__kernel_gettimeofday", "__kernel_clock_gettime",
                    "__kernel_clock_getres")
    VDSO_SIGRETURN = "__kernel_rt_sigreturn"

    def regset_get(self, child: Any, rs: Any) -> bytes:
        return arm64_regset.regset_get(self.k, child, rs)

    def regset_store(self, child: Any, rs: Any, full: bytes, words: list[int]) -> int:
        return arm64_regset.regset_store(self.k, child, rs, full, words)

    def core_thread_regsets(self, cpu: Any, t: Any, ctx: dict[str, Any]) -> tuple[bytes, bytes, bytes | None]:
        return arm64_regset.core_thread_regsets(self.k, cpu, t, ctx)

    def regset_access(self, task: Any, child: Any, rs: Any, write: bool, base: int, length: int) -> int | None:
        return arm64_regset.regset_access(self.k, task, child, rs, write, base, length)

    def __init__(self, kernel: Any) -> None:
        super().__init__(kernel)
        # The two FP hook points every syscall passes (entry-common.c's fpsimd_syscall_enter and
        # the FP part of exit_to_user_mode) as partials of fpsimd.py's functions, bound here:
        # the kernel calls them straight, one Python frame fewer each per syscall.  Bound after
        # the kernel's plug-ins are loaded (Kernel.__init__), so a plug-in's replacement of
        # fpsimd_syscall_enter (its dispatcher, plugins.py) is what is bound.
        self.syscall_enter = functools.partial(fpsimd.fpsimd_syscall_enter, kernel)   # type: ignore[method-assign]
        self.exit_to_user = functools.partial(fpsimd.fpsimd_exit_to_user, kernel)     # type: ignore[method-assign]

    def make_cpu(self, index: int) -> Arm64Cpu:
        c = self.k.config
        assert c.sve_vl is not None         # MachineConfig.validate resolved it
        model = c.arm64_cpu_model if c.arm64_cpu_model in CPU_MODELS else "qemu-max"  # boot reports a bad one
        cpu = Arm64Cpu(index, self.k.clock, sve_vl=c.sve_vl, idst=c.idst, sve=c.has_sve,
                       cpu_model=model, sve_idregs=self._sve_idregs(index, model))
        if cpu.has_sve:
            # the CPU's sve_z/sve_p/sve_ffr accessors run the kernel's own save/load sequences
            # (their buffer layout is the kernel's; the machine imports nothing of the kernel)
            cpu.sve_state_access = (entry_fpsimd.read_sve_state, entry_fpsimd.write_sve_state)
        return cpu

    def _sve_idregs(self, index: int, model: str) -> tuple[int, int] | None:
        """(ID_AA64PFR0_EL1, ID_AA64ZFR0_EL1) of CPU ``index`` when --cpu-id overrides change its
        ID registers: the machine's SVE2 unit executes what that CPU advertises."""
        c = self.k.config
        if index not in c.cpu_id_overrides:
            return None
        try:
            regs = build_cpu_id_regs(c.cpus, c.cpu_id_overrides, base=cpu_model_id_regs(model))[index]
        except (ValueError, KeyError, IndexError):
            return None                     # boot (traps.setup) reports the bad override
        return regs.raw("ID_AA64PFR0_EL1"), regs.raw("ID_AA64ZFR0_EL1")

    def boot(self) -> None:
        traps.setup(self.k)
        fpsimd.setup(self.k)
        sve_sysctl_init(self.k)
        tagged_addr.setup(self.k)
        pointer_auth.setup(self.k)
    def hwcap(self) -> int:
        return self.elf_hwcaps()[0]

    elf_platform = "aarch64"          # ELF_PLATFORM (arch/arm64/include/asm/elf.h)

    # TASK_SIZE_MAX with Debian's 48-bit VA (CONFIG_ARM64_VA_BITS_48)
    TASK_SIZE_MAX = 1 << 48

    def access_ok(self, task: "Task", addr: int, size: int) -> bool:
        """__access_ok on the pointer as given -- or without its tag once the thread has the
        tagged address ABI (TIF_TAGGED_ADDR): a tagged pointer is otherwise above TASK_SIZE_MAX,
        so even a zero-length read or write of one is EFAULT."""
        if task.flags & TIF_TAGGED_ADDR:
            addr = self.untagged_addr(addr)
        return size <= self.TASK_SIZE_MAX and addr <= self.TASK_SIZE_MAX - size

    def untagged_addr(self, addr: int) -> int:
        """__untagged_addr: bits 63:56 become copies of bit 55 (a user address loses its tag,
        whether or not the tagged address ABI is on: munmap/mprotect/madvise always untag)."""
        return addr | (0xFF << 56) if addr >> 55 & 1 else addr & ((1 << 56) - 1)

    def hwcap2(self) -> int | None:
        return self.elf_hwcaps()[1]

    def arch_validate_prot(self, prot: int) -> bool:
        """arm64's arch_validate_prot: PROT_BTI (0x10) and PROT_MTE (0x20) are known where the
        CPU has the feature (HWCAP2_BTI is bit 17, HWCAP2_MTE bit 18)."""
        caps2 = self.elf_hwcaps()[1]
        known = 0xF | (0x10 if caps2 >> 17 & 1 else 0) | (0x20 if caps2 >> 18 & 1 else 0)
        return not prot & ~known

    def elf_hwcaps(self) -> tuple[int, int]:
        """setup_elf_hwcaps() over the sanitised ID registers (kernel/arch/arm64/hwcap.py), once."""
        caps = self._elf_hwcaps
        if caps is None:
            from emukern.kernel.arch.arm64.hwcap import setup_elf_hwcaps
            caps = self._elf_hwcaps = setup_elf_hwcaps(self.k.id_regs, sve=self.k.config.has_sve)
        return caps

    def cpuinfo(self) -> str:
        return arm64_cpuinfo(self.k, *self.elf_hwcaps())

    def syscall_nr(self, cpu: Arm64Cpu) -> int:
        return cpu.reg(8)

    def syscall_args(self, cpu: Arm64Cpu) -> tuple[int, ...]:
        return tuple(cpu.reg(i) for i in range(6))

    def set_syscall_return(self, cpu: Arm64Cpu, value: int) -> None:
        cpu.write_regid(_X0, value)  # regs->regs[0] (hot path: one libunicorn call)

    syscall_ret_regid = _X0

    def initial_context(self, entry: int, sp: int) -> dict[str, Any]:
        return {"x": [0] * 31, "sp": sp, "pc": entry, "nzcv": 0, "tpidr": 0}

    def clone_context(self, ctx: dict[str, Any], newsp: int, tls: int | None) -> dict[str, Any]:
        out = dict(ctx)
        out["x"] = list(ctx["x"])
        out["x"][0] = 0
        if newsp:
            out["sp"] = newsp
        if tls is not None:
            out["tpidr"] = tls
        return out

    def new_thread_state(self, task: "Task", parent: "Task | None", exec_: bool) -> Any:
        if not exec_:
            tagged_addr.inherit_tagged_addr(task, parent)     # dup_task_struct's thread flags
        th = fpsimd.new_thread_state(self.k, task, parent, exec_)
        if exec_:
            pointer_auth.ptrauth_thread_init_user(self.k, task, th)   # new keys at exec
        else:
            pointer_auth.ptrauth_thread_copy(th, parent)            # fork/clone: the parent's
        return th

    def exec_reset(self, cpu: Arm64Cpu, task: "Task") -> None:
        fpsimd.fpsimd_flush_thread(self.k, cpu, task)
        tagged_addr.flush_tagged_addr_state(task)             # flush_thread
        pointer_auth.ptrauth_keys_install_user(cpu, task)     # the new program's keys, now

    def exit_thread(self, cpu: Arm64Cpu, task: "Task") -> None:
        fpsimd.fpsimd_release_task(self.k, cpu, task)

    def switch_from(self, cpu: Arm64Cpu, prev: "Task") -> None:
        fpsimd.fpsimd_thread_switch_out(self.k, cpu, prev)

    def switch_to(self, cpu: Arm64Cpu, nxt: "Task") -> None:
        fpsimd.fpsimd_thread_switch_in(self.k, cpu, nxt)
        pointer_auth.ptrauth_keys_install_user(cpu, nxt)

    def prctl(self, cpu: Arm64Cpu, task: "Task", option: int, a2: int, a3: int, a4: int, a5: int) -> int | None:
        ret = tagged_addr.tagged_addr_prctl(self.k, task, option, a2, a3, a4, a5)
        if ret is None:
            ret = pointer_auth.ptrauth_prctl(self.k, task, option, a2, a3, a4, a5)
        return fpsimd.sve_prctl(self.k, cpu, task, option, a2) if ret is None else ret

    def trap_handler_path(self, cpu: Arm64Cpu, trap: Trap, classes: set[str]) -> str:
        if trap.kind is TrapKind.ILLEGAL and "mrs" in classes:
            # the arm64-mrs switch decides the path (read now: it may be switched at run time)
            return ("do_el0_undef -> try_emulate_mrs" if self.k.policy("arm64-mrs") == "direct"
                    else "do_el0_undef -> call_undef_hook (undef_lock) -> emulate_mrs")
        return super().trap_handler_path(cpu, trap, classes)

    def user_single_step(self, child: "Task", on: bool) -> bool:
        return arm64_ptrace.user_single_step(child, on)

    def handle_trap(self, cpu: Arm64Cpu, task: "Task", trap: Trap) -> None:
        assert isinstance(cpu, Arm64Cpu)
        if trap.kind is TrapKind.BREAKPOINT and trap.ec == ESR_EC_SOFTSTP_LOW:
            traps.single_step_handler(self.k, cpu, task, trap)
        elif trap.kind is TrapKind.ILLEGAL:
            traps.do_el0_undef(self.k, cpu, task, trap)
        elif trap.kind is TrapKind.SYSREG:
            traps.do_el0_sys(self.k, cpu, task, trap)
        elif trap.kind is TrapKind.SVE_ACCESS:
            fpsimd.do_sve_acc(self.k, cpu, task, trap)
        elif is_alignment_fault(trap):
            do_alignment_fault(self.k, cpu, task, trap)     # kernel/arch/arm64/fault.py
        else:
            self.default_trap(cpu, task, trap)
