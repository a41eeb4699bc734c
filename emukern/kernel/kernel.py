"""The Python kernel: boots CPUs, owns tasks, takes every trap, schedules — on one clock.

A trap's path (each arrow one call with a Linux name):
  CPU hook builds a Trap -> :meth:`Kernel.handle_trap` (kernel entry: account user time, charge
  entry) -> :meth:`do_syscall` (arch ``syscall_enter`` work, dispatch) or the arch trap handler
  (``do_el0_undef``, ``do_sve_acc``, ``riscv_v_first_use_handler``, ...) -> :meth:`exit_to_user_mode`
  (arch return-to-user work, maybe ``schedule``) -> the CPU resumes the guest.

SMP: every CPU has a local clock (cycles).  The run loop always advances the CPU that is furthest
behind, by at most ``quantum`` cycles past the next CPU, so CPUs stay in near lock-step and the
order in which they reach shared resources (locks, pipes, futexes) follows simulated time.
Everything is deterministic: no host time, no host threads, ties broken by CPU index.
"""
from __future__ import annotations

import heapq
from pathlib import Path
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from emukern.config import MachineConfig
from emukern.errors import ConfigError, EmukernError, MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.files import FdTable, OutputFile, StdinFile, WaitQueue
from emukern.kernel.policies import Policies
from emukern.kernel.spinlock import SpinLock
from emukern.kernel.syscalls import BLOCK, SyscallsMixin
from emukern.kernel.sysctl import SysctlTable
from emukern.kernel.task import Task, TaskState
from emukern.machine.clock import Clock
from emukern.machine.cost import CostTable
from emukern.machine.cpu_base import Cpu
from emukern.machine.memory import AddressSpace, OutOfMemory
from emukern.machine.trap import Trap, TrapKind

TRAP_LOG_LIMIT = 20000
_NO_WORK = 1 << 80          # _pick_cpu key of a CPU with nothing to run


@dataclass
class PerCpu:
    """Per-CPU scheduler state (Linux ``struct rq`` plus a few per-CPU variables)."""
    index: int
    curr: Task | None = None
    rq: deque = field(default_factory=deque)
    next_tick: int = 0
    timers: list = field(default_factory=list)       # heap of (wake_at, seq, task)
    need_resched: bool = False
    nr_switches: int = 0
    ticks: int = 0
    last_mark: int = 0          # accounting mark (cycles) for the current task
    user_mark: int = 0          # user instruction mark for the current task
    parked_trap: Trap | None = None  # a trap waiting at a sync point (Kernel.sync_gate)
    sync_hint: bool = False     # its last run reached a sync point: next run stops at sync_floor


class TrapRecord:
    """One entry of the trap log.  Built on every trap, so it stores the Trap and formats lazily."""

    __slots__ = ("seq", "cpu", "tid", "time", "trap")

    def __init__(self, seq: int, cpu: int, tid: int, time: int, trap: Trap) -> None:
        self.seq, self.cpu, self.tid, self.time, self.trap = seq, cpu, tid, time, trap

    kind = property(lambda self: self.trap.kind.value)
    pc = property(lambda self: self.trap.pc)
    insn = property(lambda self: self.trap.insn)
    handler = property(lambda self: self.trap.handler)
    cycles = property(lambda self: self.trap.cycles)
    syndrome = property(lambda self: self.trap.syndrome())

    @property
    def decision(self) -> str:
        return self.trap.describe()

    def __repr__(self) -> str:
        return (f"TrapRecord(#{self.seq} cpu{self.cpu} tid{self.tid} {self.kind} pc={self.pc:#x} "
                f"{self.handler}: {self.decision})")


