"""The composition root: :class:`Kernel` boots the machine's CPUs and owns what the kernel is
made of — the scheduler (``k.sched``), the SMP run loop (``k.runloop``), the arch object
(``k.arch``), the VFS (``k.vfs``), the syscall table, the sysctls and policies, the tasks — and
keeps the trap log and the counters.  It has no base class and forwards nothing: every part is a
free function or a small object that takes the kernel as ``k`` (typed as the
:class:`emukern.kernel.types.Kernel` Protocol), found under the name Linux gives it:

* kernel/entry.py — handle_trap, the syscall entry, exit_to_user_mode_loop (the way in and out);
* kernel/syscalls/ — the syscalls, one module per Linux file (read_write.py, open.py, ...);
* kernel/signal/ — generation, delivery, job control, exit/wait, ptrace, the core dump;
* kernel/sched.py, smp.py, tick.py, preempt.py — scheduling, the run loop, the one tick;
* kernel/mm/, fs/, net/ — mm_struct and uaccess, the guest root and /proc, AF_UNIX;
* kernel/arch/ — ArchBase and its arm64 and riscv64 fillings.
"""
from __future__ import annotations

from emukern.kernel.mm.mm_struct import MmStruct

from collections import Counter, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from emukern.config import MachineConfig
from emukern.errors import ConfigError
from emukern.kernel.files import FdTable, OutputFile, StdinFile, WaitQueue
from emukern.kernel.ipc.util import IpcNamespace
from emukern.kernel.pid import initial_pid_ns
from emukern.kernel.policies import Policies
from emukern.kernel.preempt import PreemptStats
from emukern.kernel.spinlock import SpinLock
from emukern.kernel.sched import PerCpu, Scheduler
from emukern.kernel.signal import init_task_signals
from emukern.kernel.smp import RunLoop
from emukern.kernel.sysctl import SysctlTable
from emukern.kernel.task import Task, TaskState
from emukern.machine.clock import Clock
from emukern.kernel.cost import CostTable
from emukern.machine.cpu_base import Cpu
from emukern.machine.memory import AddressSpace, MemoryPool, OutOfMemory
from emukern.machine.trap import Trap
from emukern.kernel import entry as kernel_entry
from emukern.kernel.arch import make_arch
from emukern.kernel.boot_checks import validate_for_kernel
from emukern.kernel.fs.namei import LAST_INO_BATCH  # noqa: F401
from emukern.kernel.entry import SyscallRecord, TrapRecord  # noqa: F401  (the trap log's records)
from emukern.kernel import exec as kernel_exec
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.signal import exit as signal_exit
from emukern.kernel.syscalls import table as syscalls_table
import functools
from emukern.kernel.exec import ExecError
from emukern.kernel.exec import bprm_stack_limits as exec_stack_limits
from emukern.kernel.resource import RLIMIT_STACK, rlimit
from emukern.kernel.versions import effective_policies, kernel_version
from emukern.loader.elf import load_elf
from emukern.loader.stack import encode_str


if TYPE_CHECKING:
    from emukern.kernel.arch.arm64.entry_fpsimd import SveStateArea

_RUNNABLE = TaskState.RUNNABLE      # (an Enum member looked up on its class costs ~0.15 us here)
TRAP_LOG_LIMIT = 20000
FLUSH_EVERY_FREED_MMS = 16     # drop Unicorn's translations after this many freed address spaces


class ArgListTooLong(ConfigError):
    """The arguments and environment do not fit Linux's limits: E2BIG (execve) or a clear error."""


def bprm_stack_limits(argv: list[str], envp: list[str], execfn: str, stack_rlimit: int) -> None:
    """The first program's command line against Linux's limits: kernel/exec.py's
    bprm_stack_limits (the one execve uses), its E2BIG turned into a clear error for the user."""
    try:
        exec_stack_limits([encode_str(a) for a in argv], [encode_str(e) for e in envp], stack_rlimit,
                          encode_str(execfn))
    except ExecError as exc:
        raise ArgListTooLong(f"argument list too long (E2BIG): {exc.why}",
                             hint="pass large data through a file or standard input (--stdin)") from None


