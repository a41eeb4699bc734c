"""The Python kernel: boots CPUs, owns tasks, takes every trap, schedules — on one clock.

A trap's path (each arrow one call with a Linux name):
  CPU hook builds a Trap -> :meth:`Kernel.handle_trap` (kernel entry: account user time, charge
  entry) -> :meth:`do_syscall` (arch ``syscall_enter`` work, dispatch) or the arch trap handler
  (``do_el0_undef``, ``do_sve_acc``, ``riscv_v_first_use_handler``, ...) -> :meth:`exit_to_user_mode`
  (arch return-to-user work, maybe ``schedule``) -> the CPU resumes the guest.
A syscall takes :meth:`Kernel.syscall_entry` instead (the CPU's ``on_syscall``): the same steps
in the same order, given the numbers the hook read, with a Trap built only when something needs
one (a debugger gate or listener, a call that blocks/restarts/ends the task, a pending signal) or
reads the trap log.

The scheduler (:class:`emukern.kernel.sched.Scheduler`, ``kernel.sched``) and the SMP run loop
(:class:`emukern.kernel.smp.RunLoop`, ``kernel.runloop``) are objects the kernel owns, with
explicit interfaces; the syscalls (:mod:`emukern.kernel.syscalls`) and the signal code
(:mod:`emukern.kernel.signal`) are still mixins of :class:`Kernel`.
"""
from __future__ import annotations

from collections import Counter, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from emukern.config import MachineConfig
from emukern.errors import ConfigError
from emukern.kernel import errno as E
from emukern.kernel.files import FdTable, OutputFile, StdinFile, WaitQueue
from emukern.kernel.policies import Policies
from emukern.kernel.preempt import PREEMPTED, PreemptStats, describe as describe_preemption
from emukern.kernel.spinlock import SpinLock
from emukern.kernel.sched import PerCpu, Scheduler
from emukern.kernel.signal import SignalMixin, flush_signal_handlers, init_task_signals
from emukern.kernel.smp import RunLoop
from emukern.kernel.syscalls import BLOCK, SyscallsMixin
from emukern.kernel.syscalls_proc import USER_HZ
from emukern.kernel.sysctl import SysctlTable
from emukern.kernel.task import Task, TaskState
from emukern.kernel.thread_info import TIF_SIGPENDING, thread_flag_names
from emukern.machine.clock import Clock
from emukern.kernel.cost import CostTable
from emukern.machine.cpu_base import Cpu
from emukern.machine.memory import AddressSpace, MemoryPool, OutOfMemory
from emukern.machine.trap import Trap, TrapKind

# the auxv's rseq entries (Linux 6.3 on): offsetof(struct rseq, end) with node_id and mm_cid,
# and __alignof__(struct rseq)
RSEQ_FEATURE_SIZE, RSEQ_ALIGN = 28, 32

if TYPE_CHECKING:
    from emukern.kernel.arm64.entry_fpsimd import SveStateArea

_RUNNABLE = TaskState.RUNNABLE      # (an Enum member looked up on its class costs ~0.15 us here)
TRAP_LOG_LIMIT = 20000
# The first REAPED_ROWS reaped tasks stay in Kernel.tasks (memory freed, accounting and thread
# state kept for the result and post-mortem inspection); later ones leave it and are summed into
# RunResult.extra["reaped_not_listed"], so a fork/exit loop runs in bounded host memory.
REAPED_ROWS = 512
LAST_INO_BATCH = 1024
FLUSH_EVERY_FREED_MMS = 16     # drop Unicorn's translations after this many freed address spaces


class ArgListTooLong(ConfigError):
    """The arguments and environment do not fit Linux's limits: E2BIG (execve) or a clear error."""


def bprm_stack_limits(argv: list[str], envp: list[str], execfn: str, stack_rlimit: int) -> None:
    """The first program's command line against Linux's limits: kernel/exec.py's
    bprm_stack_limits (the one execve uses), its E2BIG turned into a clear error for the user."""
    from emukern.kernel.exec import ExecError, bprm_stack_limits as exec_stack_limits
    from emukern.loader.stack import encode_str
    try:
        exec_stack_limits([encode_str(a) for a in argv], [encode_str(e) for e in envp], stack_rlimit,
                          encode_str(execfn))
    except ExecError as exc:
        raise ArgListTooLong(f"argument list too long (E2BIG): {exc.why}",
                             hint="pass large data through a file or standard input (--stdin)") from None


class TrapRecord:
    """One entry of the trap log.  Built on every trap, so it stores the Trap and formats lazily."""

    __slots__ = ("seq", "cpu", "tid", "time", "trap", "flags")

    def __init__(self, seq: int, cpu: int, tid: int, time: int, trap: Trap, flags: int = 0) -> None:
        self.seq, self.cpu, self.tid, self.time, self.trap = seq, cpu, tid, time, trap
        self.flags = flags          # the task's thread flags word as the trap left it

    @property
    def tif(self) -> list[str]:
        """The thread flags set when the trap returned, by their Linux names."""
        return thread_flag_names(self.flags)

    kind = property(lambda self: self.trap.kind.value)
    pc = property(lambda self: self.trap.pc)
    insn = property(lambda self: self.trap.insn)
    handler = property(lambda self: self.trap.handler)
    cycles = property(lambda self: self.trap.cycles)
    syndrome = property(lambda self: self.trap.syndrome())

    @property
    def decision(self) -> str:
        t = self.trap      # a Trap, or a signal event logged beside the traps (signal.py)
        return t.describe(E.NAMES) if isinstance(t, Trap) else t.describe()

    def __repr__(self) -> str:
        return (f"TrapRecord(#{self.seq} cpu{self.cpu} tid{self.tid} {self.kind} pc={self.pc:#x} "
                f"{self.handler}: {self.decision})")


