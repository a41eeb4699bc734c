"""The signal syscalls of dispositions and masks — rt_sigaction, rt_sigprocmask, rt_sigpending,
rt_sigsuspend, rt_sigtimedwait, ppoll's signal side, sigaltstack (kernel/signal.c, fs/select.c)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403

from emukern.kernel.task import Task, TaskState      # noqa: F401
from emukern.kernel import errno as E
from emukern.kernel.signal.defs import ERESTARTNOHAND
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal.defs import ALL_SIGS
from emukern.kernel.signal.defs import SIG_KERNEL_ONLY
from emukern.kernel.signal.defs import SS_AUTODISARM
from emukern.kernel.signal.defs import SS_DISABLE
from emukern.kernel.signal.defs import SS_ONSTACK
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.signal.state import TaskSig
from emukern.kernel.signal.state import on_sig_stack
from emukern.kernel.signal.state import sas_ss_flags
from emukern.kernel.task import Task
from typing import Any
from typing import cast
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu

# the uc_stack __save_altstack writes for a thread without an alternate stack: ss_sp 0,
# ss_flags SS_DISABLE, ss_size 0
_NO_ALTSTACK = (0).to_bytes(8, "little") + SS_DISABLE.to_bytes(4, "little") + bytes(12)

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap


def pselect_interrupted(k: "Kernel", cpu, task, args: tuple) -> int:
    """A signal woke a pselect6 sleeper (syscall_interrupted): off its queues, the time
    left written back, -ERESTARTNOHAND (EINTR once a handler runs)."""
    st = task.sigstate
    st.in_wait = ""
    k.sched.finish_wait(task)
    target, st.poll_deadline = st.poll_deadline, None
    return _select_finish(k, cpu, task, args[4], target, -ERESTARTNOHAND)


def set_current_blocked(k: "Kernel", task: Task, mask: int) -> None:
    task.sigstate.blocked = mask & ~SIG_KERNEL_ONLY & ALL_SIGS
    signal_base.recalc_sigpending(k, task)


def _sigwait_done(k: "Kernel", task: Task, info: KSigInfo, uinfo: int) -> int:
    if uinfo:
        task.mm.write(uinfo, info.to_bytes())
    return info.signo


def poll_select_begin(k: "Kernel", cpu, task: Task, tmo: int, sigmask_ptr: int, sigsetsize: int) -> tuple[int, Any]:
    """The first pass of ppoll and pselect6 (fs/select.c poll_select_set_timeout +
    set_user_sigmask): the deadline in cycles of the user's timespec (None: no timeout;
    EINVAL for a negative or unnormalised one), then the temporary sigmask swapped in
    (EINVAL for a size other than 8).  Returns (0 or -errno, deadline)."""
    st = task.sigstate
    target = None
    if tmo:
        raw = task.mm.read(tmo, 16)
        sec, nsec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
        if sec < 0 or not 0 <= nsec < 10**9:
            return -E.EINVAL, None
        target = cpu.now + k.clock.cycles_for_ns(sec * 10**9 + nsec)
    if sigmask_ptr:
        if sigsetsize != 8:
            return -E.EINVAL, None
        st.saved_sigmask = st.blocked
        set_current_blocked(k, task, task.mm.read_u64(sigmask_ptr))
    return 0, target


def poll_select_sleep(k: "Kernel", cpu, task: Task, queues: list, target: Any, name: str) -> None:
    """Nothing ready: sleep on every polled file's wait queue and, with a timeout, on a
    timer; ``name`` (the syscall) marks the wait so the re-run knows it is a wake-up."""
    st = task.sigstate
    st.in_wait = name
    for wq in queues:
        wq.add(task)
    task.waitqueues = queues
    if target is not None:
        st.poll_deadline = target
        k.sched.add_timer(task, target)
    k.sched.block_current(cpu, task, name)


def _ppoll_restore_mask(k: "Kernel", task: Task) -> None:
    """ppoll returns without a signal to handle: the caller's mask comes back at once."""
    st = task.sigstate
    if st.saved_sigmask is not None:
        st.blocked, st.saved_sigmask = st.saved_sigmask, None
        signal_base.recalc_sigpending(k, task)


