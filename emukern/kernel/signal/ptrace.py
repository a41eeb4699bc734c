"""ptrace(2): a tracer stops, inspects and resumes its tracee (kernel/ptrace.c, kernel/signal.c's
ptrace_signal/ptrace_stop, the arch regsets of arch/arm64/kernel/ptrace.c and
arch/riscv/kernel/ptrace.c).

What is modelled, as Linux does it:

* **Attaching**: PTRACE_TRACEME makes the caller's parent its tracer (EPERM when it is traced
  already or has no parent).  PTRACE_ATTACH / PTRACE_SEIZE attach to another process (EPERM for
  oneself, one's own thread group or a task traced already); ATTACH sends SIGSTOP, SEIZE does
  not.
* **Signal-delivery stops**: a traced task that dequeues any signal but SIGKILL does not act on
  it: it enters a ptrace-stop (TASK_TRACED), its tracer gets SIGCHLD with CLD_TRAPPED and its
  wait4 reports WIFSTOPPED with the signal — also without WUNTRACED, which only group stops need.
  Only SIGKILL ends a ptrace-stop otherwise; SIGCONT does not.
* **Resuming**: PTRACE_CONT / PTRACE_DETACH take the signal to deliver (0: the stop's signal is
  suppressed; another number replaces it, with si_code SI_USER from the tracer, as ptrace_signal
  rewrites the siginfo); a signal above 64 is EIO.  PTRACE_KILL sends SIGKILL.  A tracer that exits
  detaches its tracees (exit_ptrace), resuming a stopped one.
* **Inspecting**: PTRACE_GETSIGINFO / SETSIGINFO (the stop's siginfo; EINVAL when none),
  PTRACE_PEEKSIGINFO (the siginfos still queued, per thread or shared, without dequeuing),
  PTRACE_PEEKTEXT/PEEKDATA (the word is stored at ``data``; EIO when unmapped) and
  PTRACE_POKETEXT/POKEDATA (FOLL_FORCE: read-only text pages are written too),
  PTRACE_GETREGSET / SETREGSET on an iovec: the length is cut to the regset's size and written
  back, a length that is not a multiple of the regset's unit or an unknown NT_* is EINVAL.
  arm64: NT_PRSTATUS (user_pt_regs; a pstate that is not EL0t with D/A/I/F clear is EINVAL),
  NT_PRFPREG (user_fpsimd_state), NT_ARM_TLS (TPIDR_EL0 and TPIDR2_EL0, which reads 0 and ignores
  writes without SME), NT_ARM_HW_BREAK / NT_ARM_HW_WATCH (dbg_info from ID_AA64DFR0_EL1's
  DebugVer and BRPs/WRPs, as ptrace_hbp_get_resource_info), NT_ARM_SVE (user_sve_header and
  the FPSIMD or SVE form; a write sets the VL first, as prctl(PR_SVE_SET_VL) does: see
  kernel/arch/arm64/ptrace.py), NT_ARM_TAGGED_ADDR_CTRL (the tagged address ABI's control word, as
  prctl(PR_GET/SET_TAGGED_ADDR_CTRL)).  riscv64: NT_PRSTATUS
  (user_regs_struct: pc, x1..x31), NT_PRFPREG (f0..f31, fcsr) and NT_RISCV_VECTOR (the
  __riscv_v_regset_state header and v0..v31; its errnos, CSR checks and the view of a state a
  syscall made dead follow the kernel version and riscv-discard: kernel/arch/riscv/vector.py).
* **Errnos**: ESRCH for a pid that is not a tracee of the caller, or one not in a ptrace-stop
  (ptrace_check_attach); EIO for a request emukern does not know.

* **Syscall-stops**: PTRACE_SYSCALL resumes like PTRACE_CONT and stops the tracee at the next
  syscall's entry and exit (status SIGTRAP, or SIGTRAP|0x80 with PTRACE_O_TRACESYSGOOD); CONT
  ends it.  The entry stop leaves the PC on the ecall/svc, which runs again when resumed (so the
  trap log shows that syscall's entry twice, and the argument registers are read after the
  tracer had its chance to change them); the arch's entry work runs once, before the stop.
  A syscall that slept reports its exit stop when it completes after the wake-up, as one that
  did not.  PTRACE_GETEVENTMSG gives the stop's half (PTRACE_EVENTMSG_SYSCALL_ENTRY/EXIT), and
  PTRACE_GET_SYSCALL_INFO the struct ptrace_syscall_info (ENTRY/EXIT with TRACESYSGOOD,
  otherwise NONE).
* **Single step**: PTRACE_SINGLESTEP (arm64) resumes like PTRACE_CONT with the software step
  armed in the tracee's saved context: the CPU runs exactly one user instruction and takes the
  step exception, and single_step_handler sends SIGTRAP (si_code TRAP_TRACE, si_addr the next
  pc), which stops the tracee.  A stepped svc reports at the syscall's exit instead (SIGTRAP,
  SI_USER).  RISC-V has no hardware step, and Linux has no arch_has_single_step there: EIO.

Not modelled (EIO, as for an unknown request — said here so nobody mistakes it for Linux):
PTRACE_INTERRUPT/LISTEN, PTRACE_SETOPTIONS'
event stops (the options are stored, no PTRACE_EVENT_* stop is generated), PTRACE_PEEKUSR/
POKEUSR (EIO on both architectures in Linux too) and NT_ARM_SYSTEM_CALL.  Installing a
hardware breakpoint or watchpoint through NT_ARM_HW_BREAK/WATCH is EINVAL: the machine has no
debug registers to program (disabled entries are accepted).  A tracee that is not the tracer's
child reports its stops to the tracer's wait4, but its exit goes to its real parent only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emukern.kernel.mm.secretmem import range_has_secretmem
from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.signal.defs import SI_USER, SIGCHLD, SIGKILL, SIGSTOP, sigmask
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.task import TaskState

if TYPE_CHECKING:
    from emukern.kernel.task import Task
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal.defs import signal_name
from emukern.machine.memory import MemoryFault

PTRACE_TRACEME, PTRACE_PEEKTEXT, PTRACE_PEEKDATA, PTRACE_PEEKUSR = 0, 1, 2, 3
PTRACE_POKETEXT, PTRACE_POKEDATA, PTRACE_POKEUSR, PTRACE_CONT = 4, 5, 6, 7
PTRACE_KILL, PTRACE_SINGLESTEP, PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SYSCALL = 8, 9, 16, 17, 24
PTRACE_SETOPTIONS, PTRACE_GETEVENTMSG, PTRACE_GETSIGINFO, PTRACE_SETSIGINFO = 0x4200, 0x4201, 0x4202, 0x4203
PTRACE_GETREGSET, PTRACE_SETREGSET, PTRACE_SEIZE = 0x4204, 0x4205, 0x4206
PTRACE_GET_SYSCALL_INFO = 0x420E
# ptrace_message at a syscall-stop (PTRACE_EVENTMSG_SYSCALL_*), and the op the tracer reads
PTRACE_EVENTMSG_SYSCALL_ENTRY, PTRACE_EVENTMSG_SYSCALL_EXIT = 1, 2
PTRACE_SYSCALL_INFO_NONE, PTRACE_SYSCALL_INFO_ENTRY, PTRACE_SYSCALL_INFO_EXIT = 0, 1, 2

NT_PRSTATUS, NT_PRFPREG = 1, 2
NT_ARM_TLS, NT_ARM_HW_BREAK, NT_ARM_HW_WATCH = 0x401, 0x402, 0x403
NT_ARM_TAGGED_ADDR_CTRL = 0x409

CLD_TRAPPED = 4
_NSIG = 64
_PTRACE_O_MASK = 0x003000FF          # the PTRACE_O_* bits Linux accepts

TRACED = "traced"                    # the wait_reason of a task in a ptrace-stop (TASK_TRACED)


@dataclass(eq=False)
class PtraceLink:
    """A tracee's side of the link (task->ptrace, ->parent as tracer, ->exit_code, ->last_siginfo)."""
    tracer: "Task"
    seized: bool = False
    options: int = 0
    stopped: bool = False              # in a ptrace-stop
    exit_code: int = 0                 # the stop's signal until the tracer's wait4 collects it
    last_siginfo: KSigInfo | None = None
    resume_sig: int = 0                # what PTRACE_CONT/DETACH gave back (task->exit_code)
    injected: KSigInfo | None = None   # that signal, queued: delivered without a second stop
    syscall_trace: bool = False        # resumed by PTRACE_SYSCALL (TIF_SYSCALL_TRACE)
    entry_stopped: bool = False        # the ecall/svc now re-executing was reported at entry
    message: int = 0                   # ptrace_message: PTRACE_GETEVENTMSG's answer


