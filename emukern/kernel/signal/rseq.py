"""Restartable sequences: the kernel side of kernel/rseq.c.

A thread registers a ``struct rseq`` area (glibc does it for every thread it starts).  The kernel
keeps the area's CPU fields current whenever the thread comes back to user space after something
that may have moved it (a preemption, a migration, a signal, the registration itself: Linux's
TIF_NOTIFY_RESUME), and, when that happened while the thread was inside the critical section the
area's ``rseq_cs`` pointer names, moves its PC to the section's abort handler
(``rseq_ip_fixup``), so that the section's final commit never runs on stale data.  The abort
handler must be preceded by the 4-byte signature the thread registered with; a wrong one, or a
malformed descriptor, is fatal (SIGSEGV), as in Linux.

The state lives on the task (``task.rseq``: :class:`RseqState`, None when unregistered).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel.mm.layout import TASK_SIZE
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal.defs import SI_KERNEL, SIG_DFL
from emukern.kernel.signal.state import KSigInfo

if TYPE_CHECKING:
    from emukern.kernel.task import Task
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu

# struct rseq (include/uapi/linux/rseq.h): where each field sits in the user's area
RSEQ_CPU_ID_START, RSEQ_CPU_ID, RSEQ_CS, RSEQ_FLAGS, RSEQ_NODE_ID, RSEQ_MM_CID = 0, 4, 8, 16, 20, 24
assert RSEQ_CPU_ID == RSEQ_CPU_ID_START + 4 and RSEQ_MM_CID == RSEQ_NODE_ID + 4   # (written in pairs)
ORIG_RSEQ_SIZE = 32            # the first ABI's size (and its alignment)
RSEQ_FEATURE_SIZE = 28         # offsetof(struct rseq, end): every field this kernel fills in
RSEQ_ALIGN = 32                # __alignof__(struct rseq)
RSEQ_FLAG_UNREGISTER = 1
RSEQ_CPU_ID_UNINITIALIZED = 0xFFFFFFFF      # (u32)-1: what cpu_id reads before registration
# the events that make a critical section restart (t->rseq_event_mask's bits)
RSEQ_EVENT_PREEMPT, RSEQ_EVENT_SIGNAL, RSEQ_EVENT_MIGRATE = 1, 2, 4
SIGSEGV = 11


@dataclass(eq=False)
class RseqState:
    """A thread's registration: the area, its length and signature, and what happened to the
    thread since it last returned to user space (``event_mask``; ``notify``: TIF_NOTIFY_RESUME)."""
    area: int
    length: int
    sig: int
    event_mask: int = 0
    notify: bool = True


def rseq_preempt(task: "Task") -> None:
    """The thread was switched out: a section it was in must restart."""
    rs = task.rseq
    if rs is not None:
        rs.event_mask |= RSEQ_EVENT_PREEMPT
        rs.notify = True


def rseq_migrate(task: "Task") -> None:
    """The thread moved to another CPU: its cpu_id is stale and a section must restart."""
    rs = task.rseq
    if rs is not None:
        rs.event_mask |= RSEQ_EVENT_MIGRATE
        rs.notify = True


def rseq_fork(child: "Task", parent: "Task", clone_vm: bool) -> None:
    """A new thread (CLONE_VM) registers its own area; a forked process keeps its parent's,
    which sits at the same address in its copy of the memory."""
    rs = parent.rseq
    if clone_vm or rs is None:
        child.rseq = None
    else:
        child.rseq = RseqState(rs.area, rs.length, rs.sig, rs.event_mask, notify=True)


def rseq_execve(task: "Task") -> None:
    """exec replaces the memory the area was in: the new program registers again."""
    task.rseq = None


def mm_cid(k: "Kernel", cpu: "Cpu", task: "Task") -> int:
    """A compact id among the mm's threads running at this moment (an index for per-"CPU" data
    sized by threads rather than CPUs): how many of them run on lower-numbered CPUs.  Linux
    allocates it per mm and keeps it stable across switches where it can; this model gives the
    same range and uniqueness (0 on one CPU), not Linux's reuse order."""
    return sum(1 for pc in k.percpu
               if pc.index < cpu.index and pc.curr is not None and pc.curr.mm is task.mm)


def rseq_update_cpu_node_id(k: "Kernel", cpu: "Cpu", task: "Task") -> bool:
    """Write the CPU fields into the area (False: the area is no longer writable)."""
    rs = task.rseq
    assert rs is not None
    cid = mm_cid(k, cpu, task)
    # (the two pairs of adjacent u32 fields as one write each: this runs on every switch-in of
    # a thread that registered rseq, glibc's threads on arm64 among them.  The area is aligned
    # to 32 bytes, so its fields share a page and the writes fault, or not, as the four did.)
    cpu_id = (cpu.index & 0xFFFFFFFF).to_bytes(4, "little")
    try:
        mm = task.mm
        mm.write(rs.area + RSEQ_CPU_ID_START, cpu_id + cpu_id)                  # cpu_id_start, cpu_id
        mm.write(rs.area + RSEQ_NODE_ID, bytes(4) + (cid & 0xFFFFFFFF).to_bytes(4, "little"))  # node 0, mm_cid
    except MemoryFault:
        return False
    return True


