"""arm64 FPSIMD/SVE state — arch/arm64/kernel/fpsimd.c and the SVE part of entry-common.c.

Lazy FP state as in Linux: a task's registers stay live on a CPU until another task's are loaded
there; ``fpsimd_last_state`` (per CPU) and ``thread.fpsimd_cpu`` say whose state is live, and
TIF_FOREIGN_FPSTATE makes the return to user reload it (``fpsimd_restore_current_state``).
State buffers are slots of the kernel's :class:`~emukern.kernel.arch.arm64.entry_fpsimd.SveStateArea`
(Linux's ``sve_state`` and ``uw.fpsimd_state``); every save, load and flush runs the kernel's real
instruction sequence (entry_fpsimd.py, entry-fpsimd.S) on the CPU, so its cost is counted
instruction by instruction.

Mark Brown's "arm64/sve: Performance improvements with SVE state saving" (``kernel.policy("arm64-sve")``):

* ``legacy``: a task's first SVE instruction traps (``do_sve_acc``), TIF_SVE is set; every syscall
  with TIF_SVE runs ``sve_flush_live``; loading FPSIMD-only state (``fp_type`` FPSIMD: the task was
  switched out inside a syscall, where only the FPSIMD subset is saved) clears TIF_SVE.
* ``p1``: ``do_sve_acc`` records ``sve_timeout = jiffies + HZ``; an FPSIMD-only load keeps TIF_SVE
  (and only flushes P/FFR with ``sve_flush_p``) until the timeout has passed; VL is set whenever
  TIF_SVE is set.
* ``p1+p2``: also ``fpsimd_syscall_enter`` clears TIF_SVE and traps EL0 SVE again instead of
  flushing once the timeout has passed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast


from emukern.kernel import errno as E
from emukern.kernel.arch.arm64 import entry_fpsimd
from emukern.kernel.arch.arm64.entry_fpsimd import SveStateArea
from emukern.kernel.plugins import kernel_function
from emukern.kernel.thread_info import (TIF_FOREIGN_FPSTATE, TIF_SVE, TIF_SVE_VL_INHERIT, FlagView,
                                        clear_thread_flag, set_thread_flag, test_and_clear_thread_flag)
from emukern.machine.trap import Trap

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.kernel.signal import generate as signal_generate

FP_STATE_CURRENT, FP_STATE_FPSIMD, FP_STATE_SVE = "current", "fpsimd", "sve"

PR_SVE_SET_VL = 50
PR_SVE_GET_VL = 51
PR_SVE_VL_LEN_MASK = 0xFFFF
PR_SVE_VL_INHERIT = 1 << 17
PR_SVE_SET_VL_ONEXEC = 1 << 18
SVE_VL_MAX_BYTES = 16 * 512          # architectural SVE_VL_MAX (sve_vl_valid)
VL_ARCH_MAX_BYTES = 256              # VL-agnostic code limit (2048 bits)

POLICY = "arm64-sve"


@dataclass
class FpsimdLastState:
    """Per-CPU ``fpsimd_last_state``: whose user FP state is live in this CPU's registers."""
    task: "Task | None" = None
    sve_vl: int = 0
    to_save: str = FP_STATE_CURRENT

    @property
    def tid(self) -> int | None:
        return self.task.tid if self.task is not None else None

    def __str__(self) -> str:
        return f"task {self.tid} (VL {self.sve_vl}, to_save {self.to_save})"


@dataclass
class Arm64Thread:
    """The FP/SVE part of Linux's ``thread_struct`` plus the thread flags it uses."""
    state: int = 0                    # slot address in the machine's SveStateArea (0: none)
    fp_type: str = FP_STATE_FPSIMD    # which form the saved state in memory has
    sve_state_vl: int = 0             # VL of the SVE form in memory
    # the Task whose flags word holds TIF_SVE, TIF_FOREIGN_FPSTATE and TIF_SVE_VL_INHERIT
    task: "Task | None" = field(default=None, repr=False, compare=False)
    fpsimd_cpu: int = -1              # NR_CPUS: bound to no CPU
    in_syscall: bool = False          # in_syscall(pt_regs): the last kernel entry was an svc
    sve_timeout: int = 0              # jiffies after which TIF_SVE may be dropped (p1, p1+p2)
    # (sve_timeout as a cycle of the clock, for the test on every syscall: the value it was
    # worked out for, and the first cycle whose jiffy is past it -- see _sve_timeout_passed)
    timeout_for: int = field(default=-1, repr=False, compare=False)
    timeout_cycle: int = field(default=0, repr=False, compare=False)
    vl: int = 256                     # task SVE VL in bits
    vl_onexec: int = 0                # VL for the next exec (bits), 0: the default
    # instrumentation (what the patch author counted, and what the benchmark reports)
    stats: Counter = field(default_factory=Counter)
    dropped_at_load: bool = False     # TIF_SVE was dropped by an FPSIMD-only load since the last trap

    # the thread flags, as bits of the task's flags word (kernel/thread_info.py)
    tif_sve = FlagView(TIF_SVE)
    tif_foreign_fpstate = FlagView(TIF_FOREIGN_FPSTATE)
    tif_sve_vl_inherit = FlagView(TIF_SVE_VL_INHERIT)