def _link(task: "Task") -> PtraceLink | None:
    return task.ptrace


# ---- the tracee's side: signal-delivery stops --------------------------------------------------
def ptrace_signal(k: Any, cpu: Any, task: "Task", info: KSigInfo, trap: Any) -> bool:
    """kernel/signal.c ptrace_signal: called by do_signal for each signal a traced task dequeues
    (never SIGKILL).  True: the task entered a ptrace-stop (do_signal returns; the tracer decides
    what is delivered).  False: deliver ``info`` now — it is the signal the tracer gave back."""
    link = _link(task)
    if link is None:
        return False
    if link.injected is info:
        link.injected = None
        return False
    ptrace_stop(k, cpu, task, info, trap)
    return True


def ptrace_stop(k: Any, cpu: Any, task: "Task", info: KSigInfo, trap: Any) -> None:
    """Park in TASK_TRACED with exit_code = the signal, tell the tracer (SIGCHLD CLD_TRAPPED,
    unless its SIGCHLD action has SA_NOCLDSTOP; and a wake-up of its wait4)."""
    link = _link(task)
    assert link is not None
    sig = info.signo
    link.stopped, link.exit_code, link.last_siginfo, link.resume_sig = True, sig, info, 0
    signal_delivery._log_signal(k, cpu, task, f"{_signame(sig)}: ptrace-stop (the tracer, pid {link.tracer.tgid}, decides)", trap)
    _notify_tracer(k, cpu, task, link, sig)
    task.waitqueues = []
    k.sched.block_current(cpu, task, f"{TRACED} ({_signame(sig)})")


