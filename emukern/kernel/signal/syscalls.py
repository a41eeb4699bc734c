"""The signal syscalls of dispositions and masks — rt_sigaction, rt_sigprocmask, rt_sigpending,
rt_sigsuspend, rt_sigtimedwait, ppoll's signal side, sigaltstack (kernel/signal.c, fs/select.c)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from emukern.kernel import errno as E
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403
from emukern.kernel.signal.base import SignalBase
from emukern.kernel.task import Task, TaskState      # noqa: F401

# the uc_stack __save_altstack writes for a thread without an alternate stack: ss_sp 0,
# ss_flags SS_DISABLE, ss_size 0
_NO_ALTSTACK = (0).to_bytes(8, "little") + SS_DISABLE.to_bytes(4, "little") + bytes(12)

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap


class SignalSyscalls(SignalBase):
    """do_sigaction, sigprocmask, the waits and the alternate stack."""

    # ---- syscalls: dispositions and masks -----------------------------------------------------


    def sys_rt_sigaction(self, cpu, task, sig, act, oldact, sigsetsize, *a):
        sig = s32(sig)
        """do_sigaction: SIGKILL/SIGSTOP cannot be caught or ignored; setting SIG_IGN (or SIG_DFL
        of an ignored signal) discards it from every pending set of the process."""
        self._sig_init(task)
        cpu.charge(self.cost.syscall_body)
        if sigsetsize != 8:
            return -E.EINVAL
        if not 1 <= sig <= NSIG or (act and sigmask(sig) & SIG_KERNEL_ONLY):
            return -E.EINVAL
        restorer = self.config.arch == "arm64"
        size = 32 if restorer else 24
        new = None
        if act:
            raw = task.mm.read(act, size)
            h, flags = int.from_bytes(raw[0:8], "little"), int.from_bytes(raw[8:16], "little")
            rest = int.from_bytes(raw[16:24], "little") if restorer else 0
            mask = int.from_bytes(raw[size - 8:size], "little")
            # unknown flag bits are cleared (SA_UNSUPPORTED lets a program detect that)
            known = (SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER
                     | SA_RESETHAND | SA_EXPOSE_TAGBITS | (SA_RESTORER if restorer else 0))
            new = SigAction(h, flags & known & 0xFFFFFFFF, rest, mask & ~SIG_KERNEL_ONLY)
        ka = task.sighand.action[sig]
        if oldact:
            out = ka.handler.to_bytes(8, "little") + ka.flags.to_bytes(8, "little")
            if restorer:
                out += ka.restorer.to_bytes(8, "little")
            task.mm.write(oldact, out + ka.mask.to_bytes(8, "little"))
        if new is not None:
            task.sighand.action[sig] = new
            if new.handler == SIG_IGN or (new.handler == SIG_DFL and sigmask(sig) & SIG_KERNEL_IGNORE):
                task.signal.shared_pending.flush(sigmask(sig))
                for t in self._threads(task):
                    t.sigstate.pending.flush(sigmask(sig))
                    self.recalc_sigpending(t)
        return 0

    def set_current_blocked(self, task: Task, mask: int) -> None:
        task.sigstate.blocked = mask & ~SIG_KERNEL_ONLY & ALL_SIGS
        self.recalc_sigpending(task)

    def sys_rt_sigprocmask(self, cpu, task, how, nset, oset, sigsetsize, *a):
        st = self._sig_init(task)
        cpu.charge(self.cost.syscall_body)
        how = s32(how)
        if sigsetsize != 8:
            return -E.EINVAL
        old = st.blocked
        if nset:
            m = task.mm.read_u64(nset)
            if how == SIG_BLOCK:
                new = old | m
            elif how == SIG_UNBLOCK:
                new = old & ~m
            elif how == SIG_SETMASK:
                new = m
            else:
                return -E.EINVAL
        if oset:
            task.mm.write_u64(oset, old)
        if nset:
            self.set_current_blocked(task, new)
        return 0

    def sys_rt_sigpending(self, cpu, task, uset, sigsetsize, *a):
        st = self._sig_init(task)
        if sigsetsize > 8:
            return -E.EINVAL
        pend = (st.pending.signal | task.signal.shared_pending.signal) & st.blocked
        task.mm.write(uset, pend.to_bytes(8, "little")[:sigsetsize])
        return 0

    def sys_rt_sigsuspend(self, cpu, task, unewset, sigsetsize, *a):
        """Wait with a temporary mask; always -EINTR once a handler ran (ERESTARTNOHAND); the
        old mask comes back when the handler's frame has saved it (saved_sigmask)."""
        from emukern.kernel.sysret import BLOCK
        st = self._sig_init(task)
        if st.in_wait == "sigsuspend":
            if task.sigpending:
                st.in_wait = ""
                return -ERESTARTNOHAND
            self.block_current(cpu, task, "rt_sigsuspend")
            return BLOCK
        if sigsetsize != 8:
            return -E.EINVAL
        m = task.mm.read_u64(unewset)
        st.saved_sigmask = st.blocked
        self.set_current_blocked(task, m)
        if task.sigpending:
            return -ERESTARTNOHAND
        st.in_wait = "sigsuspend"
        task.waitqueues = []
        self.block_current(cpu, task, "rt_sigsuspend")
        return BLOCK

    def sys_rt_sigtimedwait(self, cpu, task, uthese, uinfo, uts, sigsetsize, *a):
        """Take a signal of the set synchronously: its number (and siginfo), -EAGAIN on
        timeout, -EINTR when another signal's handler interrupts the wait."""
        from emukern.kernel.sysret import BLOCK
        st = self._sig_init(task)
        if st.in_wait == "sigtimedwait":
            timed_out = task.woken_value == -E.ETIMEDOUT
            task.woken_value = None
            these = st.wait_set
            st.blocked = st.wait_real_blocked
            st.in_wait = ""
            info = self.dequeue_signal(task, ~these & ALL_SIGS)
            self.recalc_sigpending(task)
            if info is not None:
                return self._sigwait_done(task, info, uinfo)
            if timed_out:
                return -E.EAGAIN
            if task.sigpending:
                return -E.EINTR
            # spurious wake-up: wait again
        if sigsetsize != 8:
            return -E.EINVAL
        these = task.mm.read_u64(uthese) & ~SIG_KERNEL_ONLY
        info = self.dequeue_signal(task, ~these & ALL_SIGS)
        self.recalc_sigpending(task)
        if info is not None:
            return self._sigwait_done(task, info, uinfo)
        target = None
        if uts:
            raw = task.mm.read(uts, 16)
            sec, nsec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
            if sec < 0 or not 0 <= nsec < 10**9:
                return -E.EINVAL
            if sec == 0 and nsec == 0:
                return -E.EAGAIN
            target = cpu.now + self.clock.cycles_for_ns(sec * 10**9 + nsec)
        st.wait_set = these
        st.wait_real_blocked = st.blocked
        st.blocked = st.blocked & ~these
        self.recalc_sigpending(task)
        st.in_wait = "sigtimedwait"
        task.waitqueues = []
        if target is not None:
            self.add_timer(task, target)
        self.block_current(cpu, task, "rt_sigtimedwait")
        return BLOCK

    def _sigwait_done(self, task: Task, info: KSigInfo, uinfo: int) -> int:
        if uinfo:
            task.mm.write(uinfo, info.to_bytes())
        return info.signo

    def sys_ppoll(self, cpu, task, ufds, nfds, tmo, sigmask_ptr, sigsetsize, *a):
        """ppoll (glibc's poll() and pause() too) — fs/select.c do_sys_poll: each pollfd's
        revents from the file's poll mask (POLLNVAL for a closed descriptor, a regular file is
        always ready); when none is ready, sleep on the files' wait queues until one changes,
        the timeout (fixed on the first pass) or a signal.  A signal ends it with
        -ERESTARTNOHAND: EINTR once a handler ran, whatever SA_RESTART says, and a transparent
        restart otherwise.  The temporary sigmask is swapped in for the wait; it stays while a
        handler's frame saves the original (restore_saved_sigmask_unless)."""
        from emukern.kernel.epoll import _queues, file_poll
        from emukern.kernel.sysret import BLOCK
        st = self._sig_init(task)
        again = st.in_wait == "ppoll"
        st.in_wait = ""
        timed_out = False
        if again:                               # woken: by a file, the timer or (not) a signal
            timed_out = self.sched.finish_wait(task)
            target = st.poll_deadline
        else:
            if nfds > 1024:                     # RLIMIT_NOFILE
                return -E.EINVAL
            err, target = self.poll_select_begin(cpu, task, tmo, sigmask_ptr, sigsetsize)
            if err:
                return err
        st.poll_deadline = None
        queues: list = []
        ready = 0
        if nfds:
            try:
                raw = bytearray(task.mm.read(ufds, 8 * nfds))
            except Exception:
                self._ppoll_restore_mask(task)
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
            self._ppoll_restore_mask(task)
            return ready
        if task.sigpending:
            return -ERESTARTNOHAND
        self.poll_select_sleep(cpu, task, queues, target, "ppoll")
        return BLOCK

    def poll_select_begin(self, cpu, task: Task, tmo: int, sigmask_ptr: int, sigsetsize: int) -> tuple[int, Any]:
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
            target = cpu.now + self.clock.cycles_for_ns(sec * 10**9 + nsec)
        if sigmask_ptr:
            if sigsetsize != 8:
                return -E.EINVAL, None
            st.saved_sigmask = st.blocked
            self.set_current_blocked(task, task.mm.read_u64(sigmask_ptr))
        return 0, target

    def poll_select_sleep(self, cpu, task: Task, queues: list, target: Any, name: str) -> None:
        """Nothing ready: sleep on every polled file's wait queue and, with a timeout, on a
        timer; ``name`` (the syscall) marks the wait so the re-run knows it is a wake-up."""
        st = task.sigstate
        st.in_wait = name
        for wq in queues:
            wq.add(task)
        task.waitqueues = queues
        if target is not None:
            st.poll_deadline = target
            self.add_timer(task, target)
        self.block_current(cpu, task, name)

    def _ppoll_restore_mask(self, task: Task) -> None:
        """ppoll returns without a signal to handle: the caller's mask comes back at once."""
        st = task.sigstate
        if st.saved_sigmask is not None:
            st.blocked, st.saved_sigmask = st.saved_sigmask, None
            self.recalc_sigpending(task)

    def sys_sigaltstack(self, cpu, task, uss, uoss, *a):
        return self.do_sigaltstack(cpu, task, uss, uoss, self._user_sp(cpu))

    def _user_sp(self, cpu: "Cpu") -> int:
        return cpu.reg(2) if self.config.arch == "riscv64" else cast(Any, cpu).sp

    def min_sigstksz(self) -> int:
        return 5120 if self.config.arch == "arm64" else 2048    # MINSIGSTKSZ of each uapi

    def do_sigaltstack(self, cpu, task, uss, uoss, sp) -> int:
        st = self._sig_init(task)
        old = (st.sas_ss_sp, sas_ss_flags(st, sp) | (st.sas_ss_flags & SS_AUTODISARM), st.sas_ss_size)
        if uss:
            err = self._set_altstack(st, task.mm.read(uss, 24), sp)
            if err:
                return err
        if uoss:
            task.mm.write(uoss, old[0].to_bytes(8, "little") + old[1].to_bytes(4, "little")
                          + bytes(4) + old[2].to_bytes(8, "little"))
        return 0

    def _set_altstack(self, st: TaskSig, raw: bytes, sp: int) -> int:
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
        elif ss_size < self.min_sigstksz():
            return -E.ENOMEM
        st.sas_ss_sp, st.sas_ss_size = ss_sp, ss_size
        st.sas_ss_flags = ss_flags if mode != SS_DISABLE else SS_DISABLE
        return 0

    def save_altstack(self, task: Task, sp: int) -> bytes:
        """__save_altstack: the stack_t in the frame's uc_stack."""
        st = task.sigstate
        return (st.sas_ss_sp.to_bytes(8, "little") + sas_ss_flags(st, sp).to_bytes(4, "little")
                + bytes(4) + st.sas_ss_size.to_bytes(8, "little"))

    def restore_altstack(self, cpu, task, uss: int, sp: int) -> bool:
        """restore_altstack: only a fault makes rt_sigreturn fail (EPERM on the stack is fine)."""
        try:
            return self.do_sigaltstack(cpu, task, uss, 0, sp) != -E.EFAULT
        except Exception:
            return False

    def restore_altstack_raw(self, cpu, task, raw: bytes, sp: int) -> bool:
        """restore_altstack from the uc_stack bytes of a frame already copied in (rt_sigreturn's
        one read of the frame): the same rules, and no fault is possible any more."""
        st = task.sigstate if task.sighand is not None else self._sig_init(task)
        if raw == _NO_ALTSTACK and not st.sas_ss_size and not st.sas_ss_sp and st.sas_ss_flags == SS_DISABLE:
            return True     # no alternate stack before or after: _set_altstack would change nothing
        self._set_altstack(st, raw, sp)
        return True