class StopRun(Exception):
    """Internal: the whole machine must stop (budget, deadlock, init gone)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class Kernel(SyscallsMixin):
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
    #   sync_gate(cpu, task, trap) -> bool: consulted on trap entry while the CPU runs; True means
    #     "this trap is about to take a shared lock and another active CPU's clock is still behind
    #     (cpu.now > sync_floor)".  The trap is parked on the CPU (PC at the instruction, nothing
    #     charged) and _round delivers it once this CPU is the furthest behind, so lock
    #     acquisitions happen in simulated-time order whatever the quantum.
    sync_gate: Any = None
    sync_floor: int = 1 << 62     # min clock of the other active CPUs (set by _lockstep_limit)
    parked_traps: int = 0

    def __init__(self, config: MachineConfig, *, echo_stdout: BinaryIO | None = None,
                 echo_stderr: BinaryIO | None = None) -> None:
        config.validate()
        self.config = config
        self.clock = Clock(config.freq_hz, config.hz, config.timer_freq)
        self.cost = CostTable()
        if config.cost_file:
            self.cost.load_file(config.cost_file)
        for k, v in config.costs.items():
            self.cost.override(k, v)
        self.policies = Policies(config.policies)
        self.sysctl = SysctlTable()
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._echo_out = echo_stdout
        self._echo_err = echo_stderr
        self.tasks: dict[int, Task] = {}
        self._next_tid = 1
        self._seq = 0
        self.trap_counts: Counter[str] = Counter()
        self.syscall_counts: Counter[str] = Counter()
        self.unknown_syscalls: Counter[int] = Counter()
        self.trap_log: deque[TrapRecord] = deque(maxlen=TRAP_LOG_LIMIT)
        self.trap_listeners: list[Any] = []       # the debugger subscribes here
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
        self.arch = self._make_arch()
        self.cpus: list[Cpu] = [self.arch.make_cpu(i) for i in range(config.cpus)]
        self.percpu = [PerCpu(i, next_tick=self.clock.tick_cycles) for i in range(config.cpus)]
        # CPU clocks as the run loop last saw them: only the CPU a round advances changes, so each
        # round refreshes that one entry instead of reading every CPU's counter (O(N) -> O(1))
        self._clocks = [0] * config.cpus
        self._last_cpu: Cpu | None = None
        for cpu in self.cpus:
            cpu.on_trap = self.handle_trap
        self.arch.boot()
        for k, v in config.sysctls.items():
            self.sysctl.write(k, v)

    def _make_arch(self) -> Any:
        if self.config.arch == "riscv64":
            from emukern.kernel.riscv.arch import RiscvArch
            return RiscvArch(self)
        from emukern.kernel.arm64.arch import Arm64Arch
        return Arm64Arch(self)

    # ---- small services ------------------------------------------------------------------------
    def policy(self, name: str) -> str:
        return self.policies[name]

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

    def current(self, cpu: Cpu) -> Task:
        t = self.percpu[cpu.index].curr
        assert t is not None, "trap on an idle CPU"
        return t

    def alloc_tid(self) -> int:
        tid = self._next_tid
        self._next_tid += 1
        return tid

    def live_tasks(self) -> list[Task]:
        return [t for t in self.tasks.values() if t.alive]

    # ---- loading a program ---------------------------------------------------------------------
    def load(self, path: str, argv: list[str] | None = None, envp: list[str] | None = None) -> Task:
        """Create the first process from a static ELF (pid 1, like the init a kernel execs)."""
        from emukern.loader.elf import load_elf
        image = load_elf(path)
        if image.arch != self.config.arch:
            raise ConfigError(f"{path} is a {image.arch} program but the machine is {self.config.arch}",
                              hint=f"drop --arch or use --arch {image.arch}")
        files = FdTable()
        files.install(StdinFile(self.config.stdin))
        files.install(OutputFile("stdout", self.stdout, self._echo_out))
        files.install(OutputFile("stderr", self.stderr, self._echo_err))
        task = Task(tid=self.alloc_tid(), tgid=0, parent=None, mm=AddressSpace(), files=files,
                    comm=str(path).rsplit("/", 1)[-1][:15])
        task.tgid = task.tid
        task.exe = str(Path(path).resolve())  # type: ignore[attr-defined]  (readlinkat /proc/self/exe)
        self.tasks[task.tid] = task
        self.init_task = task
        self.exec_image(task, image, argv or [str(path)], envp or [])
        self.enqueue(task, 0, now=0)
        self.symbols = dict(image.symbols)
        self.image = image
        return task

    def exec_image(self, task: Task, image: Any, argv: list[str], envp: list[str]) -> None:
        from emukern.loader.stack import build_initial_stack, standard_auxv
        mm = AddressSpace()
        stack_top = self.arch.STACK_TOP
        mmap_base = stack_top - self.arch.STACK_SIZE - 0x1000_0000
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
        # Like Linux, map a small stack and grow it on faults (expand_stack) up to the rlimit:
        # a smaller mapping also makes switch_mm (Unicorn unmap/map) much cheaper.
        mm.map(stack_top - self.arch.STACK_INIT, self.arch.STACK_INIT, "rw-", "[stack]")
        mm.stack_limit = stack_top - self.arch.STACK_SIZE  # type: ignore[attr-defined]
        mm.mmap_base = mmap_base
        rnd = (task.tid * 0x9E3779B97F4A7C15 & (2**128 - 1)).to_bytes(16, "little")  # deterministic
        auxv = standard_auxv(image, hwcap=self.arch.hwcap(), clktck=self.config.hz)
        sp = build_initial_stack(lambda a, d: mm.write(a, d), stack_top, argv=argv, envp=envp,
                                 auxv=auxv, random16=rnd, platform=None)
        task.mm = mm
        task.ctx = self.arch.initial_context(image.entry, sp)
        task.thread = self.arch.new_thread_state(task, None, exec_=True)

    # ---- scheduling ----------------------------------------------------------------------------
    def select_cpu(self, task: Task, new: bool = False) -> int:
        """select_task_rq: a new task goes to the least loaded allowed CPU (fork balancing); a
        woken task stays on its previous CPU when that CPU is idle or no allowed CPU is idle."""
        if new or not task.allowed_on(task.cpu) or task.cpu >= len(self.cpus):
            return self._least_loaded(task)
        prev = self.percpu[task.cpu]
        if prev.curr is None and not prev.rq:
            return task.cpu
        best = self._least_loaded(task)
        b = self.percpu[best]
        return best if b.curr is None and not b.rq else task.cpu

    def _least_loaded(self, task: Task) -> int:
        best, load = 0, None
        for pc in self.percpu:
            if not task.allowed_on(pc.index):
                continue
            n = len(pc.rq) + (pc.curr is not None)
            if load is None or n < load:
                best, load = pc.index, n
        return best

    def enqueue(self, task: Task, cpu_index: int, now: int) -> None:
        task.cpu = cpu_index
        task.state = TaskState.RUNNABLE
        task.ready_at = now
        self.percpu[cpu_index].rq.append(task)

    def wake_up(self, task: Task, now: int, value: int | None = None) -> None:
        """try_to_wake_up: make a blocked task runnable on a CPU's run queue."""
        if task.state != TaskState.BLOCKED:
            return
        task.woken_value = value
        task.wake_at = None
        self.enqueue(task, self.select_cpu(task), now)

    def wake_queue(self, wq: WaitQueue, now: int, nr: int | None = None, value: int | None = None) -> int:
        n = 0
        while wq.waiters and (nr is None or n < nr):
            t = wq.waiters.popleft()
            if t.state == TaskState.BLOCKED:
                self.wake_up(t, now, value)
                n += 1
        return n

    def add_timer(self, task: Task, wake_at: int) -> None:
        task.wake_at = wake_at
        self._seq += 1
        heapq.heappush(self.percpu[task.cpu].timers, (wake_at, self._seq, task))

    def _run_timers(self, cpu: Cpu) -> None:
        pc = self.percpu[cpu.index]
        while pc.timers and pc.timers[0][0] <= cpu.now:
            wake_at, _, task = heapq.heappop(pc.timers)
            if task.state == TaskState.BLOCKED and task.wake_at == wake_at:
                task.woken_value = -E.ETIMEDOUT
                for wq in getattr(task, "waitqueues", []):
                    wq.remove(task)
                self.wake_up(task, wake_at, -E.ETIMEDOUT)

    def account(self, cpu: Cpu, task: Task | None) -> None:
        """Charge the time since the last mark to the current task (user vs system)."""
        pc = self.percpu[cpu.index]
        now = cpu.now
        if task is not None:
            user = cpu.user_insns - pc.user_mark + 0
            total = now - pc.last_mark
            # user time = user instructions + their extra vector cycles; the rest is system time
            task.utime += min(user, total)
            task.stime += max(0, total - user)
        pc.last_mark = now
        pc.user_mark = cpu.user_insns

    def block_current(self, cpu: Cpu, task: Task, reason: str) -> None:
        task.state = TaskState.BLOCKED
        task.wait_reason = reason
        self.percpu[cpu.index].need_resched = True
        cpu.stop()

    def schedule(self, cpu: Cpu) -> None:
        """Pick the next task for ``cpu`` and switch to it (or go idle)."""
        pc = self.percpu[cpu.index]
        pc.need_resched = False
        prev = pc.curr
        preempted = prev is not None and prev.state == TaskState.RUNNABLE
        if preempted and prev is not None and not prev.allowed_on(cpu.index):
            # sched_setaffinity took this CPU away: migrate (like migration_cpu_stop)
            self._switch_out(cpu, prev, voluntary=False)
            self.enqueue(prev, self._least_loaded(prev), cpu.now)
            prev, preempted = None, False
        while True:
            nxt = self._pick_next(cpu)
            if nxt is None and preempted:
                nxt = prev                  # nobody else: keep running
            if nxt is None:
                if prev is not None:
                    self._switch_out(cpu, prev, voluntary=not preempted)
                pc.curr = None
                return
            if nxt is prev:
                pc.curr = prev
                prev.slice_start = cpu.now
                # exit_to_user_mode_loop: schedule() picked us again; the arch return-to-user
                # work (e.g. TIF_RISCV_V_DEFER_RESTORE) still runs before user code resumes
                self.exit_to_user_mode(cpu, prev)
                return
            if prev is not None:
                if preempted:
                    pc.rq.append(prev)
                    prev.ready_at = cpu.now
                self._switch_out(cpu, prev, voluntary=not preempted)
                prev = None
                preempted = False
            if nxt.ready_at > cpu.now:
                cpu.idle_until(nxt.ready_at)
                pc.last_mark = cpu.now
            self._switch_in(cpu, nxt)
            if nxt.pending is not None and not self._restart_syscall(cpu, nxt):
                # still blocked: it went back to sleep; pick again
                prev = nxt
                pc.curr = nxt
                continue
            self.exit_to_user_mode(cpu, nxt)
            return

    def _pick_next(self, cpu: Cpu) -> Task | None:
        pc = self.percpu[cpu.index]
        for _ in range(len(pc.rq)):
            t = pc.rq.popleft()
            if t.state != TaskState.RUNNABLE:
                continue
            if not t.allowed_on(cpu.index):
                self.enqueue(t, self._least_loaded(t), t.ready_at)
                continue
            return t
        return None

    def _switch_out(self, cpu: Cpu, prev: Task, voluntary: bool) -> None:
        self.account(cpu, prev)
        if prev.alive:
            prev.ctx = cpu.save_context()
        if not prev.alive:
            pass                      # the final switch away from an exiting task
        elif voluntary:
            prev.nvcsw += 1
        else:
            prev.nivcsw += 1
        self.arch.switch_from(cpu, prev)
        self.percpu[cpu.index].curr = None

    def _switch_in(self, cpu: Cpu, nxt: Task) -> None:
        """context_switch: schedule() cost, switch_mm if needed, __switch_to, restore regs."""
        pc = self.percpu[cpu.index]
        cpu.charge(self.cost.schedule)
        if cpu.mm is not nxt.mm:
            cpu.charge(self.cost.switch_mm)
        cpu.attach_mm(nxt.mm)
        cpu.charge(self.cost.switch_to)
        cpu.load_context(nxt.ctx)
        self.arch.switch_to(cpu, nxt)
        pc.curr = nxt
        pc.nr_switches += 1
        nxt.cpu = cpu.index
        nxt.slice_start = cpu.now
        self.account(cpu, nxt)      # the switch itself is system time of the task switched to

    def _restart_syscall(self, cpu: Cpu, task: Task) -> bool:
        """Re-run a blocked syscall after wake-up; True if it completed."""
        assert task.pending is not None
        nr, args = task.pending
        task.state = TaskState.RUNNABLE
        ret = self._call_syscall(cpu, task, nr, args)
        if ret is BLOCK:
            task.state = TaskState.BLOCKED
            self.percpu[cpu.index].curr = None
            self.account(cpu, task)
            task.ctx = cpu.save_context()
            return False
        task.pending = None
        if task.alive:
            self.arch.set_syscall_return(cpu, ret)
        return True

    # ---- kernel entry / exit -------------------------------------------------------------------
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
        # kernel entry: the time since the last mark was user time
        pcpu = self.percpu[cpu.index]
        now = cpu.now
        ucount = cpu._cs.count - cpu.stub_insns
        user = ucount - pcpu.user_mark
        total = now - pcpu.last_mark
        task.utime += user if user < total else total
        task.stime += total - user if total > user else 0
        pcpu.last_mark = now
        pcpu.user_mark = ucount
        costs = self._costs
        cpu.sys_cycles += costs["exception_entry"]
        kind = trap.kind
        self.trap_counts[kind._value_] += 1     # (Enum.value is a property; _value_ is not)
        listeners = self.trap_listeners
        for cb in listeners:
            cb("enter", cpu, task, trap)
        if kind is TrapKind.SYSCALL:
            self.do_syscall(cpu, task, trap)
        else:
            self.arch.handle_trap(cpu, task, trap)
        if pcpu.curr is task and not pcpu.need_resched and task.state is TaskState.RUNNABLE:
            if cpu.mm is not task.mm or cpu.mm.version != cpu._mapped_version:
                cpu.sync_mm()           # brk/mmap/munmap changed the current mm
            note = self.arch.exit_to_user(cpu, task)
            if note:
                if trap.notes is None:
                    trap.notes = [note]
                else:
                    trap.notes.append(note)
        cpu.sys_cycles += costs["exception_return"]
        end = cpu.now
        trap.cycles = end - now
        task.stime += end - pcpu.last_mark
        pcpu.last_mark = end
        pcpu.user_mark = cpu._cs.count - cpu.stub_insns
        self._seq += 1
        self.trap_log.append(TrapRecord(self._seq, cpu.index, task.tid, end, trap))
        for cb in listeners:
            cb("exit", cpu, task, trap)
        if pcpu.need_resched:
            cpu.stop()

    def _log_trap(self, cpu: Cpu, task: Task, trap: Trap) -> None:
        self._seq += 1
        self.trap_log.append(TrapRecord(self._seq, cpu.index, task.tid, cpu.now, trap))

    def exit_to_user_mode(self, cpu: Cpu, task: Task) -> None:
        """exit_to_user_mode_loop: the arch's return-to-user work (deferred restores, lazy FP)."""
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
        cpu.sys_cycles += self._costs["syscall_dispatch"]
        task.syscalls += 1
        entry = self._dispatch.get(nr)
        if entry is None:
            name = f"syscall_{nr}"
            self.unknown_syscalls[nr] += 1
            ret = -E.ENOSYS
        else:
            name, fn = entry
            try:
                ret = fn(cpu, task, *args)
            except MemoryFault:
                ret = -E.EFAULT
            except OutOfMemory:
                ret = -E.ENOMEM
        trap.handler = name
        self.syscall_counts[name] += 1
        if ret is BLOCK:
            task.pending = (nr, args)
            if task.state is not TaskState.BLOCKED:
                self.block_current(cpu, task, name)
            trap.decision = f"blocked ({task.wait_reason})"
            return
        if task.state is TaskState.RUNNABLE and self.percpu[cpu.index].curr is task:
            self.arch.set_syscall_return(cpu, ret)
            trap.ret = ret
        elif not task.alive:
            trap.decision = trap.decision or (f"task exited (wait status {task.exit_code:#x})")

    def expand_stack(self, task: Task, addr: int) -> bool:
        """Grow the [stack] mapping down to cover ``addr`` if it is within the stack rlimit."""
        from emukern.machine.memory import page_down
        mm = task.mm
        limit = getattr(mm, "stack_limit", None)
        stack = next((m for m in mm.mappings if m.name == "[stack]"), None)
        if limit is None or stack is None or not limit <= addr < stack.start:
            return False
        start = page_down(addr)
        if mm.overlaps(start, stack.start - start):
            return False
        mm.map(start, stack.start - start, "rw-", "[stack]")
        return True

    # ---- signals -------------------------------------------------------------------------------
    def force_sig(self, cpu: Cpu, task: Task, sig: int, trap: Trap | None, why: str) -> None:
        """Deliver a fatal signal (emukern runs no user signal handlers): the thread group dies."""
        cpu.charge(self.cost.signal_deliver)
        report: dict[str, Any] = {"signal": sig, "signame": E.SIGNAL_NAMES.get(sig, str(sig)), "tid": task.tid,
                                  "why": why}
        if trap is not None:
            from emukern.disasm import disasm_one
            report["pc"] = trap.pc
            report["insn"] = trap.insn
            report["syndrome"] = trap.syndrome()
            try:
                code = task.mm.read(trap.pc, 4, "x")
                report["disasm"] = disasm_one(self.config.arch, code, trap.pc)
            except Exception:
                report["disasm"] = "<unreadable>"
            if trap.addr is not None:
                report["addr"] = trap.addr
            if trap.detail:
                report["detail"] = trap.detail
        task.fault_report = report
        if self.fault_report is None:
            self.fault_report = report
        if trap is not None:
            trap.decision = f"{report['signame']}: {why}"
        self.do_group_exit(cpu, task, sig, signaled=True)

    # ---- the run loop --------------------------------------------------------------------------
    def run(self) -> "RunResult":
        from emukern.kernel.result import RunResult
        if self.init_task is None:
            raise EmukernError("no program loaded", hint="call Kernel.load(path) first")
        t_wall = time.perf_counter()
        try:
            self._loop()
        except StopRun as stop:
            self.stop_reason = stop.reason
            self.stop_message = stop.message
            self._kill_everything()
        self.wall_seconds += time.perf_counter() - t_wall
        return RunResult.from_kernel(self)

    def step_loop(self, max_rounds: int) -> bool:
        """Run at most ``max_rounds`` scheduler rounds; False when the machine has finished."""
        self._refresh_clocks()
        try:
            for _ in range(max_rounds):
                if not self._round():
                    return False
        except StopRun as stop:
            self.stop_reason = stop.reason
            self.stop_message = stop.message
            self._kill_everything()
            return False
        return True

    def _loop(self) -> None:
        self._refresh_clocks()
        while self._round():
            pass

    def _refresh_clocks(self) -> None:
        self._clocks = [c.now for c in self.cpus]
        self._last_cpu = None

    def _round(self) -> bool:
        """One scheduling decision: advance the CPU that is furthest behind."""
        if self.init_task is None or not self._init_alive():
            if not self.stop_reason:
                self.stop_reason = "exited"
                left = self.live_tasks()
                if left:
                    # the first process is the machine's init: when it is gone the run ends
                    self.stop_message = (f"the first process exited while {len(left)} other task(s) "
                                         f"were still alive ({', '.join(str(t.tid) for t in left)}); "
                                         "they were stopped")
                    self._kill_everything()
            return False
        last = self._last_cpu
        if last is not None:
            self._clocks[last.index] = last.now
        cpu = self._last_cpu = self._pick_cpu()
        if cpu is None:
            blocked = [f"{t.tid}:{t.wait_reason}" for t in self.live_tasks()]
            raise StopRun("deadlock", "every task is blocked and no timer can wake any of them "
                          f"({', '.join(blocked)})")
        pc = self.percpu[cpu.index]
        if pc.curr is None:
            pc.parked_trap = None
            if pc.rq:
                self.schedule(cpu)
                return True
            target = self._idle_target(cpu)
            cpu.idle_until(target)
            pc.last_mark = cpu.now
            pc.next_tick = self.clock.next_tick(cpu.now)
            self._run_timers(cpu)
            return True
        parked = pc.parked_trap
        if parked is not None:
            # this CPU is now the furthest behind: its parked trap may take the shared resource
            pc.parked_trap = None
            if pc.curr.alive:                   # (dropped if killed while parked)
                self.handle_trap(cpu, parked)
            pc.sync_hint = True
        until = min(pc.next_tick, self._lockstep_limit(cpu))
        if self.config.max_insns is not None:
            left = self.config.max_insns - sum(c.user_insns for c in self.cpus)
            until = min(until, cpu.now + max(left, 0) + 1)
        if pc.timers:
            until = min(until, pc.timers[0][0])
        if self.run_cap is not None:
            cap = self.run_cap(cpu)
            if cap is not None:
                until = min(until, cap)
        if parked is not None:
            if until > cpu.now and not pc.need_resched and pc.curr is not None \
                    and pc.curr.state is TaskState.RUNNABLE and self.deferred_trap is None:
                cpu.run(until)
        elif until > cpu.now:
            cpu.run(until)
        if self.deferred_trap is not None:
            return True                         # stopped at a trap the debugger holds
        if pc.parked_trap is not None:
            return True                         # parked at a sync point: resumed next time
        self._finish_round(cpu)
        return True

    def _finish_round(self, cpu: Cpu) -> None:
        """After a CPU ran: account, fire due timers and the tick, reschedule, check the budget."""
        pc = self.percpu[cpu.index]
        if pc.curr is not None:
            self.account(cpu, pc.curr)
        self._run_timers(cpu)
        if cpu.now >= pc.next_tick:
            self._timer_tick(cpu)
        if pc.need_resched or (pc.curr is not None and pc.curr.state != TaskState.RUNNABLE):
            self.schedule(cpu)
        self._check_budget(cpu)

    def resume_trap(self) -> bool:
        """Run the handler of the trap the debugger's ``trap_gate`` deferred (outside the Unicorn
        hook, CPU stopped), then the rest of that scheduler round.  False when the machine has
        finished (like :meth:`step_loop`)."""
        if self.deferred_trap is None:
            return True
        cpu, trap = self.deferred_trap
        self.deferred_trap = None
        if self.deferred_pc is not None and cpu.get_pc() == trap.pc:
            cpu.set_pc(self.deferred_pc)         # as the hook saw it (unless the debugger moved it)
        self.deferred_pc = None
        gate, self.trap_gate = self.trap_gate, None
        try:
            self.handle_trap(cpu, trap)
            self._finish_round(cpu)             # the tail of _round for this CPU
        except StopRun as stop:
            self.stop_reason = stop.reason
            self.stop_message = stop.message
            self._kill_everything()
            return False
        finally:
            self.trap_gate = gate
        return self.init_task is not None and self._init_alive()

    def _init_alive(self) -> bool:
        init = self.init_task
        assert init is not None
        if init.alive:
            return True
        return any(t.tgid == init.tgid and t.alive for t in self.tasks.values())

    def _pick_cpu(self) -> Cpu | None:
        """The CPU furthest behind (busy before idle, then lowest index) among those with work."""
        # key = 2 * clock + idle: ordered by (clock, busy first, index) like the tuple it replaces
        keys = [t + t + (p.curr is None) if p.curr is not None or p.rq or p.timers else _NO_WORK
                for t, p in zip(self._clocks, self.percpu)]
        m = min(keys)
        return None if m == _NO_WORK else self.cpus[keys.index(m)]

    def _idle_target(self, cpu: Cpu) -> int:
        pc = self.percpu[cpu.index]
        cands = [pc.timers[0][0]] if pc.timers else []
        cands += [t for t, p in zip(self._clocks, self.percpu) if p is not pc and p.curr is not None]
        cands += [t.ready_at for t in pc.rq]
        target = min(cands) if cands else cpu.now
        return max(target, cpu.now + 1) if not pc.rq else max(target, cpu.now)

    def _lockstep_limit(self, cpu: Cpu) -> int:
        me = self.percpu[cpu.index]
        others = [t for t, p in zip(self._clocks, self.percpu) if p is not me and (p.curr is not None or p.rq)]
        if not others:
            self.sync_floor = 1 << 62
            return 1 << 62
        self.sync_floor = floor = min(others)
        if me.sync_hint:
            # it keeps taking a shared lock: run only up to where the others are, so its next
            # acquisition happens inside the hook instead of being parked and re-delivered
            if cpu.now > floor:
                return cpu.now              # already ahead (a parked trap just ran): no run now
            me.sync_hint = False
            return max(floor, cpu.now + 1)
        return max(floor, cpu.now) + self.config.quantum

    def _timer_tick(self, cpu: Cpu) -> None:
        """The per-CPU timer interrupt: taken between two user instructions."""
        pc = self.percpu[cpu.index]
        pc.ticks += 1
        pc.next_tick = self.clock.next_tick(cpu.now)
        task = pc.curr
        if task is None:
            return
        trap = Trap(TrapKind.TIMER, self.config.arch, cpu.get_pc(), cpu=cpu.index,
                    cause=(1 << 63) | 5 if self.config.arch == "riscv64" else None)
        t0 = cpu.now
        cpu.charge(self.cost.timer_tick)
        self.trap_counts["timer"] += 1
        for cb in self.trap_listeners:
            cb("enter", cpu, task, trap)
        trap.handler = "scheduler_tick"
        slice_cycles = self.clock.tick_cycles * self.config.timeslice_ticks
        if pc.rq and cpu.now - task.slice_start >= slice_cycles:
            pc.need_resched = True
            trap.decision = "time slice used up: preempt"
        else:
            trap.decision = "continue"
        if not pc.need_resched:
            self.exit_to_user_mode(cpu, task)
        trap.cycles = cpu.now - t0
        self._log_trap(cpu, task, trap)
        for cb in self.trap_listeners:
            cb("exit", cpu, task, trap)
        self.account(cpu, task)

    def _check_budget(self, cpu: Cpu) -> None:
        limit = self.config.max_insns
        if limit is not None and sum(c.user_insns for c in self.cpus) >= limit:
            cpu.stop()
            raise StopRun("budget", f"stopped after {limit:,} user instructions (--max-insns); "
                          "the guest may be stuck in a loop — raise --max-insns if it is just long")

    def _kill_everything(self) -> None:
        for t in list(self.tasks.values()):
            if t.alive:
                t.state = TaskState.DEAD
                t.exit_code = E.SIGKILL

    @property
    def elapsed(self) -> int:
        return max(c.now for c in self.cpus)