def _notify_tracer(k: Any, cpu: Any, task: "Task", link: PtraceLink, sig: int) -> None:
    """do_notify_parent_cldstop(tsk, for_ptracer=true, CLD_TRAPPED) + __wake_up_parent."""
    SA_NOCLDSTOP = 1
    tracer = link.tracer
    if tracer.sighand is not None and tracer.alive and not tracer.sighand.action[SIGCHLD].flags & SA_NOCLDSTOP:
        signal_generate.send_signal(k, cpu, tracer, KSigInfo(SIGCHLD, CLD_TRAPPED, pid=task.tid, status=sig & 0x7F), True)
    wq = k.child_wait.get(tracer.tgid)
    if wq:
        k.sched.wake_queue(wq, cpu.now)


def ptrace_signal_wake_up(k: Any, cpu: Any, t: "Task") -> None:
    """signal_wake_up(t, fatal): of all signals only SIGKILL ends a ptrace-stop (TASK_WAKEKILL)."""
    if not t.sigstate or not ((t.sigstate.pending.signal | t.signal.shared_pending.signal) & sigmask(SIGKILL)):
        return
    link = _link(t)
    if link is not None:
        link.stopped = False
    k.sched.wake_up(t, cpu.now)


def _resume(k: Any, cpu: Any, child: "Task", link: PtraceLink, sig: int) -> None:
    """ptrace_resume's wake-up and the rest of ptrace_signal: the tracer's signal (0: none) is
    queued for delivery, with a SI_USER siginfo from the tracer if it is not the stop's signal;
    a signal the tracee blocks stays pending (and stops it again when dequeued later)."""
    link.stopped = False
    link.exit_code = 0
    if sig:
        info = link.last_siginfo
        if info is None or info.signo != sig:
            info = KSigInfo(sig, SI_USER, pid=link.tracer.tgid)
        child.sigstate.pending.add(info)
        if not child.sigstate.blocked & sigmask(sig):
            link.injected = info
        signal_base.recalc_sigpending(k, child)
    if child.state is TaskState.BLOCKED and child.wait_reason.startswith(TRACED):
        k.sched.wake_up(child, cpu.now)


# ---- syscall-stops (PTRACE_SYSCALL) --------------------------------------------------------------
SIGTRAP = 5
PTRACE_O_TRACESYSGOOD = 1


