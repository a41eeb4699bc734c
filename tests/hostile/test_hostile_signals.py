"""Issue 33 item 13: SS_AUTODISARM and user-made siginfo, as Linux's kernel/signal.c.

- An SS_AUTODISARM alternate stack is disarmed while the handler runs (sigaltstack reports
  SS_DISABLE inside it), the frame's uc_stack keeps the flags as set, and rt_sigreturn restores
  the stack from it, so the next signal is on the alternate stack again.
- rt_sigqueueinfo/rt_tgsigqueueinfo: any si_code is allowed when the target is the caller
  itself; to another task si_code >= 0 or SI_TKILL is EPERM.  The receiver sees the sender's
  siginfo as written (si_pid, si_value), with the signal number of the call.
(qemu-user has no SS_AUTODISARM and rewrites siginfo by its layout, so this is Linux's answer,
read from do_sigaltstack/__save_altstack/signal_delivered and do_rt_[tg]sigqueueinfo.)"""
from __future__ import annotations

import pytest

from emukern.api import Machine

ARCHES = ("riscv64", "arm64")
EXPECTED = """\
set=0
round0=onalt:1 inside:0x2 frame:0x80000000 after:0x80000000 size_ok:1
round1=onalt:1 inside:0x2 frame:0x80000000 after:0x80000000 size_ok:1
self_si_user=0 code=0 pid=4242 val=100
self_si_queue=0 code=-1 pid=4242 val=101
self_si_tkill=0 code=-6 pid=4242 val=102
self_si_kernel=0 code=128 pid=4242 val=103
self_minus1=0 code=-1 pid=4242 val=104
self_sig0=0
self_sig65=-22
bad_ptr=-14
other_si_user=-1
other_si_tkill=-1
other_si_queue=0
other_tg_si_user=-1
tg_self=0 code=-1 pid=4242 val=77
tg_self_si_user=0 code=0 val=78
tg_zero_tid=-22
tg_wrong_tgid=-3
tg_bad_sig=-22
hits=9
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_autodisarm_and_queued_siginfo_as_linux(cprog, arch):
    m = Machine()
    m.load(cprog("sig_queue", arch))
    r = m.run()
    assert r.exit_code == 0, r.message
    assert r.stdout.decode() == EXPECTED