# ---- helpers ------------------------------------------------------------------------------------
def _pol(k: "Kernel") -> str:
    return k.policy(POLICY)


def _jiffies(k: "Kernel", cpu: "Arm64Cpu") -> int:
    return k.clock.jiffies(cpu.now)


def _last(k: "Kernel", cpu: "Arm64Cpu") -> FpsimdLastState:
    # (hot: no check -- setup gives every CPU its fpsimd_last_state before anything runs)
    return k.percpu[cpu.index].fpsimd_last_state


def _sve_timeout_passed(k: "Kernel", cpu: "Arm64Cpu", th: Arm64Thread) -> bool:
    """``time_after(jiffies, sve_timeout)`` on this CPU's clock, as a compare of cycles.

    jiffies(c) = c * HZ // freq exceeds T exactly from the cycle ceil((T + 1) * freq / HZ) on,
    so that cycle is worked out once per value of sve_timeout (it changes at an SVE access trap)
    instead of dividing the clock on every syscall of a TIF_SVE task."""
    if th.timeout_for != th.sve_timeout:
        _sve_timeout_cycle(k, th)
    return cpu.now >= th.timeout_cycle


def _sve_timeout_cycle(k: "Kernel", th: Arm64Thread) -> None:
    t = th.sve_timeout
    clock = k.clock
    th.timeout_cycle = -(-(t + 1) * clock.freq_hz // clock.hz)
    th.timeout_for = t


def _count(k: "Kernel", th: Arm64Thread, key: str, n: int = 1) -> None:
    th.stats[key] += n
    k.sve_stats[key] += n


def setup(k: "Kernel") -> None:
    """The per-task state area, each CPU's fpsimd_last_state, the sequences on every CPU."""
    k.sve_area = SveStateArea(slots=k.config.max_tasks + len(k.cpus) + 64, max_vl=max(k.config.sve_vls))
    k.sve_stats = Counter()
    for cpu in k.cpus:
        entry_fpsimd.install(cast("Arm64Cpu", cpu))
        k.percpu[cpu.index].fpsimd_last_state = FpsimdLastState()

    # whether fpsimd_syscall_enter tests sve_timeout (patch 2): read there on every syscall of a
    # TIF_SVE task, so resolved here and again whenever the switch is set (a run-time switch
    # still takes effect at the next syscall)
    def sync(_value: str) -> None:
        k.sve_syscall_timeout = k.policies.effective(POLICY) == "p1+p2"
    sync("")
    k.policies.on_change(POLICY, sync)


def supported_vls(k: "Kernel") -> list[int]:
    return sorted(set(k.config.sve_vls))


def find_supported_vector_length(k: "Kernel", vl_bytes: int) -> int:
    """Round down to a supported VL (clamped to the machine's range), in bytes."""
    vls = [v // 8 for v in supported_vls(k)]
    vl = min(max(vl_bytes, vls[0]), vls[-1])
    return max(v for v in vls if v <= vl)


def sve_vl_valid(vl_bytes: int) -> bool:
    return vl_bytes % 16 == 0 and 16 <= vl_bytes <= SVE_VL_MAX_BYTES


def sve_user_enable(k: "Kernel", cpu: "Arm64Cpu") -> None:
    if cpu.set_sve_el0(True):
        cpu.charge(k.cost.sve_sysreg)


def sve_user_disable(k: "Kernel", cpu: "Arm64Cpu") -> None:
    if cpu.set_sve_el0(False):
        cpu.charge(k.cost.sve_sysreg)


def sve_set_vq(k: "Kernel", cpu: "Arm64Cpu", vl: int) -> None:
    if cpu.set_vl(vl):
        cpu.charge(k.cost.sve_sysreg)


def sve_flush_live(k: "Kernel", cpu: "Arm64Cpu", th: Arm64Thread, vl: int, why: str) -> None:
    """Zero Z bits above 128 (skipped at VL 128: no such bits), P0-P15 and FFR, on the CPU."""
    cpu.queue_seq("sve_flush_live" if vl > 128 else "sve_flush_p")   # (no buffer: the hot path)
    key = _FLUSH_KEYS.get(why) or f"flush_{why}"
    th.stats[key] += 1                        # (_count, inline: once per syscall with TIF_SVE)
    k.sve_stats[key] += 1


_FLUSH_KEYS = {"syscall": "flush_syscall", "trap": "flush_trap"}


def sve_flush_p(k: "Kernel", cpu: "Arm64Cpu", th: Arm64Thread) -> None:
    cpu.queue_seq("sve_flush_p")
    _count(k, th, "flush_p")


# ---- memory-side conversions (Python on the buffers, like the C loops in fpsimd.c) ----------
def _area(k: "Kernel") -> SveStateArea:
    assert k.sve_area is not None, "arm64 fpsimd.setup has not run"
    return k.sve_area


def fpsimd_to_sve(k: "Kernel", th: Arm64Thread) -> None:
    """Copy V0-V31 into the low 128 bits of the in-memory Z registers at the task's VL."""
    a = _area(k)
    raw = a.read(th.state + a.fp_off, 512)
    for i in range(32):
        a.write(th.state + i * th.vl // 8, raw[16 * i:16 * i + 16])
    th.sve_state_vl = th.vl


def sve_to_fpsimd(k: "Kernel", th: Arm64Thread) -> None:
    a = _area(k)
    vl = th.sve_state_vl or th.vl
    a.write(th.state + a.fp_off, b"".join(a.zreg(th.state, vl, i)[:16] for i in range(32)))


def sve_alloc(k: "Kernel", th: Arm64Thread) -> None:
    """Zero the SVE part of the task's buffer (the kzalloc/memset in sve_alloc)."""
    a = _area(k)
    a.zero(th.state, a.fp_off)


# ---- task lifetime ------------------------------------------------------------------------------
def new_thread_state(k: "Kernel", task: "Task", parent: "Task | None", exec_: bool) -> Arm64Thread:
    if exec_ and isinstance(task.thread, Arm64Thread):
        return task.thread            # execve keeps the thread; fpsimd_flush_thread resets it
    assert k.config.sve_vl is not None      # MachineConfig.validate resolved it
    th = Arm64Thread(task=task, vl=k.config.sve_vl)
    # a new thread's registers are nowhere yet: TIF_FOREIGN_FPSTATE (its TIF_SVE starts clear)
    set_thread_flag(task, TIF_FOREIGN_FPSTATE)
    th.state = _area(k).alloc()
    if parent is not None and isinstance(parent.thread, Arm64Thread):
        pt = parent.thread
        # arch_dup_task_struct: fpsimd_preserve_current_state(), then copy the FPSIMD state; the
        # child starts without TIF_SVE and with fp_type FPSIMD
        pcpu = cast("Arm64Cpu", k.cpus[parent.cpu])
        if k.percpu[parent.cpu].curr is parent:
            fpsimd_save_user_state(k, pcpu, parent)
            pcpu.stub_sync()
        if pt.fp_type == FP_STATE_SVE:
            sve_to_fpsimd(k, pt)
        a = _area(k)
        a.write(th.state + a.fp_off, a.read(pt.state + a.fp_off, 528))
        th.vl, th.vl_onexec = pt.vl, pt.vl_onexec
        th.tif_sve_vl_inherit = pt.tif_sve_vl_inherit
        th.sve_timeout = pt.sve_timeout
    return th


def fpsimd_flush_task_state(th: Arm64Thread) -> None:
    th.fpsimd_cpu = -1
    task = th.task
    assert task is not None
    task.flags |= TIF_FOREIGN_FPSTATE         # (th.tif_foreign_fpstate = True, without the view)


def fpsimd_flush_thread(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    """execve: zero the FP state, drop TIF_SVE, VL from the on-exec VL or the default."""
    th: Arm64Thread = task.thread
    fpsimd_flush_task_state(th)
    a = _area(k)
    a.zero(th.state, a.slot_size)
    th.fp_type = FP_STATE_FPSIMD
    th.tif_sve = False
    vl = th.vl_onexec or k.config.sve_vl or 0      # (validate resolved sve_vl: never 0)
    th.vl = find_supported_vector_length(k, vl // 8) * 8
    if not th.tif_sve_vl_inherit:
        th.vl_onexec = 0


def fpsimd_release_task(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    th = task.thread
    if not isinstance(th, Arm64Thread) or not th.state:
        return
    cpu.stub_sync()                   # nothing queued may still point at the slot
    for pc in k.percpu:
        last = pc.fpsimd_last_state
        if last is not None and last.task is task:
            last.task = None
    _area(k).release(th.state)
    th.state = 0


# ---- binding, saving, loading -------------------------------------------------------------------
def fpsimd_bind_task_to_cpu(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    th: Arm64Thread = task.thread
    last = k.percpu[cpu.index].fpsimd_last_state
    last.task, last.sve_vl, last.to_save = task, th.vl, FP_STATE_CURRENT
    th.fpsimd_cpu = cpu.index
    if k.config.has_sve:
        # sve_user_enable / sve_user_disable: CPACR_EL1.ZEN (charged only when it changes)
        if cpu.set_sve_el0(bool(task.flags & TIF_SVE)):
            cpu.charge(k.cost.sve_sysreg)


_FP_SAVE_INSNS = entry_fpsimd.STUBS["fpsimd_save_state"][1]    # (instructions including the closing brk)


def fpsimd_save_state_regs(k: "Kernel", cpu: "Arm64Cpu", th: Arm64Thread) -> bytes:
    """fpsimd_save_state through the register file: V0-V31, FPSR and FPCR are what the Unicorn
    API shows of the FP state (only Z bits above 128, P and FFR need SVE instructions), so the
    FPSIMD form of a save needs no stub run.  Its cost is the stub's, charged as system time:
    the clock is the same as if the 21 instructions had run.  Returns the 520 bytes saved
    (V0-V31, FPSR, FPCR), so a caller that copies them on (a signal frame) need not read them
    back."""
    cpu.stub_sync()                       # anything queued before (a flush) happens first
    a = k.sve_area
    data = cpu.read_fpsimd_state()        # V0-V31, FPSR, FPCR in one batch
    a.write(th.state + a.fp_off, data)
    cpu.charge(_FP_SAVE_INSNS)
    return data


def fpsimd_save_user_state(k: "Kernel", cpu: "Arm64Cpu", task: "Task", regs: bool = False) -> bytes | None:
    """Save the live user state of ``task`` (current) to its buffer, SVE or FPSIMD form (the
    FPSIMD form through the register file when ``regs``: fpsimd_save_state_regs, whose bytes
    are returned; None for every other outcome)."""
    th: Arm64Thread = task.thread
    last = k.percpu[cpu.index].fpsimd_last_state
    flags = task.flags
    if flags & TIF_FOREIGN_FPSTATE or last.task is not task:
        return None
    # in a syscall only the FPSIMD subset need be kept: the rest was flushed at entry.  Which test
    # says "in a syscall" is the release's (kernel/versions.py fpsimd_syscall): 6.2..6.1x look at
    # in_syscall(current_pt_regs()); the newest kernels' fpsimd_syscall_enter() set to_save =
    # FP_STATE_FPSIMD instead, and 6.1 has no TIF_SVE left in a syscall to test at all.
    tif_sve = flags & TIF_SVE
    if k.version.fpsimd_syscall == "in_syscall":
        save_sve = ((last.to_save == FP_STATE_CURRENT and tif_sve and not th.in_syscall)
                    or last.to_save == FP_STATE_SVE)
    else:
        save_sve = (last.to_save == FP_STATE_CURRENT and tif_sve) or last.to_save == FP_STATE_SVE
    if save_sve:
        if cpu.vl != last.sve_vl:
            raise AssertionError(f"fpsimd_save: CPU VL {cpu.vl} != bound VL {last.sve_vl}")
        entry_fpsimd.queue(cpu, "sve_save_state", _area(k), th.state)
        th.fp_type, th.sve_state_vl = FP_STATE_SVE, last.sve_vl
        _count(k, th, "save_sve")
        return None
    data = None
    if regs:
        data = fpsimd_save_state_regs(k, cpu, th)
    else:
        entry_fpsimd.queue(cpu, "fpsimd_save_state", _area(k), th.state)
    th.fp_type = FP_STATE_FPSIMD
    th.stats["save_fpsimd"] += 1              # (_count, inline)
    k.sve_stats["save_fpsimd"] += 1
    return data


def _queue_load(k: "Kernel", cpu: "Arm64Cpu", th: Arm64Thread, restore_sve: bool, had_tif_sve: bool) -> None:
    """The end of task_fpsimd_load on both sides of the patch: sve_load_state or
    fpsimd_load_state of the task's buffer, counted (an FPSIMD-only load with TIF_SVE set is the
    load the patch author counted)."""
    a = k.sve_area
    if restore_sve:
        entry_fpsimd.queue(cpu, "sve_load_state", a, th.state)
        _count(k, th, "load_sve")
        return
    entry_fpsimd.queue_fpsimd_load(cpu, a, th.state)
    th.stats["load_fpsimd"] += 1              # (_count, inline)
    k.sve_stats["load_fpsimd"] += 1
    if had_tif_sve:
        _count(k, th, "load_fpsimd_tif_sve")


@kernel_function
def task_fpsimd_load(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    """Load the task's saved FP state into the CPU (return to user with TIF_FOREIGN_FPSTATE).

    Two blocks, one per side of Mark Brown's "arm64/sve: Performance improvements with SVE state
    saving" (patch 1): ``legacy`` is the function before it, ``p1``/``p1+p2`` after it -- the
    patch moves the ZCR_EL1 write out of the FP_STATE_SVE case (hunk 1 -> hunk 2) and adds the
    sve_timeout decision after an FPSIMD-only load (hunk 3)."""
    th: Arm64Thread = task.thread
    sve = k.config.has_sve
    had_tif_sve = bool(task.flags & TIF_SVE)
    if _pol(k) == "legacy":
        # ---- before the patch ------------------------------------------------------------------
        restore_sve = False
        if sve:
            if th.fp_type == FP_STATE_FPSIMD:
                # Stop tracking SVE for this task until next use.
                if test_and_clear_thread_flag(task, TIF_SVE):
                    th.dropped_at_load = True
                    _count(k, th, "drop_tif_sve_load")
            else:                                        # FP_STATE_SVE
                set_thread_flag(task, TIF_SVE)
                sve_set_vq(k, cpu, th.vl)
                restore_sve = True
        _queue_load(k, cpu, th, restore_sve, sve and had_tif_sve)
        return

    # ---- with the patch (p1, p1+p2) ----------------------------------------------------------
    restore_sve = sve and th.fp_type == FP_STATE_SVE
    if restore_sve:
        task.flags |= TIF_SVE
    # hunk 2: SVE may stay enabled while only FPSIMD state is loaded, so always set the VL
    if sve and task.flags & TIF_SVE:
        sve_set_vq(k, cpu, th.vl)
    _queue_load(k, cpu, th, restore_sve, sve and had_tif_sve)
    if restore_sve:
        return
    # hunk 3: keep SVE for a while after an FPSIMD-only load; drop it once sve_timeout passed
    if sve and task.flags & TIF_SVE:
        if _sve_timeout_passed(k, cpu, th):
            clear_thread_flag(task, TIF_SVE)
            th.dropped_at_load = True
            sve_user_disable(k, cpu)
            _count(k, th, "drop_tif_sve_load")
        else:
            # loading V zeroed the rest of Z; SVE stays enabled, VL was set above
            sve_flush_p(k, cpu, th)


def fpsimd_restore_current_state(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> str | None:
    cpu.charge(k.cost.tif_check)
    flags = task.flags
    if flags & TIF_FOREIGN_FPSTATE:              # (every return to user: one bit test)
        task.flags = flags & ~TIF_FOREIGN_FPSTATE
        th: Arm64Thread = task.thread
        task_fpsimd_load(k, cpu, task)
        fpsimd_bind_task_to_cpu(k, cpu, task)
        form = "SVE" if th.fp_type == FP_STATE_SVE else "FPSIMD-only"
        change = " (TIF_SVE dropped)" if flags & TIF_SVE and not task.flags & TIF_SVE else ""
        return f"TIF_FOREIGN_FPSTATE: task_fpsimd_load of {form} state{change}"
    return None


# ---- kernel hook points ----------------------------------------------------------------------
_NOTE_FLUSH = "TIF_SVE: sve_flush_live (Z above 128 bits, P, FFR zeroed)"


@kernel_function
def fpsimd_syscall_enter(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> str | None:
    th: Arm64Thread = task.thread
    th.in_syscall = True
    note = None
    if not k.config.has_sve:
        return None
    # (hot: once per syscall; the policy test, _jiffies and _last are inlined below)
    variant = k.version.fpsimd_syscall
    if variant == "sve_user_discard":
        # Linux 6.1 (before "arm64/sve: Leave SVE enabled on syscall if we don't context switch",
        # Mark Brown, 6.2): every syscall of a TIF_SVE task stops tracking SVE -- TIF_SVE is
        # cleared and EL0 SVE traps again, so the next SVE instruction takes do_sve_acc(), which
        # zeroes the state above the FPSIMD subset.  Nothing is flushed here.
        flags = task.flags
        if flags & TIF_SVE:                     # (test_and_clear_thread_flag, inline)
            task.flags = flags & ~TIF_SVE
            if cpu.set_sve_el0(False):          # sve_user_disable
                cpu.charge(k.cost.sve_sysreg)
            th.stats["drop_tif_sve_syscall"] += 1
            k.sve_stats["drop_tif_sve_syscall"] += 1
            note = "TIF_SVE: sve_user_discard (TIF_SVE cleared, EL0 SVE traps again)"
        return note
    if task.flags & TIF_SVE:
        if k.sve_syscall_timeout:               # k.policies.effective(POLICY) == "p1+p2"
            cpu.charge(k.cost.tif_check)          # the extra sve_timeout load and branch
            # (_sve_timeout_passed, inline)
            if th.timeout_for != th.sve_timeout:
                _sve_timeout_cycle(k, th)
            if cpu.now >= th.timeout_cycle:
                # tasks that don't block in a syscall also get a chance to drop TIF_SVE
                clear_thread_flag(task, TIF_SVE)
                sve_user_disable(k, cpu)
                _count(k, th, "drop_tif_sve_syscall")
                note = "sve_timeout passed: TIF_SVE cleared, EL0 SVE traps again (no flush)"
                if variant == "fpsimd_syscall_enter":
                    k.percpu[cpu.index].fpsimd_last_state.to_save = FP_STATE_FPSIMD
                return note
        # sve_flush_live(k, cpu, th, th.vl, "syscall"), inline: once per syscall of a TIF_SVE task
        cpu.queue_seq("sve_flush_live" if th.vl > 128 else "sve_flush_p")
        th.stats["flush_syscall"] += 1
        k.sve_stats["flush_syscall"] += 1
        note = _NOTE_FLUSH
    # any live non-FPSIMD SVE state has been zeroed: a save may keep only the FPSIMD subset
    # (fpsimd_syscall_enter's to_save; 6.2..6.1x leave to_save alone and test in_syscall())
    if variant == "fpsimd_syscall_enter":
        k.percpu[cpu.index].fpsimd_last_state.to_save = FP_STATE_FPSIMD
    return note


def fpsimd_syscall_exit(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    k.percpu[cpu.index].fpsimd_last_state.to_save = FP_STATE_CURRENT
    task.thread.in_syscall = False


def fpsimd_exit_to_user(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> str | None:
    """The FP part of exit_to_user_mode: fpsimd_restore_current_state, then fpsimd_syscall_exit
    (both inline when TIF_FOREIGN_FPSTATE is clear, the common case: a charge and two stores)."""
    if task.flags & TIF_FOREIGN_FPSTATE:
        note = fpsimd_restore_current_state(k, cpu, task)
    else:
        cpu.charge(k.cost.tif_check)             # fpsimd_restore_current_state's flag test
        note = None
    k.percpu[cpu.index].fpsimd_last_state.to_save = FP_STATE_CURRENT     # fpsimd_syscall_exit
    task.thread.in_syscall = False
    return note


def fpsimd_thread_switch_out(k: "Kernel", cpu: "Arm64Cpu", prev: "Task") -> None:
    if prev.alive:
        fpsimd_save_user_state(k, cpu, prev)


def fpsimd_thread_switch_in(k: "Kernel", cpu: "Arm64Cpu", nxt: "Task") -> None:
    """fpsimd_thread_switch, second half: is next's state still live here?"""
    th: Arm64Thread = nxt.thread
    wrong_task = _last(k, cpu).task is not nxt
    wrong_cpu = th.fpsimd_cpu != cpu.index
    th.tif_foreign_fpstate = wrong_task or wrong_cpu


@kernel_function
def do_sve_acc(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap) -> None:
    """EC 0x19: the task's SVE instruction trapped; enable SVE and re-execute it."""
    trap.handler = "do_sve_acc"
    if not k.config.has_sve:
        signal_generate.force_sig(k, cpu, task, E.SIGILL, trap, "SVE not supported")
        return
    th: Arm64Thread = task.thread
    cpu.charge(k.cost.sve_access_trap)
    sve_alloc(k, th)
    th.stats["sve_trap"] += 1                 # (_count, inline: once per trap)
    k.sve_stats["sve_trap"] += 1
    if th.dropped_at_load:
        _count(k, th, "retrap_after_load")
        th.dropped_at_load = False
    timed = _pol(k) != "legacy"               # (the switch is read once: nothing below sets it)
    if timed:
        th.sve_timeout = _jiffies(k, cpu) + k.config.hz
    # (the thread's flags word is the task's: th.tif_sve / th.tif_foreign_fpstate, without the views)
    flags = task.flags
    if flags & TIF_SVE and k.warn_on(True, "do_sve_acc: SVE access trapped with TIF_SVE set"):
        trap.detail = "WARN: SVE access trapped with TIF_SVE set"
    task.flags = flags | TIF_SVE
    vl = th.vl
    if not flags & TIF_FOREIGN_FPSTATE:
        sve_set_vq(k, cpu, vl)
        # sve_flush_live(k, cpu, th, vl, "trap"), inline
        cpu.queue_seq("sve_flush_live" if vl > 128 else "sve_flush_p")
        th.stats["flush_trap"] += 1
        k.sve_stats["flush_trap"] += 1
        fpsimd_bind_task_to_cpu(k, cpu, task)
    else:
        fpsimd_to_sve(k, th)
        th.fp_type = FP_STATE_SVE
        fpsimd_flush_task_state(th)
    trap.decision = (f"TIF_SVE set, VL {vl}, EL0 SVE enabled"
                     + (f", sve_timeout={th.sve_timeout}" if timed else "")
                     + "; the instruction re-executes")


# ---- prctl -------------------------------------------------------------------------------------
def vec_prctl_status(task: "Task", flags: int) -> int:
    th: Arm64Thread = task.thread
    ret = (th.vl_onexec if flags & PR_SVE_SET_VL_ONEXEC else th.vl) // 8
    if th.tif_sve_vl_inherit:
        ret |= PR_SVE_VL_INHERIT
    return ret


def vec_set_vector_length(k: "Kernel", cpu: "Arm64Cpu", task: "Task", vl: int, flags: int) -> int:
    th: Arm64Thread = task.thread
    if flags & ~(PR_SVE_VL_INHERIT | PR_SVE_SET_VL_ONEXEC):
        return -E.EINVAL
    if not sve_vl_valid(vl):
        return -E.EINVAL
    vl = find_supported_vector_length(k, min(vl, VL_ARCH_MAX_BYTES))
    th.vl_onexec = vl * 8 if flags & (PR_SVE_VL_INHERIT | PR_SVE_SET_VL_ONEXEC) else 0
    if not flags & PR_SVE_SET_VL_ONEXEC and vl * 8 != th.vl:
        # keep the FPSIMD bits: save live state, convert to a plain FPSIMD thread
        fpsimd_save_user_state(k, cpu, task)
        fpsimd_flush_task_state(th)
        th.tif_sve = False
        if th.fp_type == FP_STATE_SVE:
            cpu.stub_sync()
            sve_to_fpsimd(k, th)
            th.fp_type = FP_STATE_FPSIMD
        sve_alloc(k, th)
        th.vl = vl * 8
    th.tif_sve_vl_inherit = bool(flags & PR_SVE_VL_INHERIT)
    return 0


def sve_prctl(k: "Kernel", cpu: "Arm64Cpu", task: "Task", option: int, arg: int) -> int | None:
    if option not in (PR_SVE_SET_VL, PR_SVE_GET_VL):
        return None
    if not k.config.has_sve:
        return -E.EINVAL
    if option == PR_SVE_GET_VL:
        return vec_prctl_status(task, 0)
    vl = arg & PR_SVE_VL_LEN_MASK
    flags = arg & ~vl
    ret = vec_set_vector_length(k, cpu, task, vl, flags)
    return ret if ret else vec_prctl_status(task, flags)