def _syscall_stop(k: Any, cpu: Any, task: "Task", link: PtraceLink, trap: Any, where: str) -> None:
    """ptrace_report_syscall: a ptrace-stop whose status is SIGTRAP, or SIGTRAP|0x80 when the
    tracer asked PTRACE_O_TRACESYSGOOD (so it can tell a syscall-stop from a real SIGTRAP)."""
    code = SIGTRAP | (0x80 if link.options & PTRACE_O_TRACESYSGOOD else 0)
    info = KSigInfo(SIGTRAP, code, pid=task.tgid)
    link.stopped, link.exit_code, link.last_siginfo, link.resume_sig = True, code, info, 0
    link.message = PTRACE_EVENTMSG_SYSCALL_ENTRY if where == "entry" else PTRACE_EVENTMSG_SYSCALL_EXIT
    if trap is not None:
        trap.decision = f"syscall-{where} stop (PTRACE_SYSCALL), status {code:#x}"
    _notify_tracer(k, cpu, task, link, code)
    task.waitqueues = []
    k.sched.block_current(cpu, task, f"{TRACED} (syscall-{where})")


def syscall_trace_enter(k: Any, cpu: Any, task: "Task", trap: Any) -> bool:
    """The entry half for a task its tracer resumed with PTRACE_SYSCALL.  The first time: the
    arch's entry work (V discard, SVE flush) runs as it does before Linux's report, then the
    task stops with the PC back on its ecall/svc — True, nothing is dispatched.  When resumed it
    executes that instruction again and lands here a second time: False, dispatch now, with the
    argument registers as the tracer left them (the arch's entry work is not repeated)."""
    link = task.ptrace
    if link.entry_stopped:
        link.entry_stopped = False
        return False
    note = k.arch.syscall_enter(cpu, task)
    if note and trap is not None:
        trap.notes = [note]
    cpu.set_pc(cpu.get_pc() - 4)            # ecall and svc are both 4 bytes
    link.entry_stopped = True
    _syscall_stop(k, cpu, task, link, trap, "entry")
    return True


def syscall_trace_exit(k: Any, cpu: Any, task: "Task", trap: Any) -> None:
    """The exit half: the return value is in the registers; stop once more before user mode.
    A syscall instruction that was being single-stepped reports the step here instead (arm64's
    report_syscall: a pseudo-step, SIGTRAP with si_code SI_USER from no one, since the tracer
    may have rewound the step at the entry), and the step is disarmed."""
    link = task.ptrace
    if link is not None and link.syscall_trace and task.alive:
        _syscall_stop(k, cpu, task, link, trap, "exit")
    elif link is not None and cpu.single_step and task.alive:
        cpu.single_step = False
        if trap is not None:
            trap.decision = "single-stepped syscall: SIGTRAP (SI_USER) at its exit"
        signal_generate.send_signal(k, cpu, task, KSigInfo(SIGTRAP, SI_USER), False)


# ---- the tracer's wait4 ---------------------------------------------------------------------------
def ptrace_tracees(k: Any, tracer_tgid: int) -> list["Task"]:
    """The live tasks whose tracer is a thread of ``tracer_tgid`` (the ptraced list)."""
    return [t for t in k.tasks.values() if t.alive and t.ptrace is not None
            and t.ptrace.tracer.tgid == tracer_tgid]


def wait_task_traced(k: Any, task: "Task", candidates: list["Task"], status_ptr: int) -> int:
    """wait_task_stopped(ptrace=1): the first candidate in a ptrace-stop whose stop was not
    reported yet -> its tid, the status (sig << 8 | 0x7f) stored; 0 when none.  The stop is
    reported once (exit_code cleared), as without WNOWAIT."""
    for c in candidates:
        link = _link(c)
        if link is None or not link.stopped or not link.exit_code or link.tracer.tgid != task.tgid:
            continue
        status = (link.exit_code << 8) | 0x7F
        link.exit_code = 0
        if status_ptr:
            task.mm.write_u32(status_ptr, status)
        return c.tid
    return 0


# ---- exit and exec ------------------------------------------------------------------------------
def exit_ptrace(k: Any, cpu: Any, tracer: "Task") -> None:
    """A dying tracer detaches every tracee it traces (__ptrace_detach), resuming stopped ones
    without a signal."""
    for t in list(k.tasks.values()):
        link = _link(t)
        if link is not None and link.tracer is tracer:
            t.ptrace = None
            if t.alive and t.state is TaskState.BLOCKED and t.wait_reason.startswith(TRACED):
                k.sched.wake_up(t, cpu.now)


