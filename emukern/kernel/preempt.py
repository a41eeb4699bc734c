"""Preemption inside syscalls: the preemption models (``--kconfig PREEMPT=none|voluntary|full``),
``preempt_count``, ``cond_resched()`` and the timer tick taken while the CPU runs kernel code.

Linux (kernel/Kconfig.preempt, kernel/sched/core.c, include/linux/preempt.h) lets a task that is
inside a syscall be switched out only at preemption points:

* ``PREEMPT_NONE``: explicit ``cond_resched()`` calls, which long kernel loops make once per unit
  of work (``read_iter_zero`` once per page, ``generic_perform_write``/``iomap_write_iter`` once
  per folio), and the return to user.
* ``PREEMPT_VOLUNTARY``: as none, plus every ``might_sleep()`` (e.g. the ``mutex_lock`` at the top
  of ``pipe_write``/``pipe_read``), which that model turns into a ``cond_resched()``.
* ``PREEMPT`` (full): anywhere ``preempt_count`` is 0 — the tick's interrupt return
  (``irqentry_exit_cond_resched``) and every ``preempt_enable``/``local_bh_enable`` that drops the
  count to 0 call ``preempt_schedule``.  ``cond_resched()`` is then a no-op (the interrupt has
  already preempted the loop).

In every model the tick itself (``sched_tick``) only sets TIF_NEED_RESCHED when the running task
used up its slice and another task is runnable; the points above act on that flag.  emukern's
kernel charges the cycles of its copies as it does them, so a tick deadline can pass in the middle
of a long copy: :func:`preempt_point` takes that tick where the copy reaches the deadline and, if the
point may preempt under the configured model, tells the loop to stop.

The loop then records how far it got in the task (:class:`SyscallResume` — what Linux keeps on the
preempted task's kernel stack: the loop's locals and the ``iov_iter``) and returns
:data:`PREEMPTED`.  ``do_syscall`` leaves the syscall pending with the task *runnable*, ``schedule``
switches it out as an involuntary switch (``nivcsw``), and when it is picked again
:func:`resume_syscall` re-enters the handler, which continues from the recorded progress instead
of starting over.  The bytes moved and the value returned are those of an unpreempted call.

Debian 12's (6.1) and 13's (6.12) arm64 and riscv64 kernels are built with
``CONFIG_PREEMPT_VOLUNTARY=y`` and without ``CONFIG_PREEMPT_DYNAMIC`` (checked in their
/boot/config files), so ``voluntary`` is the default.  ``CONFIG_RISCV_ISA_V_PREEMPTIVE`` depends on
``PREEMPTION``: it exists only with ``PREEMPT=full``, where Kconfig defaults it to y.

arm64: Linux's ``kernel_neon_begin`` regions (TIF_KERNEL_FPSTATE) are not modelled — emukern has no
kernel NEON/SVE code path (no NEON user copy or checksum) — so a task preempted inside an arm64
syscall only has its user FP/SIMD state handled by the ordinary switch (``fpsimd_thread_switch``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.errors import ConfigError
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_base import Cpu
from emukern.kernel.tick import scheduler_tick
from emukern.errors import MemoryFault
from emukern.kernel.task import TaskState

PREEMPT_MODELS = ("none", "voluntary", "full")

# the kinds of preemption point
COND_RESCHED = "cond_resched"      # an explicit cond_resched(): every model
MIGHT_RESCHED = "might_resched"    # might_sleep() (mutex_lock, ...): a cond_resched under VOLUNTARY
IRQ = "irq"                        # an instruction boundary with preempt_count 0: full only
PREEMPT_ENABLE = "preempt_enable"  # preempt_enable/local_bh_enable back to 0: full only

_ALLOWED = {"none": {COND_RESCHED},
            "voluntary": {COND_RESCHED, MIGHT_RESCHED},
            "full": {COND_RESCHED, MIGHT_RESCHED, IRQ, PREEMPT_ENABLE}}

# a scalar user copy (arch/riscv/lib/uaccess.S, arm64's copy_template.S) moves 64 bytes per
# iteration of its unrolled word loop: the finest step at which an interrupt can stop it here
SCALAR_STEP = 64
WHERE_LIMIT = 4096      # preemptions listed one by one in PreemptStats.where (the rest are counted)


class _Preempted:
    def __repr__(self) -> str:
        return "PREEMPTED"


PREEMPTED: Any = _Preempted()


def validate_preempt_config(cfg: Any) -> None:
    """MachineConfig.validate's part: the model's name, and RISCV_ISA_V_PREEMPTIVE's dependency."""
    if cfg.preempt not in PREEMPT_MODELS:
        raise ConfigError(f"PREEMPT={cfg.preempt!r} is not a preemption model",
                          hint="use --kconfig PREEMPT=none, voluntary (Debian's) or full")
    if cfg.riscv_v_preemptive and cfg.preempt != "full":
        raise ConfigError("RISCV_ISA_V_PREEMPTIVE=y needs a preemptible kernel (it depends on PREEMPTION)",
                          hint="add --kconfig PREEMPT=full, or drop RISCV_ISA_V_PREEMPTIVE")


