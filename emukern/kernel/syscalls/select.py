"""pselect6 / ppoll <-> fs/select.c.

``sys_pselect6`` and ``sys_ppoll`` check their arguments in Linux's order, apply the temporary
signal mask, report the ready descriptors from each file's poll mask, and otherwise sleep on the
files' wait queues until one changes, the timeout passes or a signal arrives (ERESTARTNOHAND).
The shared finishing step is kernel/signal/syscalls.py's ``_select_finish``; the poll masks and
limits are in kernel/select.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import syscalls as signal_syscalls
from emukern.kernel.signal.defs import (
    ERESTARTNOHAND,
    POLLERR,
    POLLHUP,
    POLLIN,
    POLLNVAL,
    POLLOUT,
    POLLRDNORM,
    POLLWRNORM,
)
from emukern.kernel.signal.syscalls import _select_finish
from emukern.kernel.sysret import BLOCK
from emukern.kernel.fs.poll import _queues, file_poll

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# poll's event bits as select maps them (fs/select.c POLLIN_SET, ...)
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


def sys_pselect6(k: "Kernel", cpu, task, n, inp, outp, exp, tsp, sig, *a):
    """do_pselect + core_sys_select: the {sigset, size} argument pack (EFAULT), the
    timeout (EINVAL), the sigmask (EINVAL for a size other than 8), n (EINVAL when
    negative, clipped to the descriptor table's size), the three sets (EFAULT); EBADF for
    a set bit naming a closed descriptor (max_select_fd).  Ready bits are counted one per
    set (an fd both readable and writable counts twice); a timeout returns 0 with the
    sets cleared; the remaining time is written back to the timespec (not for a zero
    timeout, as poll_select_finish)."""
    st = signal_base._sig_init(k, task)
    again = st.in_wait == "pselect6"
    st.in_wait = ""
    timed_out = False
    if again:
        timed_out = k.sched.finish_wait(task)
        target = st.poll_deadline
    else:
        ss = ss_len = 0
        if sig:
            try:
                raw = task.mm.read(sig, 16)
            except MemoryFault:           # a bad user pointer
                return -E.EFAULT
            ss, ss_len = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
        try:
            err, target = signal_syscalls.poll_select_begin(k, cpu, task, tsp, ss, ss_len)
        except MemoryFault:           # a bad user pointer
            signal_syscalls._ppoll_restore_mask(k, task)
            return -E.EFAULT
        if err:
            return err
        st.pselect_zero = target is not None and target == cpu.now
    st.poll_deadline = None
    n &= 0xFFFFFFFF
    n = n - (1 << 32) if n >> 31 else n            # int n
    if n < 0:
        return _select_finish(k, cpu, task, tsp, target, -E.EINVAL)
    n = min(n, _max_fds(task.files))
    nbytes = (n + 63) // 64 * 8
    sets = []
    for ptr in (inp, outp, exp):
        if not ptr or not nbytes:
            sets.append(0)
            continue
        try:
            sets.append(int.from_bytes(task.mm.read(ptr, nbytes), "little"))
        except MemoryFault:           # a bad user pointer
            return _select_finish(k, cpu, task, tsp, target, -E.EFAULT)
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
            return _select_finish(k, cpu, task, tsp, target, -E.EBADF)
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
    cpu.charge(k.cost.syscall_body)             # do_select's pass over the sets takes time
    expired = timed_out or (target is not None and target <= cpu.now)
    if not ready and not expired:
        if task.sigpending:
            return _select_finish(k, cpu, task, tsp, target, -ERESTARTNOHAND)
        signal_syscalls.poll_select_sleep(k, cpu, task, queues, target, "pselect6")
        return BLOCK
    for ptr, val in zip((inp, outp, exp), res):
        if ptr and nbytes:
            try:
                task.mm.write(ptr, val.to_bytes(nbytes, "little"))
            except MemoryFault:           # a bad user pointer
                return _select_finish(k, cpu, task, tsp, target, -E.EFAULT)
    return _select_finish(k, cpu, task, tsp, target, ready)




def sys_ppoll(k: "Kernel", cpu, task, ufds, nfds, tmo, sigmask_ptr, sigsetsize, *a):
    """ppoll (glibc's poll() and pause() too) — fs/select.c do_sys_poll: each pollfd's
    revents from the file's poll mask (POLLNVAL for a closed descriptor, a regular file is
    always ready); when none is ready, sleep on the files' wait queues until one changes,
    the timeout (fixed on the first pass) or a signal.  A signal ends it with
    -ERESTARTNOHAND: EINTR once a handler ran, whatever SA_RESTART says, and a transparent
    restart otherwise.  The temporary sigmask is swapped in for the wait; it stays while a
    handler's frame saves the original (restore_saved_sigmask_unless)."""
    st = signal_base._sig_init(k, task)
    again = st.in_wait == "ppoll"
    st.in_wait = ""
    timed_out = False
    if again:                               # woken: by a file, the timer or (not) a signal
        timed_out = k.sched.finish_wait(task)
        target = st.poll_deadline
    else:
        if nfds > 1024:                     # RLIMIT_NOFILE
            return -E.EINVAL
        err, target = signal_syscalls.poll_select_begin(k, cpu, task, tmo, sigmask_ptr, sigsetsize)
        if err:
            return err
    st.poll_deadline = None
    queues: list = []
    ready = 0
    if nfds:
        try:
            raw = bytearray(task.mm.read(ufds, 8 * nfds))
        except MemoryFault:           # a bad user pointer
            signal_syscalls._ppoll_restore_mask(k, task)
            return -E.EFAULT
        for i in range(nfds):
            fd = int.from_bytes(raw[8 * i:8 * i + 4], "little", signed=True)
            events = int.from_bytes(raw[8 * i + 4:8 * i + 6], "little")
            rev = 0
            if fd >= 0:
                f = task.files.get(fd) if task.files is not None else None
                if f is None:
                    rev = POLLNVAL
                else:
                    mask = file_poll(f)
                    if mask is None:        # no ->poll: DEFAULT_POLLMASK
                        mask = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM
                    rev = mask & (events | POLLERR | POLLHUP)
                    queues += _queues(f)
            raw[8 * i + 6:8 * i + 8] = rev.to_bytes(2, "little")
            ready += bool(rev)
    expired = timed_out or (target is not None and target <= cpu.now)
    if ready or expired:
        if nfds:
            task.mm.write(ufds, bytes(raw))
        signal_syscalls._ppoll_restore_mask(k, task)
        return ready
    if task.sigpending:
        return -ERESTARTNOHAND
    signal_syscalls.poll_select_sleep(k, cpu, task, queues, target, "ppoll")
    return BLOCK