class SyscallRecord(TrapRecord):
    """The trap log's entry for a syscall that took the fast path (:meth:`Kernel.syscall_entry`):
    the numbers it was handled with, in one tuple (made without an ``__init__`` call), and its
    :class:`Trap`, built by the CPU the first time someone reads ``trap`` (the trace printer,
    the debugger, a test) — equal to the one the generic path would have logged."""

    __slots__ = ("_t", "_p")
    # _p: (seq, cpu index, tid, time, flags, cpu, pc, word, regs, handler name, return value,
    #      cycles, notes)
    seq = property(lambda self: self._p[0])          # type: ignore[assignment]
    cpu = property(lambda self: self._p[1])          # type: ignore[assignment]
    tid = property(lambda self: self._p[2])          # type: ignore[assignment]
    time = property(lambda self: self._p[3])         # type: ignore[assignment]
    flags = property(lambda self: self._p[4])        # type: ignore[assignment]

    @property
    def trap(self) -> Trap:     # type: ignore[override]
        try:
            return self._t
        except AttributeError:
            pass
        cpu, pc, word, regs, name, ret, cycles, notes = self._p[5:]
        t = self._t = cpu.syscall_trap(pc, word, regs)
        t.handler, t.ret, t.cycles, t.notes = name, ret, cycles, notes
        return t


_new_record = object.__new__



def _account_entry(pcpu: Any, task: Any, now: int, ucount: int) -> None:
    """Kernel entry: the time since the CPU's last mark was user time up to the user cycles
    counted, the rest system time (as Linux's tick-based accounting splits it at the
    user/kernel boundary); the marks move to now."""
    user = ucount - pcpu.user_mark
    total = now - pcpu.last_mark
    task.utime += user if user < total else total
    task.stime += total - user if total > user else 0
    pcpu.last_mark = now
    pcpu.user_mark = ucount