def riscv_v_preemptive(k: "Kernel") -> bool:
    """CONFIG_RISCV_ISA_V_PREEMPTIVE: explicit, or Kconfig's default (y whenever it can exist)."""
    v = k.config.riscv_v_preemptive
    return k.config.preempt == "full" if v is None else bool(v)


class SyscallResume:
    """A syscall switched out at a preemption point and how far it got.

    Every read and write through a pipe or a file makes one (``begin``) and drops it when the
    call completes, so it is a plain class whose fields start as class attributes: making one
    runs no ``__init__`` (a dataclass's generated one was 41 bytecodes, four times per pipe round
    trip), and a field reads its starting value here until the loop first sets it."""
    done: int = 0                   # bytes the copy loop in progress has transferred
    iov: int = 0                    # readv/writev: the iovec in progress ...
    total: int = 0                  # ... and the bytes of the iovecs before it
    chunk_done: int = 0             # bytes of the chunk (page) in progress already copied ...
    part: bytearray | None = None   # ... and, for copy_from_user, those bytes
    kvec: Any = None                # RISC-V: a kernel-mode vector copy in progress
    preempt_after: str = ""         # the chunk completed at a point that preempts (preempt_enable)
    batch_at: int = -1              # filemap_read: the batch whose cond_resched() already ran
    at: str = ""                    # the point it was switched out at
    preemptions: int = 0


@dataclass
class PreemptStats:
    """Per run: how many points were passed and where tasks were switched out inside syscalls."""
    points: Counter = field(default_factory=Counter)          # point kind -> times reached
    preemptions: Counter = field(default_factory=Counter)     # point kind -> switches there
    kernel_ticks: int = 0                                     # ticks taken inside a syscall
    where: list = field(default_factory=list)   # (tid, point kind, bytes done) per preemption
    # RISC-V, CONFIG_RISCV_ISA_V_PREEMPTIVE: thread.kernel_vstate saved at a switch-out inside a
    # kernel-mode vector region / reloaded when the task is back in it (kernel_mode_vector.py)
    kernel_vstate_saves: int = 0
    kernel_vstate_restores: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"points": dict(sorted(self.points.items())),
                "preemptions": dict(sorted(self.preemptions.items())), "kernel_ticks": self.kernel_ticks,
                "kernel_vstate_saves": self.kernel_vstate_saves,
                "kernel_vstate_restores": self.kernel_vstate_restores,
                "where": [list(w) for w in self.where]}


def stats(k: "Kernel") -> PreemptStats:
    return k.preempt_stats


# ---- preempt_count (include/linux/preempt.h; per task in thread_info on arm64 and riscv) -------
def preempt_disable(task: "Task") -> None:
    task.preempt_count += 1


def preempt_enable(k: "Kernel", cpu: "Cpu", task: "Task") -> bool:
    """preempt_enable(): True when it dropped the count to 0 with a reschedule due under the full
    model — preempt_schedule() would switch here; the caller stops at this point."""
    task.preempt_count -= 1
    k.warn_on(task.preempt_count < 0, "preempt_count underflow")
    return task.preempt_count == 0 and preempt_point(k, cpu, task, PREEMPT_ENABLE)


# ---- the tick in kernel mode and the preemption points -----------------------------------------
def scheduler_tick_in_kernel(k: "Kernel", cpu: "Cpu", task: "Task", what: str) -> None:
    """The timer interrupt arriving while ``task`` runs kernel code (a long syscall): the one
    scheduler_tick (kernel/tick.py), returning into the kernel loop."""
    stats(k).kernel_ticks += 1
    got = scheduler_tick(k, cpu, task, in_kernel=what)
    assert got is not None
    trap, t0 = got
    trap.cycles = cpu.now - t0
    k.log_trap(cpu, task, trap)


def _other_runnable(k: "Kernel", cpu: "Cpu", task: "Task") -> bool:
    return any(t is not task and t.state is TaskState.RUNNABLE and t.allowed_on(cpu.index)
               for t in k.percpu[cpu.index].rq)


def preempt_point(k: "Kernel", cpu: "Cpu", task: "Task", kind: str, what: str = "") -> bool:
    """A point inside a syscall where Linux may switch: take a tick whose deadline has passed,
    then True when the configured model preempts at this kind of point, TIF_NEED_RESCHED is set,
    preempt_count is 0 and another task can run here (schedule() would pick it)."""
    pc = k.percpu[cpu.index]
    if cpu.now >= pc.next_tick:
        scheduler_tick_in_kernel(k, cpu, task, what or kind)
    if kind not in _ALLOWED[k.config.preempt]:
        return False                    # not a point in this model (the tick is taken all the same)
    k.preempt_stats.points[kind] += 1   # (stats(k), inline: twice per pipe round trip)
    if not pc.need_resched or task.preempt_count:
        return False
    return _other_runnable(k, cpu, task)


