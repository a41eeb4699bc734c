"""Bounded random fuzzing in CI, with fixed seeds: random syscalls (tools/fuzz_syscalls.py) and
random instruction words (tools/fuzz_machine.py) on both architectures must end every guest
cleanly -- an exit, a signal, the budget -- never a Python exception out of ``Machine.run`` and
never a host file beside the guest root.  The same seeds draw the same cases, so a failure here
reproduces with ``tools/fuzz_syscalls.py --seed N --cases M`` (or fuzz_machine.py).

The adversarial round this answers threw 751,100 random syscalls; CI throws a few thousand per
run (about 20 s), enough that a handler turning a bad argument into a traceback is caught the
day it lands."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fuzz_syscalls():
    return _tool("fuzz_syscalls")


@pytest.fixture(scope="module")
def fuzz_machine():
    return _tool("fuzz_machine")


@pytest.mark.parametrize("seed", [101, 202, 303])
def test_random_syscalls_end_cleanly(fuzz_syscalls, seed):
    failures = fuzz_syscalls.fuzz(seed, 600)
    assert not failures, "\n".join(failures[:5])


def test_syscall_fuzzer_catches_a_planted_bug(fuzz_syscalls, monkeypatch):
    """The fuzzer itself is checked: a handler that raises must be reported, with its case."""
    from emukern.kernel.syscalls import sys as sysmod

    def sys_getpid(*a):
        raise RuntimeError("planted")
    sys_getpid.__module__ = sysmod.__name__        # the table takes a module's own sys_* only
    monkeypatch.setattr(sysmod, "sys_getpid", sys_getpid)
    failures = fuzz_syscalls.fuzz(3, 200)
    assert failures and all("planted" in f for f in failures)
    assert "getpid(" in failures[0]


@pytest.mark.parametrize("seed", [7, 8])
def test_random_instruction_words_end_cleanly(fuzz_machine, seed):
    failures = fuzz_machine.fuzz(seed, 1500)
    assert not failures, f"{len(failures)} host exceptions, first:\n" + "\n".join(failures[:3])
