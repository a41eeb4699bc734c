"""Alternating runs and their statistics for ``emukern bench`` (issue 19, "Honest benchmark").

The machine drifts (on a shared 2-core box raw Unicorn alone swings from 350 to 1000 MIPS between
runs), so one sample of emukern against one sample of its baseline says more about the machine
than about the code.  Here every contender of a figure runs once per *round*, the rounds repeat
(>= 5 by default), and a ratio is taken inside each round — emukern's sample against the baseline
sample taken right beside it — before the median is taken: the median of pairwise ratios, not the
ratio of medians, is the headline figure.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Sequence


class Unavailable(Exception):
    """A contender that cannot run here (not installed, failed): it gives no figure, only this note."""


def unavailable(why: str) -> Callable[[], float]:
    """A contender's sample function that only says why it cannot run here."""
    def run() -> float:
        raise Unavailable(why)
    return run


def summary(xs: Sequence[float]) -> dict[str, Any]:
    """min / median / max of the samples, and the samples themselves (JSON-ready)."""
    if not xs:
        return {"n": 0, "min": None, "median": None, "max": None, "samples": []}
    return {"n": len(xs), "min": min(xs), "median": statistics.median(xs), "max": max(xs),
            "samples": list(xs)}


def pairwise_ratios(subject: Sequence[float], baseline: Sequence[float]) -> list[float]:
    """subject[i] / baseline[i] for each round i both ran in (same round = same machine state)."""
    return [s / b for s, b in zip(subject, baseline) if b]


def alternate(runners: dict[str, Callable[[], float]], rounds: int,
              on_sample: Callable[[str, int], None] | None = None) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Run every runner once per round for ``rounds`` rounds, the order rotated by one each round
    (so no contender always runs first, right after the previous figure's warm caches).

    Returns (samples per runner, note per runner that raised :class:`Unavailable`); an unavailable
    runner is dropped from the remaining rounds and keeps no samples — a time for a run that did not
    do the work is no figure.
    """
    names = list(runners)
    samples: dict[str, list[float]] = {n: [] for n in names}
    notes: dict[str, str] = {}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)] if names else []
        for name in order:
            if name in notes:
                continue
            try:
                samples[name].append(float(runners[name]()))
            except Unavailable as exc:
                notes[name] = str(exc)
                samples[name] = []
            if on_sample is not None:
                on_sample(name, r)
    return samples, notes


@dataclass(frozen=True)
class Target:
    """A figure's target from issue 19: ``op`` is ">=" or "<="; ``on`` is "ratio" (the median
    pairwise ratio against ``against``) or "value" (emukern's own median)."""
    op: str
    value: float
    on: str = "ratio"
    against: str | None = None

    def met(self, x: float | None) -> bool | None:
        if x is None:
            return None
        return x >= self.value if self.op == ">=" else x <= self.value

    def text(self, unit: str) -> str:
        if self.on == "ratio":
            return f"ratio {self.op} {self.value:g}× {self.against}"
        return f"{self.op} {self.value:g} {unit}"


def figure(name: str, unit: str, subject: str, samples: dict[str, list[float]], notes: dict[str, str],
           target: Target | None = None, higher_is_better: bool = False, **extra: Any) -> dict[str, Any]:
    """One figure's JSON record: every contender's summary, the pairwise ratios of ``subject``
    against each other contender, and the target's verdict."""
    subj = samples.get(subject, [])
    contenders: dict[str, Any] = {}
    for who, xs in samples.items():
        d: dict[str, Any] = {**summary(xs), "note": notes.get(who, "ok")}
        if who != subject and xs and subj:
            d["ratio"] = summary(pairwise_ratios(subj, xs))
        contenders[who] = d
    value: float | None = None
    if target is not None:
        if target.on == "ratio":
            r = contenders.get(target.against or "", {}).get("ratio")
            value = r["median"] if r else None
        else:
            value = contenders[subject]["median"] if subject in contenders else None
    return {"figure": name, "unit": unit, "subject": subject, "higher_is_better": higher_is_better,
            "contenders": contenders,
            "target": None if target is None else {"op": target.op, "value": target.value, "on": target.on,
                                                   "against": target.against, "text": target.text(unit)},
            "target_value": value, "met": None if target is None else target.met(value), **extra}
