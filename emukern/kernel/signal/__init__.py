"""Signals as Linux delivers them — mirrors kernel/signal.c, kernel/time/itimer.c and the generic
half of the entry code (``exit_to_user_mode_loop`` -> ``arch_do_signal_or_restart``).

Mixed into :class:`emukern.kernel.kernel.Kernel` as :class:`SignalMixin`, assembled from one
module per concern: ``defs`` (the uapi numbers, default actions), ``state`` (the structures),
``generate`` (send, kill, SIGCHLD), ``delivery`` (do_signal, handle_signal, rt_sigreturn,
ERESTART*), ``jobctl`` (group stop/continue), ``syscalls`` (sigaction, masks, waits,
sigaltstack), ``timers`` (itimers, POSIX timers).  Every public name stays importable from
``emukern.kernel.signal``.  The state follows Linux's split:

* ``task.sighand`` (:class:`SigHand`, ``struct sighand_struct``): the 64 actions, shared by the
  threads of a process (CLONE_SIGHAND);
* ``task.signal`` (:class:`SignalStruct`, ``struct signal_struct``): the process-wide pending set
  (kill, group signals), the process group and session, the interval timers;
* ``task.sigstate`` (:class:`TaskSig`): what ``task_struct`` keeps per thread — ``blocked``,
  the thread's own pending set (tkill, faults), ``saved_sigmask``, the alternate stack.
* ``task.sigpending`` is TIF_SIGPENDING: set by :meth:`recalc_sigpending` when an unblocked
  signal is pending; the return-to-user path tests only this flag.

Generation (``send_signal``) queues a signal and wakes a thread that does not block it
(``complete_signal`` -> ``signal_wake_up``): a thread sleeping interruptibly is woken and its
syscall ends with an ERESTART* code; a thread running on another CPU is asked to reschedule,
the way Linux kicks it with an IPI.  Delivery happens on the way back to user mode:
:meth:`do_signal` (``arch_do_signal_or_restart`` + ``get_signal``) takes the default action
or calls the arch's ``setup_rt_frame`` (kernel/arch/riscv/signal.py, kernel/arch/arm64/signal.py), which
saves the FP/vector/SVE state by the arch's rules; ``rt_sigreturn`` restores it.
"""
from __future__ import annotations

from emukern.kernel.signal.defs import *            # noqa: F401,F403
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403
from emukern.kernel.signal.state import _PosixTimerEvent, _RealTimer, _SignalKind   # noqa: F401