def ptrace_exec_notify(k: Any, cpu: Any, task: "Task") -> None:
    """ptrace_event(PTRACE_EVENT_EXEC): a tracee attached without PTRACE_SEIZE and without
    PTRACE_O_TRACEEXEC gets a SIGTRAP after a successful execve (its tracer sees it stop)."""
    link = _link(task)
    if link is not None and not link.seized:
        signal_generate.send_signal(k, cpu, task, KSigInfo(5, SI_USER, pid=task.tgid), False)


# ---- the syscall ----------------------------------------------------------------------------------
def sys_ptrace(k: Any, cpu: Any, task: "Task", request: int, pid: int, addr: int, data: int) -> int:
    request &= 0xFFFF_FFFF_FFFF_FFFF
    if request == PTRACE_TRACEME:
        return ptrace_traceme(task)
    pid &= 0xFFFF_FFFF
    pid = pid - (1 << 32) if pid >> 31 else pid          # pid_t
    child = kpid.find_task_by_vpid(k, task, pid) if pid > 0 else None
    if child is None or not child.alive:
        return -E.ESRCH
    if request in (PTRACE_ATTACH, PTRACE_SEIZE):
        return ptrace_attach(k, cpu, task, child, seize=request == PTRACE_SEIZE, flags=data)
    err = ptrace_check_attach(task, child, ignore_state=request == PTRACE_KILL)
    if err:
        return err
    link = _link(child)
    assert link is not None
    if request == PTRACE_KILL:
        signal_generate.send_signal(k, cpu, child, KSigInfo(SIGKILL, SI_USER, pid=task.tgid), True)
        return 0
    if request in (PTRACE_CONT, PTRACE_DETACH, PTRACE_SYSCALL, PTRACE_SINGLESTEP):
        if not 0 <= data <= _NSIG:
            return -E.EIO                       # !valid_signal(data)
        link.syscall_trace = request == PTRACE_SYSCALL
        # only arm64 has a hardware step: on RISC-V (no arch_has_single_step) the request is EIO
        if not k.arch.user_single_step(child, request == PTRACE_SINGLESTEP) and request == PTRACE_SINGLESTEP:
            return -E.EIO
        if request == PTRACE_DETACH:
            child.ptrace = None                 # __ptrace_unlink; the stop's exit_code is replaced
        _resume(k, cpu, child, link, data)
        return 0
    if request in (PTRACE_PEEKTEXT, PTRACE_PEEKDATA):
        return _peek(k, task, child, addr, data)
    if request in (PTRACE_POKETEXT, PTRACE_POKEDATA):
        return _poke(child, addr, data)
    if request == PTRACE_GETSIGINFO:
        if link.last_siginfo is None:
            return -E.EINVAL
        task.mm.write(data, link.last_siginfo.to_bytes())
        return 0
    if request == PTRACE_SETSIGINFO:
        if link.last_siginfo is None:
            return -E.EINVAL
        link.last_siginfo = _siginfo_from_bytes(task.mm.read(data, 128))
        return 0
    if request == PTRACE_SETOPTIONS:
        if data & ~_PTRACE_O_MASK:
            return -E.EINVAL
        link.options = data
        return 0
    if request == PTRACE_GETEVENTMSG:
        # no event stops: the message is 0, or which half of a syscall a syscall-stop is
        task.mm.write(data, link.message.to_bytes(8, "little"))
        return 0
    if request == PTRACE_GET_SYSCALL_INFO:
        return ptrace_get_syscall_info(k, task, child, link, addr, data)
    if request == PTRACE_PEEKSIGINFO:
        return ptrace_peek_siginfo(task, child, addr, data)
    if request in (PTRACE_GETREGSET, PTRACE_SETREGSET):
        return ptrace_regset(k, task, child, request, addr, data)
    return -E.EIO          # PEEKUSR, INTERRUPT, ... (see the module docstring)


PTRACE_PEEKSIGINFO, PTRACE_PEEKSIGINFO_SHARED = 0x4209, 1
SIGINFO_SIZE = 128


