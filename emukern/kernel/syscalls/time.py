"""clock_gettime / clock_getres / gettimeofday / nanosleep / clock_nanosleep
<-> kernel/time/{time.c, posix-timers.c, hrtimer.c}.

Every clock reads the same simulated clock, derived from the CPU's cycle count, so time depends
only on the run; the realtime clocks (CLOCK_REALTIME, its _COARSE and _ALARM forms, CLOCK_TAI)
add the machine's boot instant (``--realtime``, fs/meta.py's ``realtime_ns``), the others
start at 0 at boot.  A sleep is a scheduler timer (``_sleep``); its target is kept on the task for
the remaining time when a signal interrupts it.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.fs.meta import REALTIME_CLOCKS, realtime_ns, realtime_to_cycles
from emukern.kernel.uapi import _s32
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- time ------------------------------------------------------------------------------------
def sys_clock_gettime(k: "Kernel", cpu, task, clk, ts, *a):
    if clk > 11:
        return -E.EINVAL
    ns = realtime_ns(k, cpu.now) if clk in REALTIME_CLOCKS else int(k.clock.ns(cpu.now))
    task.mm.write(ts, (ns // 10**9).to_bytes(8, "little") + (ns % 10**9).to_bytes(8, "little"))
    cpu.charge(k.cost.syscall_body)
    return 0


def _sleep(k: "Kernel", cpu, task, req_ptr, absolute: bool, realtime: bool = False) -> Any:
    if task.woken_value == -E.ETIMEDOUT:        # the timer fired: sleep is over
        task.woken_value = None
        return 0
    req = task.mm.read(req_ptr, 16)
    sec, nsec = int.from_bytes(req[:8], "little", signed=True), int.from_bytes(req[8:], "little", signed=True)
    if sec < 0 or not 0 <= nsec < 10**9:
        return -E.EINVAL
    ns = sec * 10**9 + nsec
    if absolute:                              # a reading of the clock slept on
        target = realtime_to_cycles(k, ns) if realtime else k.clock.cycles_for_ns(ns)
    else:
        target = cpu.now + k.clock.cycles_for_ns(ns)
    if target <= cpu.now:
        return 0
    task.waitqueues = []
    task.sigstate.sleep_target = target       # for the remaining time if a signal interrupts
    k.sched.add_timer(task, target)
    k.sched.block_current(cpu, task, "nanosleep")
    return BLOCK


def sys_nanosleep(k: "Kernel", cpu, task, req, rem, *a):
    return _sleep(k, cpu, task, req, absolute=False)


def sys_clock_nanosleep(k: "Kernel", cpu, task, clk, flags, req, rem, *a):
    return _sleep(k, cpu, task, req, absolute=bool(flags & 1), realtime=_s32(clk) in REALTIME_CLOCKS)


def sys_clock_getres(k: "Kernel", cpu, task, clk, res, *a):
    """posix_get_hrtimer_res: 1 ns for the high-resolution clocks; the *_COARSE clocks tick
    once a jiffy (CLOCK_REALTIME_COARSE = 5, CLOCK_MONOTONIC_COARSE = 6)."""
    clk = _s32(clk)
    if not 0 <= clk <= 11 or clk in (10,):      # 10 is unused in include/uapi/linux/time.h
        return -E.EINVAL
    ns = 10**9 // k.config.hz if clk in (5, 6) else 1
    if res:
        task.mm.write(res, struct.pack("<qq", ns // 10**9, ns % 10**9))
    return 0


def sys_gettimeofday(k: "Kernel", cpu, task, tv, tz, *a):
    """gettimeofday: CLOCK_REALTIME in microseconds (the same clock clock_gettime reads), and
    a zero timezone (sys_tz is all zeros unless settimeofday set it)."""
    ns = realtime_ns(k, cpu.now)
    if tv:
        if task.mm.find(tv) is None:
            return -E.EFAULT
        task.mm.write(tv, (ns // 10**9).to_bytes(8, "little") + (ns % 10**9 // 1000).to_bytes(8, "little"))
    if tz:
        if task.mm.find(tz) is None:
            return -E.EFAULT
        task.mm.write(tz, bytes(8))
    cpu.charge(k.cost.syscall_body)
    return 0
