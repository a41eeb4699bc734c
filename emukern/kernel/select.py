"""select: pselect6 <-> fs/select.c (core_sys_select, do_select, poll_select_finish).

glibc's select() and pselect() are the pselect6 syscall on arm64 and riscv64 (the asm-generic
table has no select).  The readiness of each descriptor is its file's ``->poll`` mask
(emukern.kernel.epoll.file_poll, the one ppoll and epoll use), folded into the three sets the
way do_select does (POLLIN_SET / POLLOUT_SET / POLLEX_SET); a wait that finds nothing ready
sleeps on every watched file's wait queues and the timeout, and runs again from the start when
woken, like sys_ppoll (emukern/kernel/signal/syscalls.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.epoll import (EPOLLERR, EPOLLHUP, EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDNORM,
                                  EPOLLWRNORM, _queues, file_poll)
from emukern.kernel.signal.defs import ERESTARTNOHAND
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.task import Task

SELECT_SYSCALL_NAMES = {72: "pselect6"}

EPOLLRDBAND, EPOLLWRBAND = 0x80, 0x200
POLLIN_SET = EPOLLRDNORM | EPOLLRDBAND | EPOLLIN | EPOLLHUP | EPOLLERR
POLLOUT_SET = EPOLLWRBAND | EPOLLWRNORM | EPOLLOUT | EPOLLERR
POLLEX_SET = EPOLLPRI
DEFAULT_POLLMASK = EPOLLIN | EPOLLOUT | EPOLLRDNORM | EPOLLWRNORM   # a file without ->poll



def _fds_bytes(n: int) -> int:
    """FDS_BYTES: a set of n descriptors in whole longs."""
    return (n + 63) // 64 * 8


class SelectMixin:
    """pselect6; mixed into the kernel."""

    clock: Any
    cost: Any

    if TYPE_CHECKING:
        def _sig_init(self, task: "Task") -> Any: ...
        def set_current_blocked(self, task: "Task", mask: int) -> None: ...
        def _ppoll_restore_mask(self, task: "Task") -> None: ...
        def add_timer(self, task: "Task", wake_at: int) -> bool: ...
        def block_current(self, cpu: Any, task: "Task", reason: str) -> None: ...
        sched: Any

    def sys_pselect6(self, cpu, task, n, inp, outp, exp, tsp, sig, *a):
        st = self._sig_init(task)
        again = st.in_wait == "pselect6"
        st.in_wait = ""
        timed_out = False
        n = n & 0xFFFFFFFF
        n = n - (1 << 32) if n >> 31 else n
        if again:                               # woken: by a file, the timer or a signal
            timed_out = self.sched.finish_wait(task)
            target, zero_tmo = st.poll_deadline, False
        else:
            if n < 0:
                return -E.EINVAL
            target, zero_tmo = None, False
            if tsp:                             # poll_select_set_timeout
                if task.mm.find(tsp) is None:
                    return -E.EFAULT
                raw = task.mm.read(tsp, 16)
                sec = int.from_bytes(raw[:8], "little", signed=True)
                nsec = int.from_bytes(raw[8:], "little", signed=True)
                if sec < 0 or not 0 <= nsec < 10**9:
                    return -E.EINVAL
                zero_tmo = sec == 0 and nsec == 0
                target = cpu.now + self.clock.cycles_for_ns(sec * 10**9 + nsec)
            if sig:                             # the 6th argument: {const sigset_t *ss; size_t ss_len}
                if task.mm.find(sig) is None:
                    return -E.EFAULT
                raw = task.mm.read(sig, 16)
                ss, ss_len = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
                if ss:
                    if ss_len != 8:
                        return -E.EINVAL
                    if task.mm.find(ss) is None:
                        return -E.EFAULT
                    st.saved_sigmask = st.blocked
                    self.set_current_blocked(task, task.mm.read_u64(ss))
        st.poll_deadline = None
        n = min(n, task.files.MAX_FDS)          # core_sys_select: n past max_fds is max_fds
        size = _fds_bytes(n)
        sets = []
        for ptr in (inp, outp, exp):            # get_fd_set: a NULL set is all zeros
            if ptr and size:
                if task.mm.find(ptr) is None or task.mm.find(ptr + size - 1) is None:
                    self._ppoll_restore_mask(task)
                    return -E.EFAULT
                sets.append(int.from_bytes(task.mm.read(ptr, size), "little"))
            else:
                sets.append(0)
        want = sets[0] | sets[1] | sets[2]
        res = [0, 0, 0]
        ready = 0
        queues: list = []
        fd = 0
        while want >> fd:                       # do_select: every descriptor in any set
            if not want >> fd & 1:
                fd += 1
                continue
            f = task.files.get(fd)
            if f is None:
                self._ppoll_restore_mask(task)
                return -E.EBADF                 # a closed descriptor fails the whole call
            mask = file_poll(f)
            if mask is None:
                mask = DEFAULT_POLLMASK
            for i, cls in enumerate((POLLIN_SET, POLLOUT_SET, POLLEX_SET)):
                if sets[i] >> fd & 1 and mask & cls:
                    res[i] |= 1 << fd
                    ready += 1                  # (one in two sets counts twice, as do_select)
            queues += _queues(f)
            fd += 1
        expired = timed_out or (target is not None and target <= cpu.now)
        if ready or expired:
            for ptr, bits in zip((inp, outp, exp), res):       # set_fd_set
                if ptr and size:
                    task.mm.write(ptr, bits.to_bytes(size, "little"))
            cpu.charge(self.cost.syscall_body)
            return self._select_finish(cpu, task, tsp, target, zero_tmo, ready)
        if task.sigpending:
            return self._select_finish(cpu, task, tsp, target, zero_tmo, -ERESTARTNOHAND)
        st.in_wait = "pselect6"
        for wq in queues:
            wq.add(task)
        task.waitqueues = queues
        if target is not None:
            st.poll_deadline = target
            self.add_timer(task, target)
        self.block_current(cpu, task, "pselect6")
        return BLOCK

    def _select_finish(self, cpu, task, tsp: int, target: int | None, zero_tmo: bool, ret: int) -> int:
        """poll_select_finish: the caller's mask back unless a signal is to be handled, and the
        time left written over the user's timeout (not for a zero timeout); a timeout that
        cannot be written makes a restart impossible, so -ERESTARTNOHAND becomes -EINTR."""
        if ret != -ERESTARTNOHAND:
            self._ppoll_restore_mask(task)
        if not tsp or target is None or zero_tmo:
            return ret
        left = int(max(0, self.clock.ns(target) - self.clock.ns(cpu.now)))
        try:                                    # put_timespec64
            task.mm.write(tsp, (left // 10**9).to_bytes(8, "little") + (left % 10**9).to_bytes(8, "little"))
            return ret
        except MemoryFault:
            return -E.EINTR if ret == -ERESTARTNOHAND else ret
