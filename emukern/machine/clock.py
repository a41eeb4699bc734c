"""One deterministic clock: cycles are the unit of time everywhere.

A CPU's time is the instructions it retired (one cycle each — emukern models an in-order core with
IPC 1 for user code) plus the cycles the cost model charges for kernel work, plus idle time.
Wall-clock time never enters: the counters a guest can read (RISC-V ``rdcycle``/``rdtime``/
``rdinstret``, arm64 ``CNTVCT_EL0``/``CNTFRQ_EL0``) and the kernel's ``jiffies`` are all derived
from these cycle counts, so two runs of the same inputs see exactly the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    freq_hz: int = 1_000_000_000      # CPU frequency: 1 GHz makes one cycle one nanosecond
    hz: int = 250                     # CONFIG_HZ (Debian's arm64 and riscv64 kernels use 250)
    timer_freq: int = 100_000_000     # CNTFRQ_EL0 / RISC-V timebase-frequency

    def __post_init__(self) -> None:
        if self.freq_hz <= 0 or self.hz <= 0 or self.timer_freq <= 0:
            raise ValueError("clock frequencies must be positive")
        if self.hz > self.freq_hz:
            raise ValueError("HZ cannot exceed the CPU frequency")

    @property
    def tick_cycles(self) -> int:
        """Cycles between two timer ticks (one jiffy)."""
        return max(1, self.freq_hz // self.hz)

    def jiffies(self, cycles: int) -> int:
        return cycles * self.hz // self.freq_hz

    def next_tick(self, cycles: int) -> int:
        """The cycle at which the next tick fires strictly after ``cycles``."""
        t = self.tick_cycles
        return (cycles // t + 1) * t

    def ns(self, cycles: int) -> float:
        return cycles * 1e9 / self.freq_hz

    def seconds(self, cycles: int) -> float:
        return cycles / self.freq_hz

    def timer_count(self, cycles: int) -> int:
        """The architectural timer (CNTVCT_EL0 / rdtime) at this cycle."""
        return cycles * self.timer_freq // self.freq_hz

    def cycles_for_ns(self, ns: int) -> int:
        return -(-ns * self.freq_hz // 1_000_000_000)