def _user_sp(k: "Kernel", cpu: "Cpu") -> int:
    return k.arch.user_sp(cpu)


def min_sigstksz(k: "Kernel") -> int:
    return k.arch.MINSIGSTKSZ


def do_sigaltstack(k: "Kernel", cpu, task, uss, uoss, sp) -> int:
    st = signal_base._sig_init(k, task)
    old = (st.sas_ss_sp, sas_ss_flags(st, sp) | (st.sas_ss_flags & SS_AUTODISARM), st.sas_ss_size)
    if uss:
        err = _set_altstack(k, st, task.mm.read(uss, 24), sp)
        if err:
            return err
    if uoss:
        task.mm.write(uoss, old[0].to_bytes(8, "little") + old[1].to_bytes(4, "little")
                      + bytes(4) + old[2].to_bytes(8, "little"))
    return 0


def _set_altstack(k: "Kernel", st: TaskSig, raw: bytes, sp: int) -> int:
    """The new stack_t of do_sigaltstack (already copied from the user): 0 or -errno."""
    ss_sp = int.from_bytes(raw[0:8], "little")
    ss_flags = int.from_bytes(raw[8:12], "little")
    ss_size = int.from_bytes(raw[16:24], "little")
    if on_sig_stack(st, sp):
        return -E.EPERM
    mode = ss_flags & ~SS_AUTODISARM
    if mode not in (SS_DISABLE, SS_ONSTACK, 0):
        return -E.EINVAL
    if mode == SS_DISABLE:
        ss_sp = ss_size = 0
    elif ss_size < min_sigstksz(k):
        return -E.ENOMEM
    st.sas_ss_sp, st.sas_ss_size = ss_sp, ss_size
    st.sas_ss_flags = ss_flags          # as given: __save_altstack writes it back into frames
    return 0


def save_altstack(k: "Kernel", task: Task, sp: int) -> bytes:
    """__save_altstack: the stack_t in the frame's uc_stack."""
    st = task.sigstate
    return (st.sas_ss_sp.to_bytes(8, "little") + sas_ss_flags(st, sp).to_bytes(4, "little")
            + bytes(4) + st.sas_ss_size.to_bytes(8, "little"))


def restore_altstack(k: "Kernel", cpu, task, uss: int, sp: int) -> bool:
    """restore_altstack: only a fault makes rt_sigreturn fail (EPERM on the stack is fine)."""
    try:
        return do_sigaltstack(k, cpu, task, uss, 0, sp) != -E.EFAULT
    except MemoryFault:           # a bad user pointer
        return False


def restore_altstack_raw(k: "Kernel", cpu, task, raw: bytes, sp: int) -> bool:
    """restore_altstack from the uc_stack bytes of a frame already copied in (rt_sigreturn's
    one read of the frame): the same rules, and no fault is possible any more."""
    st = task.sigstate if task.sighand is not None else signal_base._sig_init(k, task)
    if raw == _NO_ALTSTACK and not st.sas_ss_size and not st.sas_ss_sp and st.sas_ss_flags == SS_DISABLE:
        return True     # no alternate stack before or after: _set_altstack would change nothing
    _set_altstack(k, st, raw, sp)
    return True


def _select_finish(k: "Kernel", cpu, task, tsp: int, target: Any, ret: int) -> int:
    """poll_select_finish: the caller's mask back (unless a handler is to run first), the
    time left written to the timespec; if that write faults a restart is impossible, so
    -ERESTARTNOHAND becomes -EINTR."""
    if ret != -ERESTARTNOHAND:
        _ppoll_restore_mask(k, task)
    st = task.sigstate
    if not tsp or target is None or getattr(st, "pselect_zero", False):
        return ret
    left = max(0, int(k.clock.ns(target) - k.clock.ns(cpu.now)))
    try:
        task.mm.write(tsp, (left // 10**9).to_bytes(8, "little") + (left % 10**9).to_bytes(8, "little"))
    except MemoryFault:           # a bad user pointer
        if ret == -ERESTARTNOHAND:
            ret = -E.EINTR
    return ret
