"""The expected-results table (``expected.toml``, one data file) and how an outcome is judged.

Each test has a default expectation, and optionally ``[[<test>.when]]`` entries for the
configurations whose kernel differs on purpose (a test written for the patched kernel, run under a
policy that models the kernel before the patch): those say "expected under this policy" and why.
An outcome that differs from its expectation is *unexpected* — also a pass where a failure was
expected, so the table is updated when the missing piece lands.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emukern.errors import ConfigError

EXPECTED_FILE = Path(__file__).with_name("expected.toml")
VERDICTS = ("pass", "fail", "skip", "timeout", "not built")


@dataclass(frozen=True)
class Expectation:
    verdict: str
    reason: str = ""
    under_policy: bool = False        # comes from a [[when]] entry: the policy (or the VL) explains it
    under: str = "policy"             # what the [[when]] names: "policy" or "configuration" (a VL only)


class ExpectedTable:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        for tid, entry in data.items():
            for e in [entry, *entry.get("when", [])]:
                v = e.get("verdict")
                if v not in VERDICTS:
                    raise ConfigError(f"expected.toml: {tid}: verdict {v!r} is not one of {VERDICTS}")

    @classmethod
    def load(cls, path: Path | None = None) -> "ExpectedTable":
        p = path or EXPECTED_FILE
        try:
            return cls(tomllib.loads(p.read_text()))
        except OSError as exc:
            raise ConfigError(f"cannot read {p}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p} is not valid TOML: {exc}") from None

    def lookup(self, test_id: str, policies: dict[str, str], vl: int | None) -> Expectation | None:
        entry = self.data.get(test_id)
        if entry is None:
            return None
        for w in entry.get("when", []):
            pol = w.get("policy", {})
            if all(policies.get(k) == v for k, v in pol.items()) and w.get("vl", vl) == vl:
                return Expectation(w["verdict"], w.get("reason", ""), under_policy=True,
                                   under="policy" if pol else "configuration")
        return Expectation(entry["verdict"], entry.get("reason", ""))


def judge(outcome: Any, exp: Expectation | None) -> None:
    """Fill in what was expected and whether the outcome is a surprise."""
    if exp is None:
        outcome.expected = "?"
        outcome.expect_reason = "not in expected.toml"
        outcome.unexpected = outcome.verdict not in ("pass",)
        return
    outcome.expected = exp.verdict
    outcome.expect_reason = (f"expected under this {exp.under}: {exp.reason}" if exp.under_policy else exp.reason)
    outcome.unexpected = outcome.verdict != exp.verdict