def ptrace_peek_siginfo(task: "Task", child: "Task", uargs: int, buf: int) -> int:
    """PTRACE_PEEKSIGINFO: copy siginfos still queued for the tracee -- its own queue, or with
    PTRACE_PEEKSIGINFO_SHARED its process's -- starting ``off`` entries in, at most ``nr`` of
    them, without dequeuing.  Returns how many were copied; a fault after the first is a short
    count, a fault on the first EFAULT (as a partial read() reports)."""
    try:
        raw = task.mm.read(uargs, 16)           # struct ptrace_peeksiginfo_args: off, flags, nr
    except MemoryFault:
        return -E.EFAULT
    off = int.from_bytes(raw[:8], "little")
    flags = int.from_bytes(raw[8:12], "little")
    nr = int.from_bytes(raw[12:16], "little", signed=True)
    if flags & ~PTRACE_PEEKSIGINFO_SHARED or nr < 0 or off >> 63:
        return -E.EINVAL
    if flags & PTRACE_PEEKSIGINFO_SHARED:
        pending = child.signal.shared_pending if child.signal is not None else None
    else:
        pending = child.sigstate.pending if child.sigstate is not None else None
    queue = list(pending.queue) if pending is not None else []
    done = 0
    for info in queue[off:off + nr]:
        try:
            task.mm.write(buf + done * SIGINFO_SIZE, info.to_bytes())
        except MemoryFault:
            return done or -E.EFAULT
        done += 1
    return done


def ptrace_get_syscall_info(k: Any, task: "Task", child: "Task", link: PtraceLink, size: int, uptr: int) -> int:
    """PTRACE_GET_SYSCALL_INFO: a struct ptrace_syscall_info of the stopped tracee, cut to the
    tracer's ``size``; returns the length of the whole answer.  Which form it takes follows the
    stop's siginfo: only a syscall-stop of a TRACESYSGOOD tracer (si_code SIGTRAP|0x80) says
    ENTRY (number and six arguments) or EXIT (the return value and whether it is an errno),
    by the stop's ptrace_message; any other stop gives NONE, the common head only (op, arch,
    instruction and stack pointer).  No seccomp stops exist here, so SECCOMP never occurs."""
    rs = next(r for r in k.arch.REGSETS if r.note == NT_PRSTATUS)
    raw = k.arch.regset_get(child, rs)
    words = [int.from_bytes(raw[i:i + 8], "little") for i in range(0, len(raw) - 7, 8)]
    pc_i, sp_i, nr_i, arg_i, ret_i = k.arch.SYSCALL_SLOTS
    ip = words[pc_i]
    if link.entry_stopped:
        ip += 4             # emukern rewinds to the ecall/svc at an entry stop; Linux's ip is past it
    op, body = PTRACE_SYSCALL_INFO_NONE, b""
    si = link.last_siginfo
    if si is not None and si.signo == SIGTRAP and si.code == SIGTRAP | 0x80:
        if link.message == PTRACE_EVENTMSG_SYSCALL_ENTRY:
            op = PTRACE_SYSCALL_INFO_ENTRY
            body = b"".join(w.to_bytes(8, "little") for w in [words[nr_i], *words[arg_i:arg_i + 6]])
        elif link.message == PTRACE_EVENTMSG_SYSCALL_EXIT:
            rval = words[ret_i] - (1 << 64) if words[ret_i] >> 63 else words[ret_i]
            is_error = -4095 <= rval < 0            # IS_ERR_VALUE: an errno, not a value
            body = rval.to_bytes(8, "little", signed=True) + bytes([is_error])
            op = PTRACE_SYSCALL_INFO_EXIT
    arch = k.arch.ELF_MACHINE | 0xC000_0000      # AUDIT_ARCH_*: 64-bit, little-endian
    info = bytes([op, 0, 0, 0]) + arch.to_bytes(4, "little") + ip.to_bytes(8, "little") \
        + words[sp_i].to_bytes(8, "little") + body
    n = min(size, len(info))
    try:
        if n:
            task.mm.write(uptr, info[:n])
    except MemoryFault:
        return -E.EFAULT
    return len(info)


def ptrace_traceme(task: "Task") -> int:
    """PTRACE_TRACEME: the parent becomes the tracer (EPERM if traced already or parentless)."""
    if task.ptrace is not None or task.parent is None or not task.parent.alive:
        return -E.EPERM
    task.ptrace = PtraceLink(tracer=task.parent)
    return 0