class Kernel(SyscallsMixin, SignalMixin):
    # Debugger hooks (emukern.debug); all None/inactive in a normal run.
    #   trap_gate(cpu, task, trap) -> bool: consulted at the top of handle_trap; True defers the
    #     trap: the CPU stops at the trapping instruction (PC = trap.pc) with the handler not yet
    #     run, and ``deferred_trap`` holds it until :meth:`resume_trap` runs it outside the hook.
    #   run_cap(cpu) -> int | None: an extra upper bound on how far _round runs a CPU (stepping).
    trap_gate: Any = None
    deferred_trap: "tuple[Cpu, Trap] | None" = None
    deferred_pc: int | None = None
    run_cap: Any = None
    # Sync points (conservative lock-step for shared kernel resources, e.g. arm64 undef_lock):
    #   sync_gate(cpu, task, trap) -> bool: consulted on the entry of a trap other than a syscall
    #     (the syscall fast path, syscall_entry, takes no such lock) while the CPU runs; True means
    #     "this trap is about to take a shared lock and another active CPU's clock is still behind
    #     (cpu.now > sync_floor)".  The trap is parked on the CPU (PC at the instruction, nothing
    #     charged) and _round delivers it once this CPU is the furthest behind, so lock
    #     acquisitions happen in simulated-time order whatever the quantum.
    sync_gate: Any = None
    sync_floor: int = 1 << 62     # min clock of the other active CPUs (set by _lockstep_limit)
    parked_traps: int = 0
    kernel_vector_regions: int = 0  # kernel_vector_begin/end pairs (RISC-V vectorised user copies)
    fp_saves: int = 0              # RISC-V fstate_save calls that wrote a Dirty FP context back
    # arm64 (kernel/arm64/fpsimd.py setup): every task's sve_state/fpsimd_state buffer, and the
    # SVE events the patch author counted, summed over tasks
    sve_area: "SveStateArea | None" = None
    sve_stats: "Counter[str]"
    sve_syscall_timeout: bool = False   # arm64-sve follows p1+p2 (kept by fpsimd.setup on a switch)
    # arm64 (kernel/arm64/traps.py setup): the undef hook list/MRS emulation state, and the
    # sanitised ID registers of the system (cpufeature.py SystemIdRegs)
    arm64_undef: Any = None
    id_regs: Any = None

    def __init__(self, config: MachineConfig, *, echo_stdout: BinaryIO | None = None,
                 echo_stderr: BinaryIO | None = None) -> None:
        config.validate()
        self.config = config
        self.clock = Clock(config.freq_hz, config.hz, config.timer_freq)
        self.sve_stats = Counter()
        self.cost = CostTable()
        if config.cost_file:
            self.cost.load_file(config.cost_file)
        for k, v in config.costs.items():
            self.cost.override(k, v)
        if config.plugins:
            from emukern.kernel.plugins import load_plugin
            for spec in config.plugins:
                load_plugin(spec)
        from emukern.kernel.versions import effective_policies, kernel_version
        # the Linux release modelled (--kernel): its own values of the four changes, --policy on top
        self.version = kernel_version(config.kernel, config.arch)
        self.policies = Policies(effective_policies(self.version, config.policies))
        self.sysctl = SysctlTable()
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._echo_out = echo_stdout
        self._echo_err = echo_stderr
        self.tasks: dict[int, Task] = {}
        # the machine's guest memory (--mem-limit): every address space charges its mappings here
        self.mem = MemoryPool(config.resolved_mem_limit())
        self._no_mm = AddressSpace()         # what an idle CPU maps once its last mm went away
        self._dead_mms: list[AddressSpace] = []   # mmput dropped the last user: freed by _reap
        self._to_release: list[Task] = []          # DEAD tasks to release once off every CPU
        self._freed_mms = 0
        self._shared_last_ino = 0
        self.reaped_kept = 0
        self.reaped_rest: Counter[str] = Counter()   # tasks past REAPED_ROWS, summed
        self._next_tid = 1
        self._seq = 0
        # traps by kind; cycles per trap kind, summed in handle_trap (trap_log is bounded: long
        # runs drop records); syscalls by name.  Read them as trap_counts, trap_cycles and
        # syscall_counts: those fold in what syscall_entry counted in the dispatch table
        self._trap_counts: Counter[str] = Counter()
        self._trap_cycles: Counter[str] = Counter()
        self._syscall_counts: Counter[str] = Counter()
        self.unknown_syscalls: Counter[int] = Counter()
        self.warnings: Counter[str] = Counter()
        self.preempt_stats = PreemptStats()       # preemption points inside syscalls (kernel/preempt.py)
        self.syscall_notes: list[str] = []          # what kernel paths inside a syscall decided     # WARN_ON()s hit, by condition (see warn_on)
        self.trap_log: deque[TrapRecord] = deque(maxlen=TRAP_LOG_LIMIT)
        self.trap_listeners: list[Any] = []       # the debugger subscribes here
        self.signal_listeners: list[Any] = []     # (cpu, task, siginfo) when a handler's frame is set up
        self.locks: dict[str, SpinLock] = {}
        self.futex_queues: dict[tuple[int, int], WaitQueue] = {}
        self.child_wait: dict[int, WaitQueue] = {}
        self.stop_reason = ""
        self.stop_message = ""
        self.init_task: Task | None = None
        self.fault_report: dict[str, Any] | None = None
        self.wall_seconds = 0.0
        self.exited = False
        self._costs = self.cost.values
        self._dispatch = self.build_syscall_table()
        self._dispatch_entries = list(self._dispatch.values())
        self.arch = self._make_arch()
        self.cpus: list[Cpu] = [self.arch.make_cpu(i) for i in range(config.cpus)]
        self.percpu = [PerCpu(i, next_tick=self.clock.tick_cycles) for i in range(config.cpus)]
        self.sched = Scheduler(self)
        self.runloop = RunLoop(self)
        # per CPU, what syscall_entry needs first: its PerCpu and the return register's writer
        # (Cpu.reg_write_parts), or None when the arch's set_syscall_return does more than one write
        regid = self.arch.syscall_ret_regid
        self._sys_percpu: list[tuple[PerCpu, Any, Any]] = [
            (pcpu, *(cpu.reg_write_parts(regid) if regid is not None else (None, None)))
            for cpu, pcpu in zip(self.cpus, self.percpu)]
        for cpu in self.cpus:
            cpu.on_trap = self.handle_trap
            cpu.on_syscall = self.syscall_entry
            rvv = getattr(cpu, "rvv", None)
            if self.cost.rvv and rvv is not None:
                rvv.set_costs(dict(self.cost.rvv))     # --cost rvv.KIND.PART=N
        self.fs_init()              # the guest root with /proc and /dev (kernel/fs)
        self.arch.boot()
        for k, v in config.sysctls.items():
            self.sysctl.write(k, v)
        self.policies.booted = True               # from now on a policy switch is a run-time one

    # ---- the scheduler's and the run loop's interfaces, for callers that hold the kernel --------
    # (the signal code calls these through self; everything new should call kernel.sched /
    # kernel.runloop directly)
    def select_cpu(self, task: Task, new: bool = False) -> int:
        return self.sched.select_cpu(task, new)

    def enqueue(self, task: Task, cpu_index: int, now: int) -> None:
        self.sched.enqueue(task, cpu_index, now)

    def wake_up(self, task: Task, now: int, value: int | None = None) -> None:
        self.sched.wake_up(task, now, value)

    def wake_queue(self, wq: WaitQueue, now: int, nr: int | None = None, value: int | None = None) -> int:
        return self.sched.wake_queue(wq, now, nr, value)

    def add_timer(self, task: Task, wake_at: int) -> bool:
        return self.sched.add_timer(task, wake_at)

    def account(self, cpu: Cpu, task: Task | None) -> None:
        self.sched.account(cpu, task)

    def block_current(self, cpu: Cpu, task: Task, reason: str) -> None:
        self.sched.block_current(cpu, task, reason)

    def schedule(self, cpu: Cpu) -> None:
        self.sched.schedule(cpu)

    def run(self) -> Any:
        """Run until the first process exits or a budget ends (:meth:`RunLoop.run`)."""
        return self.runloop.run()

    def step_loop(self, max_rounds: int) -> bool:
        return self.runloop.step_loop(max_rounds)

    def resume_trap(self) -> bool:
        return self.runloop.resume_trap()

    def _kill_everything(self) -> None:
        self.runloop.kill_everything()

    @property
    def elapsed(self) -> int:
        return self.runloop.elapsed

    def _make_arch(self) -> Any:
        if self.config.arch == "riscv64":
            from emukern.kernel.riscv.arch import RiscvArch
            return RiscvArch(self)
        from emukern.kernel.arm64.arch import Arm64Arch
        return Arm64Arch(self)

    def warn_on(self, condition: bool, what: str) -> bool:
        """WARN_ON(condition): where Linux would print a warning with a backtrace and carry on,
        emukern counts the condition for the run (``RunResult.warnings``, the summary) so tests
        can assert that a model never reaches a state the kernel considers impossible."""
        if condition:
            self.warnings[what] += 1
        return condition

    def policy(self, name: str) -> str:
        """The built-in value a decision point follows (a plug-in variant's base)."""
        return self.policies.effective(name)

    def lock(self, name: str) -> SpinLock:
        lk = self.locks.get(name)
        if lk is None:
            lk = self.locks[name] = SpinLock(name)
        return lk

    def spin_lock(self, cpu: Cpu, name: str) -> int:
        """raw_spin_lock on ``cpu``: charges the spin/transfer/lock cost; returns hold start."""
        lk = self.locks.get(name) or self.lock(name)
        c = self._costs
        now = cpu.now
        t = lk.acquire(cpu.index, now, lock_cost=c["spin_lock"],
                       transfer_cost=c["cacheline_transfer"], poll_cost=c["spin_poll"])
        cpu.charge(t - now)
        return t

    def spin_unlock(self, cpu: Cpu, name: str, held_since: int) -> None:
        now = cpu.now
        t = self.locks[name].release(now, unlock_cost=self._costs["spin_unlock"], held_since=held_since)
        cpu.charge(t - now)

    def alloc_tid(self) -> int:
        tid = self._next_tid
        self._next_tid += 1
        return tid

    def live_tasks(self) -> list[Task]:
        return [t for t in self.tasks.values() if t.alive]

    def load(self, path: str, argv: list[str] | None = None, envp: list[str] | None = None) -> Task:
        """Create the first process from a static ELF (pid 1, like the init a kernel execs)."""
        from emukern.loader.elf import load_elf
        image = load_elf(path, allow_interp=True)
        if image.arch != self.config.arch:
            raise ConfigError(f"{path} is a {image.arch} program but the machine is {self.config.arch}",
                              hint=f"drop --arch or use --arch {image.arch}")
        files = FdTable()
        files.install(StdinFile(self.config.stdin))
        files.install(OutputFile("stdout", self.stdout, self._echo_out))
        files.install(OutputFile("stderr", self.stderr, self._echo_err))
        task = Task(tid=self.alloc_tid(), tgid=0, parent=None, mm=AddressSpace(pool=self.mem), files=files,
                    comm=str(path).rsplit("/", 1)[-1][:15])
        task.tgid = task.tid
        init_task_signals(task)
        # /proc/self/exe is a guest path: the program's place in the root, or its name at the
        # top of it when it comes from outside the root (a host path means nothing in the guest)
        task.exe = (self.vfs.guest_path_of_host(str(path))
                    or "/" + Path(path).name)
        self.tasks[task.tid] = task
        self.init_task = task
        self.fs_init_task(task)     # its cwd in the guest root (kernel/syscalls_fs.py)
        from emukern.kernel.exec import ExecError
        argv = argv or [str(path)]
        envp = envp or []
        from emukern.kernel.resource import RLIMIT_STACK, rlimit
        bprm_stack_limits(argv, envp, argv[0] if argv else "", rlimit(self, task, RLIMIT_STACK))
        try:
            self.exec_image(task, image, argv, envp, execfn=str(path))
        except ExecError as exc:
            from emukern.errors import ElfError
            raise ElfError(f"{path}: {exc.why}",
                           hint="dynamically linked programs load their interpreter and libraries from "
                                "the guest root: --root SYSROOT, e.g. --root /usr/"
                                + ("aarch64" if image.arch == "arm64" else "riscv64") + "-linux-gnu") from None
        except OutOfMemory as exc:
            from emukern.errors import ElfError
            raise ElfError(f"{path}: cannot load the program: {exc}",
                           hint="its segments need more memory than the machine gives a process "
                                "(4 GiB per address space; --mem-limit machine-wide)") from None
        self.sched.enqueue(task, 0, now=0)
        self.symbols = dict(image.symbols)
        self.image = image
        return task

    def exec_image(self, task: Task, image: Any, argv: list[str], envp: list[str],
                   execfn: str | None = None, commit: bool = True) -> None:
        """Build the new image's mm and initial registers; ``commit`` installs them in ``task``
        (execve builds first and commits after its point of no return, see kernel/exec.py).
        A failed build leaves the old image alone and frees the new mm."""
        mm = AddressSpace(pool=self.mem)
        try:
            self._exec_mmap(task, mm, image, argv, envp, execfn)
        except BaseException:
            mm.release()
            raise
        if commit:
            self.exec_commit(task)

    def _exec_mmap(self, task: Task, mm: AddressSpace, image: Any, argv: list[str], envp: list[str],
                   execfn: str | None) -> None:
        from emukern.kernel.exec import load_elf_interp
        from emukern.loader.stack import layout_initial_stack, standard_auxv
        from emukern.kernel.mm_layout import arch_pick_mmap_layout, stack_gap, topdown_base
        from emukern.kernel.resource import RLIMIT_STACK, rlimit
        stack_top = self.arch.STACK_TOP
        # the range above this stays for mmap, the stack and machine pages (the default layout's)
        mmap_base = topdown_base(stack_top, self.arch.STACK_SIZE)
        # the page layout (segments sharing a page get the union of permissions, like Linux's
        # overlapping mmaps), then the file bytes; bss stays zero
        for mp in image.mappings():
            if mp.start + mp.size > mmap_base - 0x1000_0000:
                from emukern.errors import ElfError
                raise ElfError(f"{image.path or 'program'}: a segment ends at {mp.start + mp.size:#x}, "
                               f"inside the range emukern keeps for mmap, the stack and machine pages "
                               f"(from {mmap_base - 0x1000_0000:#x})",
                               hint="link the program at a lower address (ld.lld's default is fine)")
            mm.map(mp.start, mp.size, mp.perms, "elf")
        for seg in image.segments:
            mm.write(seg.vaddr, seg.data, need="")
        mm.brk_start = mm.brk = image.brk_start
        arch_pick_mmap_layout(self, task, mm, stack_top)   # kernel/mm_layout.py (RLIMIT_STACK)
        interp = load_elf_interp(self, task, mm, image)      # PT_INTERP: (entry, AT_BASE) or None
        rnd = (task.tid * 0x9E3779B97F4A7C15 & (2**128 - 1)).to_bytes(16, "little")  # deterministic
        # AT_CLKTCK is CLOCKS_PER_SEC (USER_HZ, 100), whatever CONFIG_HZ the clock ticks at;
        # AT_RSEQ_FEATURE_SIZE is offsetof(struct rseq, end) (28 with mm_cid), AT_RSEQ_ALIGN 32
        auxv = standard_auxv(image, hwcap=self.arch.hwcap(), hwcap2=self.arch.hwcap2(),
                             clktck=USER_HZ, base=interp[1] if interp else 0,
                             minsigstksz=self.signal_minsigstksz(), dlinfo=self.arch.arch_dlinfo(),
                             rseq=(RSEQ_FEATURE_SIZE, RSEQ_ALIGN) if self.version.rseq_auxv else None)
        self.map_sigtramp(mm)             # the sigreturn trampoline page (Linux: the vDSO's)
        lay = layout_initial_stack(stack_top, argv=argv, envp=envp, auxv=auxv, random16=rnd,
                                   platform=self.arch.elf_platform, execfn=execfn)
        # Like Linux, map a small stack and grow it on faults (expand_stack) up to the rlimit (a
        # smaller mapping also makes switch_mm cheaper); the first mapping is STACK_INIT, or more
        # when the arguments need it (setup_arg_pages likewise extends the stack VMA past them)
        from emukern.machine.memory import page_up
        init = max(self.arch.STACK_INIT, page_up(stack_top - lay.sp) + 4 * 4096)
        mm.map(stack_top - init, init, "rw-", "[stack]")
        mm.stack_limit = stack_top - stack_gap(rlimit(self, task, RLIMIT_STACK))
        mm.write(lay.sp, lay.blob)
        mm.saved_auxv = lay.auxv          # (/proc/self/auxv)
        task.exec_pending = (mm, interp[0] if interp else image.entry, lay.sp, argv)

    def exec_commit(self, task: Task) -> None:
        assert task.exec_pending is not None
        mm, entry, sp, argv = task.exec_pending
        task.exec_pending = None
        task.mm = mm
        task.argv = argv                             # (/proc/self/cmdline)
        task.ctx = self.arch.initial_context(entry, sp)
        task.thread = self.arch.new_thread_state(task, None, exec_=True)

    def get_next_ino(self, cpu: Cpu) -> int:
        """fs/inode.c get_next_ino: inode numbers of pseudo files (pipes) come from a per-CPU
        batch of LAST_INO_BATCH taken from one shared counter, never 0 — a value of the model,
        the same every run (not a host address)."""
        pcpu = self.percpu[cpu.index]
        res = pcpu.last_ino
        if res % LAST_INO_BATCH == 0:
            self._shared_last_ino += LAST_INO_BATCH
            res = self._shared_last_ino - LAST_INO_BATCH
        res = (res + 1) & 0xFFFFFFFF
        if res == 0:
            res = 1
        pcpu.last_ino = res
        return res

    # ---- freeing what dead processes held (mmput / release_task) ---------------------------------
    def mmput(self, mm: AddressSpace) -> None:
        """Drop one user of ``mm``; the last one frees it (exit_mmap), as Linux does at exit and
        exec — not when the parent reaps the zombie.  The buffers go once no CPU maps them."""
        mm.users -= 1
        init = self.init_task
        if init is not None and mm is init.mm:
            return      # the first process's memory stays readable after the run (Machine.read)
        if mm.users <= 0 and mm is not self._no_mm:
            self._dead_mms.append(mm)

    def release_task(self, t: Task) -> None:
        """release_task: a DEAD task is unlinked from its parent's children (its memory went at
        exit).  The first REAPED_ROWS stay in the task table for the result; later ones leave it,
        their accounting summed into ``reaped_rest``."""
        leader = self.tasks.get(t.parent.tgid, t.parent) if t.parent is not None else None
        if leader is not None and t in leader.children:
            leader.children.remove(t)
        if t.is_thread_leader:
            self.child_wait.pop(t.tgid, None)
        t.children = []
        if self.reaped_kept < REAPED_ROWS:
            self.reaped_kept += 1
            return
        self.tasks.pop(t.tid, None)
        self.reaped_rest["tasks"] += 1
        for key in ("utime", "stime", "nvcsw", "nivcsw", "syscalls"):
            self.reaped_rest[key] += getattr(t, key)

    def _reap(self) -> None:
        """Between rounds (no CPU inside Unicorn): release dead tasks that are off every CPU and
        free the address spaces whose last user went, unmapping them from idle CPUs first."""
        if self._to_release:
            busy = {id(pc.curr) for pc in self.percpu if pc.curr is not None}
            keep = [t for t in self._to_release if id(t) in busy]
            for t in self._to_release:
                if id(t) not in busy:
                    self.release_task(t)
            self._to_release = keep
        if self._dead_mms:
            keep_mm: list[AddressSpace] = []
            for mm in self._dead_mms:
                busy_mm = False
                for cpu, pc in zip(self.cpus, self.percpu):
                    if cpu.mm is not mm:
                        continue
                    if cpu.running or (pc.curr is not None and pc.curr.mm is mm):
                        busy_mm = True
                    else:
                        cpu.attach_mm(self._no_mm)
                if busy_mm:
                    keep_mm.append(mm)
                    continue
                key = id(mm)
                for fk in [fk for fk in self.futex_queues if fk[0] == key]:
                    del self.futex_queues[fk]
                mm.release()
                self._freed_mms += 1
                if self._freed_mms % FLUSH_EVERY_FREED_MMS == 0:
                    # Unicorn keeps translated code of freed memory in its code buffer (~50 KB a
                    # child for a glibc fork/exit): drop it so a fork/exit loop stays bounded
                    for c in self.cpus:
                        c.flush_translations()
            self._dead_mms = keep_mm

    def syscall_entry(self, cpu: Cpu, pc: int, word: int, regs: tuple[int, ...], now: int, ucount: int) -> None:
        """The CPU's ``on_syscall``: :meth:`handle_trap` + :meth:`do_syscall` for a syscall, the
        same steps in the same order (so the same cycles), without a Trap object while nothing
        needs one.  Linux's el0_svc / do_trap_ecall_u is likewise the short path of the entry
        code: a syscall whose work flags are clear goes in, dispatches and returns without the
        slow-path calls.  Here the Trap is built (by the CPU, ``syscall_trap``) only for what
        reads it: a debugger gate or trap listener (then the whole generic path runs), a
        syscall that blocks, is preempted, restarts or ends the task, a pending signal — and
        the trap log, whose record builds it when it is read.  ``now``, ``ucount``: the CPU's
        marks at the trap (what handle_trap reads with cpu.marks())."""
        if self.trap_gate is not None or self.trap_listeners:
            self.handle_trap(cpu, cpu.syscall_trap(pc, word, regs))
            return
        # (sync_gate is not consulted: it parks traps that take a shared kernel lock at entry,
        # arm64's undef_lock, and a syscall takes none at entry)
        pcpu, ret_slot, write_ret = self._sys_percpu[cpu.index]
        task = pcpu.curr
        assert task is not None, "trap on an idle CPU"
        cost = self.cost
        # kernel entry, as handle_trap: the marks (given by the CPU), the entry's cost
        _account_entry(pcpu, task, now, ucount)
        cpu.charge(cost.exception_entry)
        nr = regs[0]
        entry = self._dispatch.get(nr)
        if entry is not None:
            entry[2] += 1               # trap_counts["syscall"] (see build_syscall_table)
        else:
            self._trap_counts["syscall"] += 1
        # do_syscall
        arch = self.arch
        note = arch.syscall_enter(cpu, task)   # vstate discard / fpsimd_syscall_enter
        notes = [note] if note else None
        cpu.charge(cost.syscall_dispatch)
        task.syscalls += 1
        name, ret = self._call_syscall(cpu, task, nr, regs[1:])
        if ret is BLOCK or ret is PREEMPTED or task.state is not _RUNNABLE or pcpu.curr is not task \
                or -517 < ret < -511:
            # the rare outcomes: the generic path from here, with the Trap it logs
            trap = cpu.syscall_trap(pc, word, regs)
            trap.notes = notes
            self._syscall_finish(cpu, task, trap, nr, regs[1:], name, ret)
            self._trap_exit(cpu, task, pcpu, trap, now)
            return
        if self.syscall_notes:          # e.g. a user copy through kernel-mode vector
            notes = (notes or []) + self.syscall_notes
            self.syscall_notes = []
        if ret_slot is None:
            arch.set_syscall_return(cpu, ret)
        else:
            ret_slot.value = ret        # regs->a0 / regs->regs[0]: no Python frame (reg_write_parts)
            write_ret()
        # exit_to_user_mode (as _trap_exit)
        trap = None
        ret_cost = cost.exception_return
        if not pcpu.need_resched:
            mm = cpu.mm
            if mm is not task.mm or mm.version != cpu.mapped_version:
                cpu.sync_mm()           # brk/mmap/munmap changed the current mm
            if task.flags & TIF_SIGPENDING:     # exit_to_user_mode_loop: -> do_signal
                # a signal for a user handler and nothing else to do: its note rides on the
                # syscall's own record; anything more (a default action, a restart, a stop,
                # a tracer, a second signal) goes through do_signal with the Trap it logs
                if notes is None:
                    notes = []
                if not self.deliver_to_handler(cpu, task, notes) or task.flags & TIF_SIGPENDING:
                    trap = cpu.syscall_trap(pc, word, regs)
                    trap.handler, trap.ret, trap.notes = name, ret, notes or None
                    self.do_signal(cpu, task, trap)
                elif not notes:
                    notes = None
            work = arch.exit_work_tif
            if task.state is not _RUNNABLE:
                note = None
            elif work is not None and not task.flags & work:
                # exit_to_user's flag test found nothing to do: its cost joins the exception
                # return's in one charge (nothing reads the clock between the two)
                ret_cost += cost.tif_check
                note = None
            else:
                note = arch.exit_to_user(cpu, task)
            if note:
                if trap is not None:
                    if trap.notes is None:
                        trap.notes = [note]
                    else:
                        trap.notes.append(note)
                elif notes is None:
                    notes = [note]
                else:
                    notes.append(note)
        end, ucount = cpu.charge_marks(ret_cost)
        cycles = end - now
        if entry is not None:
            entry[3] += 1               # syscall_counts[name] and trap_cycles["syscall"]
            entry[4] += cycles
        else:
            self._syscall_counts[name] += 1
            self._trap_cycles["syscall"] += cycles
        task.stime += end - pcpu.last_mark
        pcpu.last_mark = end
        pcpu.user_mark = ucount
        self._seq += 1
        if trap is None:
            rec = _new_record(SyscallRecord)      # (no __init__ frame: the record is one tuple)
            rec._p = (self._seq, cpu.index, task.tid, end, task.flags, cpu, pc, word, regs, name, ret, cycles, notes)
            self.trap_log.append(rec)
        else:
            trap.cycles = cycles
            self.trap_log.append(TrapRecord(self._seq, cpu.index, task.tid, end, trap, task.flags))
        if pcpu.need_resched:
            cpu.stop()

    def _fold_syscall_counts(self) -> None:
        """Move what syscall_entry counted in the dispatch table's entries into the Counters
        (sums: when they are folded changes nothing)."""
        traps = calls = cycles = 0
        counts = self._syscall_counts
        for e in self._dispatch_entries:
            if e[2] or e[3]:        # (a fold inside a call, e.g. at a preemption point, splits them)
                traps += e[2]
                if e[3]:
                    counts[e[0]] += e[3]
                    calls += e[3]
                    cycles += e[4]
                e[2] = e[3] = e[4] = 0
        if traps:
            self._trap_counts["syscall"] += traps
        if calls:
            self._trap_cycles["syscall"] += cycles

    @property
    def trap_counts(self) -> Counter[str]:
        """Traps taken, by kind (TrapKind values: "syscall", "undef", ...)."""
        self._fold_syscall_counts()
        return self._trap_counts

    @property
    def trap_cycles(self) -> Counter[str]:
        """Cycles spent handling traps, by kind (every trap, not only the trap log's)."""
        self._fold_syscall_counts()
        return self._trap_cycles

    @property
    def syscall_counts(self) -> Counter[str]:
        """Syscalls that returned (or blocked, or were preempted), by name."""
        self._fold_syscall_counts()
        return self._syscall_counts

    def handle_trap(self, cpu: Cpu, trap: Trap) -> None:
        """Every user->kernel transition lands here (called from the CPU's hook)."""
        task = self.percpu[cpu.index].curr
        assert task is not None, "trap on an idle CPU"
        if self.sync_gate is not None and cpu.running and self.sync_gate(cpu, task, trap):
            self.percpu[cpu.index].parked_trap = trap    # delivered by _round when others caught up
            self.parked_traps += 1
            cpu.stop()
            return
        if self.trap_gate is not None and self.deferred_trap is None and self.trap_gate(cpu, task, trap):
            self.deferred_trap = (cpu, trap)     # the debugger runs it later: resume_trap()
            self.deferred_pc = cpu.get_pc()      # the PC the handler expects (e.g. past ecall/svc)
            cpu.set_pc(trap.pc)
            cpu.stop()
            return
        pcpu = self.percpu[cpu.index]
        now, ucount = cpu.marks()
        _account_entry(pcpu, task, now, ucount)     # kernel entry
        costs = self._costs
        cpu.charge(costs["exception_entry"])
        kind = trap.kind
        self._trap_counts[kind._value_] += 1     # (Enum.value is a property; _value_ is not)
        listeners = self.trap_listeners
        for cb in listeners:
            cb("enter", cpu, task, trap)
        if kind is TrapKind.SYSCALL:
            self.do_syscall(cpu, task, trap)
        else:
            self.arch.handle_trap(cpu, task, trap)
        self._trap_exit(cpu, task, pcpu, trap, now)

    def _trap_exit(self, cpu: Cpu, task: Task, pcpu: PerCpu, trap: Trap, now: int) -> None:
        """handle_trap after the handler: exit_to_user_mode, exception return, the accounting
        and the trap log (``now``: the time at kernel entry)."""
        costs = self._costs
        kind = trap.kind
        listeners = self.trap_listeners
        if pcpu.curr is task and not pcpu.need_resched and task.state is TaskState.RUNNABLE:
            if cpu.mm is not task.mm or cpu.mm.version != cpu.mapped_version:
                cpu.sync_mm()           # brk/mmap/munmap changed the current mm
            if task.flags & TIF_SIGPENDING:     # exit_to_user_mode_loop: -> do_signal
                self.do_signal(cpu, task, trap)
            note = self.arch.exit_to_user(cpu, task) if task.state is TaskState.RUNNABLE else None
            if note:
                if trap.notes is None:
                    trap.notes = [note]
                else:
                    trap.notes.append(note)
        end, ucount = cpu.charge_marks(costs["exception_return"])
        trap.cycles = end - now
        self._trap_cycles[kind._value_] += end - now
        task.stime += end - pcpu.last_mark
        pcpu.last_mark = end
        pcpu.user_mark = ucount
        self._seq += 1
        self.trap_log.append(TrapRecord(self._seq, cpu.index, task.tid, end, trap, task.flags))
        for cb in listeners:
            cb("exit", cpu, task, trap)
        if pcpu.need_resched:
            cpu.stop()

    def _log_trap(self, cpu: Cpu, task: Task, trap: Trap) -> None:
        self._seq += 1
        self.trap_log.append(TrapRecord(self._seq, cpu.index, task.tid, cpu.now, trap, task.flags))

    def exit_to_user_mode(self, cpu: Cpu, task: Task) -> None:
        """exit_to_user_mode_loop: pending signals (do_signal), then the arch's return-to-user work
        (deferred restores, lazy FP)."""
        if task.flags & TIF_SIGPENDING or task.signal is not None and task.signal.stop_pending:
            self.do_signal(cpu, task)
            if task.state is not TaskState.RUNNABLE:
                self.sched.schedule(cpu)      # a fatal signal or a group stop: pick something else
                return
        self.arch.exit_to_user(cpu, task)

    def do_syscall(self, cpu: Cpu, task: Task, trap: Trap) -> None:
        """el0_svc / do_trap_ecall_u.  Unicorn has already stepped the PC past ecall/svc, which is
        what Linux's ``regs->epc += 4`` (RISC-V) and the ELR after SVC (arm64) give."""
        regs = trap.sysregs or cpu.syscall_regs()
        nr = regs[0]
        args = tuple(regs[1:])
        note = self.arch.syscall_enter(cpu, task)   # vstate discard / fpsimd_syscall_enter
        if note:
            trap.notes = [note]
        cpu.charge(self._costs["syscall_dispatch"])
        task.syscalls += 1
        name, ret = self._call_syscall(cpu, task, nr, args)
        self._syscall_finish(cpu, task, trap, nr, args, name, ret)

    def _syscall_finish(self, cpu: Cpu, task: Task, trap: Trap, nr: int, args: tuple[int, ...], name: str,
                        ret: Any) -> None:
        """do_syscall after the handler: its notes, blocking, preemption, the return value."""
        if self.syscall_notes:          # e.g. a user copy through kernel-mode vector
            trap.notes = (trap.notes or []) + self.syscall_notes
            self.syscall_notes = []
        trap.handler = name
        self._syscall_counts[name] += 1
        if ret is BLOCK:
            task.pending = (nr, args)
            if task.state is not TaskState.BLOCKED:
                self.sched.block_current(cpu, task, name)
            trap.decision = f"blocked ({task.wait_reason})"
            return
        if ret is PREEMPTED:            # switched out at a preemption point (kernel/preempt.py)
            task.pending = (nr, args)   # runnable: schedule() continues the call when it is back
            trap.decision = describe_preemption(task, name)
            return
        if task.state is TaskState.RUNNABLE and self.percpu[cpu.index].curr is task:
            if -517 < ret < -511:       # ERESTART*: do_signal restarts the call or makes it -EINTR
                self.note_restart(task, nr, args, ret)
            self.arch.set_syscall_return(cpu, ret)
            trap.ret = ret
        elif not task.alive:
            trap.decision = trap.decision or (f"task exited (wait status {task.exit_code:#x})")

    def expand_stack(self, task: Task, addr: int) -> bool:
        """Grow the [stack] mapping down to cover ``addr`` if it is within the stack rlimit."""
        from emukern.machine.memory import page_down
        mm = task.mm
        limit = mm.stack_limit
        stack = next((m for m in mm.mappings if m.name == "[stack]"), None)
        if limit is None or stack is None or not limit <= addr < stack.start:
            return False
        start = page_down(addr)
        if mm.overlaps(start, stack.start - start):
            return False
        try:
            mm.map(start, stack.start - start, "rw-", "[stack]")
        except OutOfMemory:
            return False        # no memory to grow into: the fault stands (SIGSEGV), as in Linux
        return True

    def force_sig(self, cpu: Cpu, task: Task, sig: int, trap: Trap | None, why: str) -> None:
        """A signal the kernel raises for ``task`` (a fault, SIGPIPE).  A trap's signal is forced
        (force_sig_fault: it cannot be blocked or ignored) and goes to the handler if one is
        installed; otherwise it takes its default action on the way back to user mode.  The
        report below is what the run summary shows if the signal kills the task."""
        from emukern.kernel import signal as S
        report: dict[str, Any] = {"signal": sig, "signame": S.signal_name(sig), "tid": task.tid,
                                  "why": why}
        if trap is None:
            # send_sig(SIGPIPE, current): an ordinary thread-directed signal (si_code SI_USER)
            self.send_signal(cpu, task, S.KSigInfo(sig, S.SI_USER, pid=task.tgid, report=report), False)
            return
        from emukern.disasm import disasm_one
        report["pc"] = trap.pc
        report["insn"] = trap.insn
        report["syndrome"] = trap.syndrome()
        from emukern.machine.memory import MemoryFault
        try:
            code = task.mm.read(trap.pc, 4, "x")
        except MemoryFault:               # the PC is not in executable memory: nothing to show
            report["disasm"] = "<unreadable>"
        else:
            report["disasm"] = disasm_one(self.config.arch, code, trap.pc)
        if trap.addr is not None:
            report["addr"] = trap.addr
        if trap.detail:
            report["detail"] = trap.detail
        if sig == S.SIGSEGV:
            mapped = trap.addr is not None and task.mm.find(trap.addr) is not None
            si_code, addr = (S.SEGV_ACCERR if mapped else S.SEGV_MAPERR), trap.addr
        elif sig == S.SIGBUS:
            si_code, addr = S.BUS_ADRALN, trap.addr
        elif sig == S.SIGTRAP:
            si_code, addr = S.TRAP_BRKPT, trap.pc
        else:
            si_code, addr = S.ILL_ILLOPC, trap.pc
        ka = task.sighand.action[sig] if task.sighand is not None else None
        caught = ka is not None and ka.handler not in (S.SIG_DFL, S.SIG_IGN) \
            and not task.sigstate.blocked & S.sigmask(sig)
        trap.decision = (f"{report['signame']} ({why}) to the handler at {ka.handler:#x}" if caught and ka
                         else f"{report['signame']}: {why}")
        self.force_sig_fault(cpu, task, sig, si_code, addr, trap, report)
