"""pselect6 <-> fs/select.c (core_sys_select, do_select, poll_select_finish).

glibc's select() and pselect() are pselect6 on arm64 and riscv64.  The waiting itself is
ppoll's (kernel/signal/syscalls.py: poll_select_begin / poll_select_sleep): the same timeout
and temporary-sigmask rules, the same sleep on every polled file's wait queue, and a signal
ends it with -ERESTARTNOHAND (syscall_interrupted), as Linux's do_select does.
"""
from __future__ import annotations

from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.sysret import BLOCK

SELECT_SYSCALL_NAMES = {72: "pselect6"}

ERESTARTNOHAND = 514
_IN, _PRI, _OUT, _ERR, _HUP = 0x1, 0x2, 0x4, 0x8, 0x10
_RDNORM, _RDBAND, _WRNORM, _WRBAND = 0x40, 0x80, 0x100, 0x200
POLLIN_SET = _RDNORM | _RDBAND | _IN | _HUP | _ERR
POLLOUT_SET = _WRBAND | _WRNORM | _OUT | _ERR
POLLEX_SET = _PRI
DEFAULT_POLLMASK = _IN | _OUT | _RDNORM | _WRNORM


def _max_fds(files: Any) -> int:
    """fdt->max_fds, what core_sys_select clips n to: the table starts with NR_OPEN_DEFAULT
    (64) slots and grows by alloc_fdtable's rule (at least 256, a power of two) once a
    descriptor at or above 64 is installed.  (emukern's table does not keep its high-water
    mark, so the size follows the highest descriptor open now.)"""
    top = max(files.fds, default=0) if files is not None else 0
    if top < 64:
        return 64
    n = 256
    while n <= top:
        n *= 2
    return n


class SelectMixin:
    """pselect6; mixed into the kernel."""

    cost: Any
    clock: Any
    sched: Any

    def sys_pselect6(self, cpu, task, n, inp, outp, exp, tsp, sig, *a):
        """do_pselect + core_sys_select: the {sigset, size} argument pack (EFAULT), the
        timeout (EINVAL), the sigmask (EINVAL for a size other than 8), n (EINVAL when
        negative, clipped to the descriptor table's size), the three sets (EFAULT); EBADF for
        a set bit naming a closed descriptor (max_select_fd).  Ready bits are counted one per
        set (an fd both readable and writable counts twice); a timeout returns 0 with the
        sets cleared; the remaining time is written back to the timespec (not for a zero
        timeout, as poll_select_finish)."""
        from emukern.kernel.epoll import _queues, file_poll
        st = self._sig_init(task)
        again = st.in_wait == "pselect6"
        st.in_wait = ""
        timed_out = False
        if again:
            timed_out = self.sched.finish_wait(task)
            target = st.poll_deadline
        else:
            ss = ss_len = 0
            if sig:
                try:
                    raw = task.mm.read(sig, 16)
                except Exception:
                    return -E.EFAULT
                ss, ss_len = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
            try:
                err, target = self.poll_select_begin(cpu, task, tsp, ss, ss_len)
            except Exception:
                self._ppoll_restore_mask(task)
                return -E.EFAULT
            if err:
                return err
            st.pselect_zero = target is not None and target == cpu.now
        st.poll_deadline = None
        n &= 0xFFFFFFFF
        n = n - (1 << 32) if n >> 31 else n            # int n
        if n < 0:
            return self._select_finish(cpu, task, tsp, target, -E.EINVAL)
        n = min(n, _max_fds(task.files))
        nbytes = (n + 63) // 64 * 8
        sets = []
        for ptr in (inp, outp, exp):
            if not ptr or not nbytes:
                sets.append(0)
                continue
            try:
                sets.append(int.from_bytes(task.mm.read(ptr, nbytes), "little"))
            except Exception:
                return self._select_finish(cpu, task, tsp, target, -E.EFAULT)
        want = (sets[0] | sets[1] | sets[2]) & ((1 << n) - 1)
        res = [0, 0, 0]
        ready = 0
        queues: list = []
        fd = 0
        while want >> fd:
            if not (want >> fd) & 1:
                fd += 1
                continue
            f = task.files.get(fd) if task.files is not None else None
            if f is None:
                return self._select_finish(cpu, task, tsp, target, -E.EBADF)
            mask = file_poll(f)
            if mask is None:                           # no ->poll: always ready
                mask = DEFAULT_POLLMASK
            bit = 1 << fd
            for i, pset in enumerate((POLLIN_SET, POLLOUT_SET, POLLEX_SET)):
                if sets[i] & bit and mask & pset:
                    res[i] |= bit
                    ready += 1
            queues += _queues(f)
            fd += 1
        cpu.charge(self.cost.syscall_body)             # do_select's pass over the sets takes time
        expired = timed_out or (target is not None and target <= cpu.now)
        if not ready and not expired:
            if task.sigpending:
                return self._select_finish(cpu, task, tsp, target, -ERESTARTNOHAND)
            self.poll_select_sleep(cpu, task, queues, target, "pselect6")
            return BLOCK
        for ptr, val in zip((inp, outp, exp), res):
            if ptr and nbytes:
                try:
                    task.mm.write(ptr, val.to_bytes(nbytes, "little"))
                except Exception:
                    return self._select_finish(cpu, task, tsp, target, -E.EFAULT)
        return self._select_finish(cpu, task, tsp, target, ready)

    def _select_finish(self, cpu, task, tsp: int, target: Any, ret: int) -> int:
        """poll_select_finish: the caller's mask back (unless a handler is to run first), the
        time left written to the timespec; if that write faults a restart is impossible, so
        -ERESTARTNOHAND becomes -EINTR."""
        if ret != -ERESTARTNOHAND:
            self._ppoll_restore_mask(task)
        st = task.sigstate
        if not tsp or target is None or getattr(st, "pselect_zero", False):
            return ret
        left = max(0, int(self.clock.ns(target) - self.clock.ns(cpu.now)))
        try:
            task.mm.write(tsp, (left // 10**9).to_bytes(8, "little") + (left % 10**9).to_bytes(8, "little"))
        except Exception:
            if ret == -ERESTARTNOHAND:
                ret = -E.EINTR
        return ret

    def pselect_interrupted(self, cpu, task, args: tuple) -> int:
        """A signal woke a pselect6 sleeper (syscall_interrupted): off its queues, the time
        left written back, -ERESTARTNOHAND (EINTR once a handler runs)."""
        st = task.sigstate
        st.in_wait = ""
        self.sched.finish_wait(task)
        target, st.poll_deadline = st.poll_deadline, None
        return self._select_finish(cpu, task, args[4], target, -ERESTARTNOHAND)
