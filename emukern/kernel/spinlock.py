"""Spinlocks across simulated CPUs, in simulated time.

A CPU that finds the lock held spins until the holder releases it; the wait is charged to the
waiting CPU in cycles, and every hand-off of the lock's cache line to a different CPU costs a
cache-line transfer.  Nothing here is a formula for contention: CPUs arrive at the lock at the
times their own instruction streams and kernel work put them there, and the lock is a resource
with a "free at" time and an owner history.  Statistics follow /proc/lock_stat's spirit:
acquisitions, contended acquisitions, cycles spent spinning.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SpinLock:
    name: str
    free_at: int = 0              # cycle at which the current/last holder releases it
    last_cpu: int | None = None   # the CPU whose cache holds the line
    acquisitions: int = 0
    contended: int = 0
    spin_cycles: int = 0
    transfers: int = 0
    hold_cycles: int = 0

    def acquire(self, cpu: int, now: int, *, lock_cost: int, transfer_cost: int, poll_cost: int) -> int:
        """Take the lock on ``cpu`` at local time ``now``; return the cycle the CPU holds it.

        If the lock is still held at ``now`` the CPU spins (in ``poll_cost`` steps) until the
        release, then pays a cache-line transfer to pull the line from the releasing CPU.
        """
        self.acquisitions += 1
        t = now
        if self.free_at > now:
            self.contended += 1
            wait = self.free_at - now
            polls = -(-wait // poll_cost) if poll_cost else 0
            wait = max(wait, polls * poll_cost)
            self.spin_cycles += wait
            t = now + wait
        if self.last_cpu is not None and self.last_cpu != cpu:
            self.transfers += 1
            t += transfer_cost
        t += lock_cost
        self.last_cpu = cpu
        self.free_at = 1 << 62          # held: released by release()
        return t

    def release(self, now: int, *, unlock_cost: int, held_since: int) -> int:
        t = now + unlock_cost
        self.free_at = t
        self.hold_cycles += t - held_since
        return t

    def stats(self) -> dict[str, int | str]:
        return {"lock": self.name, "acquisitions": self.acquisitions, "contended": self.contended,
                "spin_cycles": self.spin_cycles, "transfers": self.transfers, "hold_cycles": self.hold_cycles}