def rseq_reset_rseq_cpu_node_id(task: "Task") -> bool:
    """Unregistration leaves the area reading "not registered" (cpu_id -1)."""
    rs = task.rseq
    assert rs is not None
    try:
        mm = task.mm
        mm.write_u32(rs.area + RSEQ_CPU_ID_START, 0)
        mm.write_u32(rs.area + RSEQ_CPU_ID, RSEQ_CPU_ID_UNINITIALIZED)
        mm.write_u32(rs.area + RSEQ_NODE_ID, 0)
        mm.write_u32(rs.area + RSEQ_MM_CID, 0)
    except MemoryFault:
        return False
    return True


def _ip_fixup(k: "Kernel", cpu: "Cpu", task: "Task") -> str | None:
    """rseq_ip_fixup: if the PC is inside the current critical section and an event happened,
    clear rseq_cs and jump to the abort handler.  Returns why it failed (fatal), else None."""
    rs = task.rseq
    assert rs is not None
    mm = task.mm
    try:
        ptr = mm.read_u64(rs.area + RSEQ_CS)
        if ptr == 0:
            rs.event_mask = 0       # not in a section: nothing to restart
            return None
        if ptr >= TASK_SIZE:
            return f"rseq_cs pointer {ptr:#x} outside user space"
        raw = mm.read(ptr, 32)
        version = int.from_bytes(raw[0:4], "little")
        cs_flags = int.from_bytes(raw[4:8], "little")
        start_ip = int.from_bytes(raw[8:16], "little")
        post_commit_offset = int.from_bytes(raw[16:24], "little")
        abort_ip = int.from_bytes(raw[24:32], "little")
        if version > 0:
            return f"rseq_cs version {version}"
        end = start_ip + post_commit_offset
        if start_ip >= TASK_SIZE or end >= TASK_SIZE or abort_ip >= TASK_SIZE:
            return "rseq_cs addresses outside user space"
        if abort_ip - start_ip < post_commit_offset and abort_ip >= start_ip:
            return "rseq_cs abort_ip inside the critical section"
        pc = cpu.get_pc()
        if not 0 <= pc - start_ip < post_commit_offset:
            mm.write_u64(rs.area + RSEQ_CS, 0)     # past the section: forget it
            rs.event_mask = 0
            return None
        # in the section: the deprecated NO_RESTART flags (or unknown ones) are refused
        flags = mm.read_u32(rs.area + RSEQ_FLAGS)
        if cs_flags or flags:
            return f"rseq flags {flags:#x} / rseq_cs flags {cs_flags:#x} (deprecated or unknown)"
        events, rs.event_mask = rs.event_mask, 0
        if not events:
            return None
        sig = mm.read_u32(abort_ip - 4)
        if sig != rs.sig:
            return f"signature {sig:#010x} before abort_ip {abort_ip:#x}, registered {rs.sig:#010x}"
        mm.write_u64(rs.area + RSEQ_CS, 0)
    except MemoryFault:
        return "the rseq area or its rseq_cs is not accessible"
    cpu.set_pc(abort_ip)
    return None


def rseq_handle_notify_resume(k: "Kernel", cpu: "Cpu", task: "Task", signo: int = 0) -> None:
    """The return to user space of a thread with pending rseq work: restart a section it was
    in (``signo``: the signal being delivered, when it is signal delivery that calls), then
    refresh the CPU fields.  A bad area or descriptor kills it with SIGSEGV (force_sigsegv)."""
    rs = task.rseq
    if rs is None or not task.alive:
        return
    rs.notify = False
    why = _ip_fixup(k, cpu, task)
    if why is None and not rseq_update_cpu_node_id(k, cpu, task):
        why = "the rseq area is not writable"
    if why is not None:
        if signo == SIGSEGV:
            # force_sigsegv while delivering SIGSEGV itself: its handler could loop, so default
            task.sighand.action[SIGSEGV].handler = SIG_DFL
        signal_generate.force_sig_info(k, cpu, task, KSigInfo(SIGSEGV, SI_KERNEL, report={
            "signal": SIGSEGV, "signame": "SIGSEGV", "tid": task.tid, "why": "rseq: " + why}))


def rseq_signal_deliver(k: "Kernel", cpu: "Cpu", task: "Task", signo: int) -> None:
    """Before a handler's frame is built: a section the thread was in restarts, so the frame
    saves the abort handler's address as the place to return to."""
    rs = task.rseq
    if rs is None:
        return
    rs.event_mask |= RSEQ_EVENT_SIGNAL
    rseq_handle_notify_resume(k, cpu, task, signo)
