"""Errors the debugger used to swallow are reported: a raising `break when` condition stops with
the error, a failed code-cache flush after a memory write or a failed hook removal says so."""
from __future__ import annotations

import pytest
from unicorn import UcError
from unicorn.unicorn_const import UC_ERR_ARG

from debug_testutil import RV, section
from emukern.debug import conditions


def test_raising_condition_stops_and_says_why(debug_script, monkeypatch):
    def broken(ctx):
        if ctx.trap is None:
            return "Off"                       # fine when the breakpoint is made ...
        raise ZeroDivisionError("division by zero")   # ... broken at the first trap
    monkeypatch.setitem(conditions.VARIABLES, "boom", conditions.Variable("boom", broken, "broken for the test"))
    rc, out = debug_script(RV, ["break when boom=Dirty", "continue", "info breakpoints", "continue"])
    stop = section(out, "continue")
    assert "Error:" in stop and "raised ZeroDivisionError: division by zero" in stop
    assert "breakpoint disabled" in stop
    assert "program exited with status 0" in out          # the second continue ran on


def test_condition_that_cannot_be_evaluated_is_refused(debug_script, monkeypatch):
    def broken(ctx):
        raise ValueError("bad state")
    monkeypatch.setitem(conditions.VARIABLES, "boom", conditions.Variable("boom", broken, "broken for the test"))
    rc, out = debug_script(RV, ["break when boom=Dirty", "info breakpoints"])
    assert "condition 'boom=Dirty' cannot be evaluated: ValueError: bad state" in out
    assert "internal error" not in out


def test_missing_state_is_no_value_not_an_error(debug_script):
    # tif_sve does not exist on riscv: the condition is simply false, no error stop
    rc, out = debug_script(RV, ["break when tif_sve=set", "continue"])
    assert "Error:" not in out and "program exited with status 0" in out


@pytest.fixture
def failing_uc(monkeypatch):
    """Make Unicorn's code-cache flush and hook removal fail (riscv guests use neither otherwise)."""
    from unicorn import Uc

    def fail(self, *a, **kw):
        raise UcError(UC_ERR_ARG)
    monkeypatch.setattr(Uc, "ctl_remove_cache", fail)
    monkeypatch.setattr(Uc, "hook_del", fail)


def test_set_mem_flush_failure_is_an_error(debug_script, failing_uc):
    rc, out = debug_script(RV, ["set mem vector_start 0x00000013", "continue"])
    assert "could not drop its translated code" in out and "it may run the old instructions" in out


def test_breakpoint_hook_removal_failure_is_an_error(debug_script, failing_uc):
    rc, out = debug_script(RV, ["break vector_start", "delete 1", "continue"])
    assert "could not remove the code hook of the breakpoint" in out