def tick_due_within(k: "Kernel", cpu: "Cpu", cycles: int) -> bool:
    """Would a tick deadline pass within the next ``cycles`` (a copy's cost)?"""
    return cpu.now + cycles >= k.percpu[cpu.index].next_tick


def irq_preemptible(k: "Kernel", task: "Task") -> bool:
    """Can an interrupt preempt this kernel code at all (full model, preempt_count 0)?"""
    return k.config.preempt == "full" and not task.preempt_count


# ---- the resumable state of a long syscall --------------------------------------------------------
def begin(task: "Task") -> SyscallResume:
    """The loop's state: the recorded one when the call resumes, a fresh one otherwise."""
    res = task.resume
    if res is None:
        res = task.resume = SyscallResume()
    return res


def fresh(res: SyscallResume) -> bool:
    """True on the first entry of a long loop (nothing done yet: its checks and locks run)."""
    return not res.done and not res.chunk_done and res.kvec is None and res.part is None


def run_long(task: "Task", res: SyscallResume | None, body: Any) -> Any:
    """Run a long loop ``body(res)``: with its own progress record (a read/write), dropped when
    it completes; or inside a caller's (readv/writev keep theirs across iovecs)."""
    if res is not None:
        return body(res)
    r = body(begin(task))
    if r is not PREEMPTED:
        finish(task)
    return r


def finish(task: "Task") -> None:
    """The long loop completed (or failed): nothing to resume any more."""
    task.resume = None


def preempted(k: "Kernel", task: "Task", kind: str) -> Any:
    """The loop stops at a point: count it and hand PREEMPTED up to do_syscall/schedule."""
    res = task.resume
    assert res is not None, "preempted without a progress record"
    res.at = kind
    res.preemptions += 1
    st = stats(k)
    st.preemptions[kind] += 1
    if len(st.where) < WHERE_LIMIT:
        st.where.append((task.tid, kind, offset(res)))
    return PREEMPTED


def describe(task: "Task", name: str) -> str:
    res = task.resume
    if res is None:
        return f"preempted inside {name}"
    where = f"iovec {res.iov}, " if res.iov or res.total else ""
    return (f"preempted inside {name}() at {res.at} after {where}{offset(res)} bytes "
            f"(TIF_NEED_RESCHED): switched out runnable, the call continues when switched back in")


def offset(res: SyscallResume) -> int:
    """Bytes the call has moved so far: whole chunks, plus the chunk an interrupt stopped."""
    part = res.chunk_done
    kv = res.kvec
    if kv is not None:
        part = kv.n - kv.regs.x[12]
    return res.total + res.done + part


# ---- the page-by-page loop of a long copy ---------------------------------------------------------
PAGE_SIZE = 4096
FOLIO_BATCH = 31        # PAGEVEC_SIZE: the folios filemap_read looks up per iteration


def page_loop(k: "Kernel", cpu: "Cpu", task: "Task", res: SyscallResume, count: int, chunk: Any,
              kind: str, what: str, pages_per_point: int = 1) -> Any:
    """The loop of a long read/write: ``chunk(offset, n)`` moves up to a page (returns the bytes
    moved, a negative errno, or PREEMPTED when an interrupt stopped it inside the chunk); after
    every ``pages_per_point`` pages the loop reaches a point of ``kind`` (cond_resched for the
    file loops, IRQ — the full model only — for pipe_read/pipe_write, which have none); with
    ``pages_per_point`` > 1 (filemap_read's batches) the point comes before each batch instead.
    Returns the bytes moved (a fault or error after some bytes: those bytes, as Linux's loops
    do), an error, or PREEMPTED with the progress in ``res``."""
    batch = pages_per_point * PAGE_SIZE
    while res.done < count:
        n = min(PAGE_SIZE - (res.done % PAGE_SIZE), count - res.done)
        if pages_per_point > 1 and res.done % batch == 0 and not res.chunk_done and res.kvec is None \
                and res.part is None and res.batch_at != res.done:
            # filemap_read: cond_resched() at the top of each batch of folios, the first included
            res.batch_at = res.done
            if preempt_point(k, cpu, task, kind, what):
                return preempted(k, task, kind)
        try:
            r = chunk(res.done, n)
        except MemoryFault:
            res.chunk_done, res.part = 0, None
            return res.done or -14          # -EFAULT, or the bytes before the bad page
        if r is PREEMPTED:
            return preempted(k, task, IRQ)
        if r < 0:
            return res.done or r
        res.done += r
        if r < n:
            break
        if res.preempt_after:
            point, res.preempt_after = res.preempt_after, ""
            if res.done < count:
                return preempted(k, task, point)
        # cond_resched() follows every page, the last one included (read_iter_zero,
        # generic_perform_write); an interrupt point (pipes) lies only between two pages
        more = res.done < count
        if kind and pages_per_point == 1 and (more or kind == COND_RESCHED) \
                and preempt_point(k, cpu, task, kind, what):
            return preempted(k, task, kind)   # (after the last page: switched back in, it ends)
    return res.done