class Kernel:
    """One machine's kernel (see the module docstring for the parts it owns)."""

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
    # arm64 (kernel/arch/arm64/fpsimd.py setup): every task's sve_state/fpsimd_state buffer, and the
    # SVE events the patch author counted, summed over tasks
    sve_area: "SveStateArea | None" = None
    sve_stats: "Counter[str]"
    sve_syscall_timeout: bool = False   # arm64-sve follows p1+p2 (kept by fpsimd.setup on a switch)
    # arm64 (kernel/arch/arm64/traps.py setup): the undef hook list/MRS emulation state, and the
    # sanitised ID registers of the system (cpufeature.py SystemIdRegs)
    arm64_undef: Any = None
    # signal delivery's per-kernel state (kernel/signal/delivery.py)
    _in_handler = False
    _arch_sig_mod: Any = None
    _sigtramp: int | None = None
    id_regs: Any = None

    def __init__(self, config: MachineConfig, *, echo_stdout: BinaryIO | None = None,
                 echo_stderr: BinaryIO | None = None) -> None:
        config.validate()
        validate_for_kernel(config)     # the checks that need the kernel model (boot_checks.py)
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
        # guest paths an execve failed on with ENOENT (the first few): the CLI's --root hint
        self.exec_enoent: list[str] = []
        self.preempt_stats = PreemptStats()       # preemption points inside syscalls (kernel/preempt.py)
        self.syscall_notes: list[str] = []          # what kernel paths inside a syscall decided     # WARN_ON()s hit, by condition (see warn_on)
        self.trap_log: deque[TrapRecord] = deque(maxlen=TRAP_LOG_LIMIT)
        self.trap_listeners: list[Any] = []       # the debugger subscribes here
        self.signal_listeners: list[Any] = []     # (cpu, task, siginfo) when a handler's frame is set up
        self.locks: dict[str, SpinLock] = {}
        self.futex_queues: dict[tuple[int, int], WaitQueue] = {}
        self.ipc_ns = IpcNamespace()            # SysV IPC objects (kernel/ipc/)
        self.init_pid_ns = initial_pid_ns()     # the pid namespace the first process is born in
        self.child_wait: dict[int, WaitQueue] = {}
        self.stop_reason = ""
        self.stop_message = ""
        self.init_task: Task | None = None
        self.fault_report: dict[str, Any] | None = None
        self.wall_seconds = 0.0
        self.exited = False
        self._costs = self.cost.values
        self.arch = make_arch(self)
        self._dispatch = syscalls_table.build_syscall_table(self)
        self._dispatch_entries = list(self._dispatch.values())
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
            cpu.on_trap = functools.partial(kernel_entry.handle_trap, self)
            cpu.on_syscall = functools.partial(kernel_entry.syscall_entry, self)
            rvv = getattr(cpu, "rvv", None)
            if self.cost.rvv and rvv is not None:
                rvv.set_costs(dict(self.cost.rvv))     # --cost rvv.KIND.PART=N
        fs_namei.fs_init(self)              # the guest root with /proc and /dev (kernel/fs)
        self.arch.boot()
        for k, v in config.sysctls.items():
            self.sysctl.write(k, v)
        self.policies.booted = True               # from now on a policy switch is a run-time one

    def syscall_name(self, nr: int) -> str:
        """The name of syscall ``nr`` in this machine's table (``syscall_NR`` when unknown)."""
        return syscalls_table.syscall_name(self, nr)

    def syscall_handler(self, nr: int) -> Any:
        """The table's handler for ``nr``, its kernel bound: how a lower part of the kernel
        (signal code probing a wait) calls a syscall without importing the syscall layer."""
        return self._dispatch[nr][1]

    def log_trap(self, cpu: Cpu, task: Task, trap: Trap) -> None:
        """Append a record to the trap log (the root owns the log and its sequence numbers)."""
        self._seq += 1
        self.trap_log.append(TrapRecord(self._seq, cpu.index, task.tid, cpu.now, trap, task.flags))

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
        """The next number of the initial pid namespace (alloc_pid's idr_alloc_cyclic: upwards,
        past a number a clone3 set_tid took ahead of the cursor)."""
        tid = self._next_tid
        while tid in self.tasks and self.tasks[tid].state is not TaskState.DEAD:
            tid += 1
        self._next_tid = tid + 1
        return tid

    def live_tasks(self) -> list[Task]:
        return [t for t in self.tasks.values() if t.alive]

    def load(self, path: str, argv: list[str] | None = None, envp: list[str] | None = None) -> Task:
        """Create the first process from a static ELF (pid 1, like the init a kernel execs)."""
        image = load_elf(path, allow_interp=True)
        if image.arch != self.config.arch:
            raise ConfigError(f"{path} is a {image.arch} program but the machine is {self.config.arch}",
                              hint=f"drop --arch or use --arch {image.arch}")
        files = FdTable(self.mem)       # descriptors are charged to the guest memory too
        files.install(StdinFile(self.config.stdin))
        files.install(OutputFile("stdout", self.stdout, self._echo_out))
        files.install(OutputFile("stderr", self.stderr, self._echo_err))
        task = Task(tid=self.alloc_tid(), tgid=0, parent=None, mm=MmStruct(pool=self.mem), files=files,
                    comm=str(path).rsplit("/", 1)[-1][:15])
        task.tgid = task.tid
        init_task_signals(task)
        # /proc/self/exe is a guest path: the program's place in the root, or its name at the
        # top of it when it comes from outside the root (a host path means nothing in the guest)
        task.exe = (self.vfs.guest_path_of_host(str(path))
                    or "/" + Path(path).name)
        self.tasks[task.tid] = task
        self.init_task = task
        fs_namei.fs_init_task(self, task)     # its cwd in the guest root (kernel/fs/namei.py)
        argv = argv or [str(path)]
        envp = envp or []
        bprm_stack_limits(argv, envp, argv[0] if argv else "", rlimit(self, task, RLIMIT_STACK))
        try:
            kernel_exec.exec_image(self, task, image, argv, envp, execfn=str(path))
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







    def _reap(self) -> None:
        """Between rounds (no CPU inside Unicorn): release dead tasks that are off every CPU and
        free the address spaces whose last user went, unmapping them from idle CPUs first."""
        if self._to_release:
            busy = {id(pc.curr) for pc in self.percpu if pc.curr is not None}
            keep = [t for t in self._to_release if id(t) in busy]
            for t in self._to_release:
                if id(t) not in busy:
                    signal_exit.release_task(self, t)
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








