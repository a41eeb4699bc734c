"""The hook points every architecture fills, named after the Linux code they stand for."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from emukern.kernel import errno as E
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_base import Cpu
from emukern.kernel.mm import mmap as mm_mmap
from emukern.kernel.mm import vma as mm_vma
from emukern.kernel.signal.defs import BUS_ADRERR
from emukern.kernel.signal import generate as signal_generate


CpuT = TypeVar("CpuT", bound="Cpu")


class ArchBase(Generic[CpuT]):
    """An architecture's hooks, over its own CPU class (every CPU the machine has is one)."""
    name = ""
    uname_machine = ""
    SIGNAL: Any = None            # the arch's signal-frame module (setup_rt_frame, rt_sigreturn, ...)
    STACK_TOP = 0x3F_FF00_0000
    STACK_SIZE = 8 << 20          # RLIMIT_STACK
    STACK_INIT = 128 << 10        # initially mapped; grows on faults (expand_stack)
    # raw_copy_{from,to}_user through an arch-specific path (RISC-V kernel-mode vector), or None
    vector_usercopy: Any = None
    # trap kind -> the Linux function its exception vector calls (entry-common.c / traps.c): the
    # name handle_trap's handlers log, and what the debugger says is about to run
    TRAP_HANDLERS: dict[TrapKind, str] = {}
    # modules whose sys_* functions are this arch's own rows of the syscall table (the
    # arch-specific slots of asm-generic's numbering), added by syscalls/table.py
    SYSCALL_MODULES: tuple[Any, ...] = ()
    # the scause/ESR-free "cause" a timer interrupt's Trap records (RISC-V: the interrupt bit and
    # the supervisor timer's code; arm64 has none: the interrupt is not an exception class)
    timer_cause: int | None = None
    # the x register a syscall's first argument and its return value share (regs->a0 / regs[0]):
    # what a restart puts back (orig_a0/orig_x0) and where -EINTR goes
    SYSCALL_ARG0_REG = 0
    MINSIGSTKSZ = 2048            # the uapi's MINSIGSTKSZ (sigaltstack's floor)
    WANT_RENAMEAT = False         # __ARCH_WANT_RENAMEAT: the old renameat slot is in the table
    HAS_SA_RESTORER = False       # struct sigaction carries sa_restorer (__ARCH_HAS_SA_RESTORER)
    ELF_MACHINE = 0               # e_machine of the core files this arch writes (EM_*)
    REGSETS: tuple[Any, ...] = ()  # the regsets PTRACE_GETREGSET/SETREGSET know (kernel/signal/ptrace.py Regset)
    # where PTRACE_GET_SYSCALL_INFO finds the user pc, sp, syscall number, first argument and
    # return value: 8-byte slots of the NT_PRSTATUS regset (syscall_get_nr & co., per arch)
    SYSCALL_SLOTS: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    # the vDSO (kernel/vdso): its source under guest_asm/vdso/, the symbol version and the symbols
    # the arch's vdso.lds.S exports, and which of them is the sigreturn trampoline
    VDSO_SOURCE = ""
    VDSO_VERSION = ""
    VDSO_SYMBOLS: tuple[str, ...] = ()
    VDSO_SIGRETURN = ""

    def __init__(self, kernel: "Kernel") -> None:
        self.k = kernel

    # machine
    def make_cpu(self, index: int) -> CpuT:
        raise NotImplementedError

    def boot(self) -> None:
        """Per-arch init after CPUs exist (register sysctls, feature detection)."""

    def hwcap(self) -> int:
        return 0

    def hwcap2(self) -> int | None:
        """AT_HWCAP2, or None on an architecture without ELF_HWCAP2 (no auxv entry)."""
        return None

    def access_ok(self, task: "Task", addr: int, size: int) -> bool:
        """access_ok(): the range lies in the user half (where the architecture checks one
        without touching memory; the default accepts everything and lets the access fault)."""
        return True

    def untagged_addr(self, addr: int) -> int:
        """untagged_addr(): the address munmap/mprotect/madvise work on (arm64: without its tag)."""
        return addr

    def arch_validate_prot(self, prot: int) -> bool:
        """arch_validate_prot(): mprotect's prot has only bits this architecture knows
        (everywhere: PROT_READ, PROT_WRITE, PROT_EXEC and the no-op PROT_SEM)."""
        return not prot & ~0xF

    # ELF_PLATFORM: the string AT_PLATFORM points to (None: the architecture defines none)
    elf_platform: str | None = None

    def arch_dlinfo(self) -> list[tuple[int, int]]:
        """The auxv entries of ARCH_DLINFO that come between AT_SYSINFO_EHDR and
        AT_MINSIGSTKSZ (riscv: the cache geometry)."""
        return []

    def cpuinfo(self) -> str:
        """/proc/cpuinfo (the arch's c_show)."""
        return ""

    # syscall ABI
    def syscall_nr(self, cpu: CpuT) -> int:
        raise NotImplementedError

    def syscall_args(self, cpu: CpuT) -> tuple[int, ...]:
        raise NotImplementedError

    def set_syscall_return(self, cpu: CpuT, value: int) -> None:
        raise NotImplementedError

    # The register a syscall's return value goes to, as a Unicorn id, when set_syscall_return is
    # just that one write (the syscall fast path then writes it with cpu.write_regid itself).
    syscall_ret_regid: int | None = None
    # The thread flags whose work exit_to_user does; with none of them set, exit_to_user only
    # charges cost.tif_check (the flag test), which the syscall fast path then does inline.
    # None: exit_to_user has other work and is always called.
    exit_work_tif: int | None = None

    def advance_past_syscall(self, cpu: CpuT, trap: Trap) -> None:
        cpu.set_pc(trap.pc + 4)

    # task state
    def initial_context(self, entry: int, sp: int) -> dict[str, Any]:
        raise NotImplementedError

    def clone_context(self, ctx: dict[str, Any], newsp: int, tls: int | None) -> dict[str, Any]:
        raise NotImplementedError

    def new_thread_state(self, task: "Task", parent: "Task | None", exec_: bool) -> Any:
        return None

    def exec_reset(self, cpu: CpuT, task: "Task") -> None:
        """Reset per-task arch state on execve (start_thread / flush_thread)."""

    def exit_thread(self, cpu: CpuT, task: "Task") -> None:
        """exit_thread: drop per-CPU references to the dying task's state."""

    # entry / exit / switch hook points
    def syscall_enter(self, cpu: CpuT, task: "Task") -> str | None:
        """Work at syscall entry before dispatch (vstate discard, fpsimd_syscall_enter).
        Returns a line for the trap log when it decided something, else None."""
        return None

    def exit_to_user(self, cpu: CpuT, task: "Task") -> str | None:
        """exit_to_user_mode work: deferred restores, lazy FP loads.  Returns a log line or None."""
        return None

    def switch_from(self, cpu: CpuT, prev: "Task") -> None:
        """__switch_to, the 'save previous' half."""

    def switch_to(self, cpu: CpuT, nxt: "Task") -> None:
        """__switch_to, the 'prepare next' half."""

    def prctl(self, cpu: CpuT, task: "Task", option: int, a2: int, a3: int, a4: int, a5: int) -> int | None:
        return None

    # traps other than syscalls
    def handle_trap(self, cpu: CpuT, task: "Task", trap: Trap) -> None:
        self.default_trap(cpu, task, trap)

    def trap_handler_path(self, cpu: CpuT, trap: Trap, classes: set[str]) -> str:
        """The handler(s) ``trap`` is about to go through, before it runs (the debugger's "handler"
        line); ``classes`` are the debugger's names for the trap (first-use, mrs ...)."""
        return self.TRAP_HANDLERS.get(trap.kind, "")

    def default_trap(self, cpu: CpuT, task: "Task", trap: Trap) -> None:
        k = self.k
        if trap.kind is TrapKind.MEM_FAULT:
            trap.handler = self.TRAP_HANDLERS[TrapKind.MEM_FAULT]
            if trap.addr is not None and mm_mmap.expand_stack(k, task, trap.addr):
                trap.decision = f"stack grown to cover {trap.addr:#x}; retry the access"
                cpu.sync_mm()
                return
            if trap.addr is not None and mm_vma.file_page_past_eof(task.mm, trap.addr, trap.access):
                signal_generate.force_sig(k, cpu, task, E.SIGBUS, trap,
                                          f"access to {trap.addr:#x}, past the end of the mapped file",
                                          bus_code=BUS_ADRERR)
                return
            signal_generate.force_sig(k, cpu, task, E.SIGSEGV, trap, f"{'write' if trap.access == 'w' else 'read' if trap.access == 'r' else 'fetch'} "
                        f"of unmapped or protected address {trap.addr:#x}")
        elif trap.kind is TrapKind.BREAKPOINT:
            trap.handler = self.TRAP_HANDLERS[TrapKind.BREAKPOINT]
            signal_generate.force_sig(k, cpu, task, E.SIGTRAP, trap, "breakpoint instruction")
        else:
            trap.handler = trap.handler or self.TRAP_HANDLERS.get(TrapKind.ILLEGAL, "")
            why = trap.detail or "illegal instruction"
            signal_generate.force_sig(k, cpu, task, E.SIGILL, trap, why)

    def user_sp(self, cpu: CpuT) -> int:
        """user_stack_pointer(regs): the interrupted user context's stack pointer."""
        raise NotImplementedError

    def record_fault(self, task: "Task", addr: int | None, trap: "Trap") -> None:
        """What force_sig_fault leaves for the signal frame besides the siginfo (arm64: the
        fault address and ESR of its esr_context record); nothing by default."""

    # ---- regsets (ptrace and the core dump): kernel/arch/*/regset.py ------------------------
    def regset_get(self, child: "Task", rs: Any) -> bytes:
        """The whole regset ``rs`` of a stopped task."""
        raise NotImplementedError

    def regset_store(self, child: "Task", rs: Any, full: bytes, words: list[int]) -> int:
        """Store a whole regset (a read merged with what the tracer wrote), or -errno."""
        raise NotImplementedError

    def user_single_step(self, child: "Task", on: bool) -> bool:
        """Arm (``on``) or disarm the hardware single step of a stopped tracee
        (user_enable/disable_single_step).  False: the architecture has none
        (!arch_has_single_step(): PTRACE_SINGLESTEP is EIO), as RISC-V."""
        return False

    def regset_access(self, task: "Task", child: "Task", rs: Any, write: bool, base: int,
                      length: int) -> int | None:
        """A regset the arch transfers itself (its own errors, no merge): an errno or 0 when it
        did, None for the generic get/merge/store path (every regset but arm64's NT_ARM_SVE)."""
        return None

    def core_thread_regsets(self, cpu: CpuT | None, t: "Task", ctx: dict[str, Any]) -> tuple[bytes, bytes, bytes | None]:
        """(pr_reg, NT_PRFPREG, the arch's further notes or None) of a thread of a dying process."""
        raise NotImplementedError