def ptrace_attach(k: Any, cpu: Any, tracer: "Task", child: "Task", seize: bool, flags: int) -> int:
    """PTRACE_ATTACH / PTRACE_SEIZE: EPERM for a task of one's own thread group or a traced one;
    SEIZE takes the options in ``data`` (EIO for unknown ones) and sends no SIGSTOP."""
    if child.tgid == tracer.tgid or child.ptrace is not None:
        return -E.EPERM
    if seize and flags & ~_PTRACE_O_MASK:
        return -E.EIO
    child.ptrace = PtraceLink(tracer=tracer, seized=seize, options=flags if seize else 0)
    if not seize:
        signal_generate.send_signal(k, cpu, child, KSigInfo(SIGSTOP, SI_USER, pid=tracer.tgid), False)
    return 0


def ptrace_check_attach(tracer: "Task", child: "Task", ignore_state: bool) -> int:
    """ESRCH unless ``child`` is traced by this very thread and (for most requests) stopped."""
    link = _link(child)
    if link is None or link.tracer is not tracer:
        return -E.ESRCH
    if not ignore_state and not (link.stopped and child.state is TaskState.BLOCKED
                                 and child.wait_reason.startswith(TRACED)):
        return -E.ESRCH
    return 0


def _peek(k: Any, task: "Task", child: "Task", addr: int, data: int) -> int:
    if range_has_secretmem(child.mm, addr, 8):
        return -E.EIO                              # access_remote_vm cannot pin secretmem
    try:
        word = child.mm.read(addr, 8, "")          # FOLL_FORCE: any mapped page
    except MemoryFault:
        return -E.EIO
    task.mm.write(data, word)                      # put_user: a bad `data` is EFAULT
    return 0


def _poke(child: "Task", addr: int, data: int) -> int:
    if range_has_secretmem(child.mm, addr, 8):
        return -E.EIO
    try:
        child.mm.write(addr, (data & (2**64 - 1)).to_bytes(8, "little"), need="")
    except MemoryFault:
        return -E.EIO
    return 0


def _siginfo_from_bytes(b: bytes) -> KSigInfo:
    signo, err, code = (int.from_bytes(b[0:4], "little"), int.from_bytes(b[4:8], "little", signed=True),
                        int.from_bytes(b[8:12], "little", signed=True))
    return KSigInfo(signo, code, errno=err, pid=int.from_bytes(b[16:20], "little", signed=True),
                    uid=int.from_bytes(b[20:24], "little"))


def _signame(sig: int) -> str:
    return signal_name(sig)


# ---- regsets ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Regset:
    note: int
    n: int          # units
    size: int       # bytes per unit
    name: str

    @property
    def total(self) -> int:
        return self.n * self.size


def ptrace_regset(k: Any, task: "Task", child: "Task", request: int, note: int, uiov: int) -> int:
    """kernel/ptrace.c ptrace_regset on the iovec at ``uiov``: EINVAL for an unknown note or a
    length that is not a whole number of units; the length is cut to the regset's size and the
    iovec's iov_len updated."""
    rs = next((r for r in k.arch.REGSETS if r.note == note), None)
    iov = task.mm.read(uiov, 16)
    base, length = int.from_bytes(iov[:8], "little"), int.from_bytes(iov[8:], "little")
    if rs is None or length % rs.size:
        return -E.EINVAL
    length = min(length, rs.total)
    # a regset the arch handles whole (arm64's NT_ARM_SVE: -EINVAL without SVE, a write of
    # exactly the bytes given): None means "the generic get/set below"
    err = k.arch.regset_access(task, child, rs, request == PTRACE_SETREGSET, base, length)
    if err is None:
        if request == PTRACE_GETREGSET:
            task.mm.write(base, k.arch.regset_get(child, rs)[:length])
        else:
            err = regset_set(k, child, rs, task.mm.read(base, length))
    if err:
        return err
    task.mm.write(uiov + 8, length.to_bytes(8, "little"))
    return 0


def regset_set(k: Any, child: "Task", rs: Regset, data: bytes) -> int:
    """Write the first len(data) bytes of the regset (the rest keeps its value), or -errno: the
    arch merges them into a full read and stores the words (kernel/arch/*/regset.py)."""
    full = bytearray(k.arch.regset_get(child, rs))
    full[:len(data)] = data
    words = [int.from_bytes(full[i:i + 8], "little") for i in range(0, len(full) - len(full) % 8, 8)]
    return k.arch.regset_store(child, rs, bytes(full), words)
