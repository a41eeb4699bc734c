"""The kselftest reporting protocol: TAP 13 lines on stdout and the ksft exit codes.

kselftest.h prints ``ok N name`` / ``not ok N name [# SKIP reason]`` per test, a plan ``1..N``,
and a closing ``# Totals: pass:P fail:F xfail:X xpass:Y skip:S error:E``; the process exits
with KSFT_PASS (0), KSFT_FAIL (1), KSFT_XFAIL (2), KSFT_XPASS (3) or KSFT_SKIP (4).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

KSFT_EXIT = {0: "pass", 1: "fail", 2: "xfail", 3: "xpass", 4: "skip"}

_RESULT = re.compile(r"^(not ok|ok)\s+(\d+)\s*-?\s*(.*?)\s*(?:#\s*(SKIP|XFAIL|TODO)\b\s*(.*))?$", re.I)
_TOTALS = re.compile(r"^#\s*Totals:\s*pass:(\d+)\s+fail:(\d+)\s+xfail:(\d+)\s+xpass:(\d+)\s+skip:(\d+)\s+error:(\d+)")
_PLAN = re.compile(r"^1\.\.(\d+)")


@dataclass
class Tap:
    plan: int | None = None
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    xfail: int = 0
    error: int = 0
    first_failure: str = ""
    bail_out: str = ""
    totals: bool = False                  # the test printed its own Totals line
    results: list[tuple[str, str]] = field(default_factory=list)   # (verdict, name)

    @property
    def seen(self) -> bool:
        return self.plan is not None or bool(self.results) or self.totals

    def counts(self) -> str:
        return f"{self.passed}/{self.failed}/{self.skipped}"


def parse(text: str) -> Tap:
    t = Tap()
    counted = Tap()
    for raw in text.splitlines():
        line = raw.strip()
        m = _RESULT.match(line)
        if m:
            ok, name, directive = m.group(1).lower() == "ok", m.group(3), (m.group(4) or "").upper()
            if directive == "SKIP":
                counted.skipped += 1
                t.results.append(("skip", name))
            elif directive == "XFAIL":
                counted.xfail += 1
                t.results.append(("xfail", name))
            elif ok:
                counted.passed += 1
                t.results.append(("pass", name))
            else:
                counted.failed += 1
                t.results.append(("fail", name))
                if not t.first_failure:
                    t.first_failure = name
            continue
        m = _TOTALS.match(line)
        if m:
            p, f, xf, _xp, s, e = (int(g) for g in m.groups())
            t.passed, t.failed, t.xfail, t.skipped, t.error, t.totals = p, f, xf, s, e, True
            continue
        m = _PLAN.match(line)
        if m and t.plan is None:
            t.plan = int(m.group(1))
            continue
        if line.startswith("Bail out!") and not t.bail_out:
            t.bail_out = line[len("Bail out!"):].strip() or "Bail out!"
    if not t.totals:
        t.passed, t.failed, t.skipped, t.xfail = counted.passed, counted.failed, counted.skipped, counted.xfail
    return t
