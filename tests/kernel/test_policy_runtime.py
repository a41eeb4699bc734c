"""The debugger's `policy NAME VALUE` is a run-time switch: each of the four modelled Linux
changes takes effect at its next decision point (not only at boot), and nothing crashes."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

DATA = Path(__file__).resolve().parent / "data"
RV = str(DATA / "policy_rv.S")
ARM = str(DATA / "policy_arm64.S")


@pytest.fixture
def script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    def run(prog: str, commands: list[str], *options: str) -> tuple[int, str]:
        from emukern.cli import main
        f = tmp_path / "cmds.txt"
        f.write_text("\n".join(commands) + "\n")
        capsys.readouterr()
        rc = main(["debug", prog, *options, "--script", str(f)])
        cap = capsys.readouterr()
        return rc, cap.out + cap.err
    return run


def _after(out: str, command: str, nth: int = 1) -> str:
    """Output of the nth echo of ``command`` up to the next prompt."""
    marker = f"(emukern) {command}\n"
    i = -1
    for _ in range(nth):
        i = out.index(marker, i + 1)
    i += len(marker)
    j = out.find("(emukern) ", i)
    return out[i:] if j < 0 else out[i:j]


@pytest.mark.parametrize("first,second", [("deferred", "eager"), ("eager", "deferred")])
def test_riscv_discard_switches_at_the_next_syscall(script, first, second):
    rc, out = script(RV, ["break trap syscall getppid", "continue", f"policy riscv-discard {first}", "finish",
                          "continue", f"policy riscv-discard {second}", "finish", "continue"],
                     "--sysctl", "abi.riscv_v_vstate_discard=1")
    assert rc == 0 and "program exited with status 0" in out
    want = {"eager": "eager discard: registers clobbered, VS=Dirty",
            "deferred": "deferred discard: TIF_RISCV_V_DEFER_RESTORE set, VS=Initial"}
    one, two = _after(out, "finish", 1), _after(out, "finish", 2)
    assert want[first] in one and want[second] not in one
    assert want[second] in two and want[first] not in two


def test_riscv_vstate_sysctl_switch_adds_and_removes_the_knob(script):
    # boot: knob present at 0 (CONFIG_RISCV_ISA_V_VSTATE_DISCARD=n) -> no clobber; switched to
    # absent (a kernel before Drew Fustini's patch) the next syscall clobbers; back to present,
    # the knob reappears with the value it had and the clobber is skipped again
    rc, out = script(RV, ["break trap syscall getppid", "continue", "policy riscv-vstate-sysctl absent",
                          "sysctl", "finish", "continue", "policy riscv-vstate-sysctl present", "sysctl",
                          "finish", "continue"])
    assert rc == 0 and "program exited with status 0" in out
    assert "abi.riscv_v_vstate_discard" not in _after(out, "sysctl", 1)
    assert "discard (clobber) instead of restore" in _after(out, "finish", 1)
    assert "abi.riscv_v_vstate_discard = 0" in _after(out, "sysctl", 2)
    assert "discard skipped (abi.riscv_v_vstate_discard=0)" in _after(out, "finish", 2)
    assert "error" not in out.lower() and "Traceback" not in out


@pytest.mark.parametrize("first,second", [("direct", "hook-list"), ("hook-list", "direct")])
def test_arm64_mrs_switches_at_the_next_undef_trap(script, first, second):
    rc, out = script(ARM, [f"policy arm64-mrs {first}", "break trap mrs", "continue", "finish", "continue",
                           f"policy arm64-mrs {second}", "finish", "info kernel", "delete 1", "continue"])
    assert rc == 0 and "program exited with status 0" in out
    want = {"direct": "emulated MRS (try_emulate_mrs)", "hook-list": "emulated MRS (undef_hook)"}
    assert want[first] in _after(out, "finish", 1)
    assert want[second] in _after(out, "finish", 2)
    # the debugger's "about to run" line names the path of the policy in force at the stop
    about = {"direct": "do_el0_undef -> try_emulate_mrs", "hook-list": "do_el0_undef -> call_undef_hook"}
    assert about[first] in _after(out, "continue", 1) and about[second] not in _after(out, "continue", 1)
    # the hook list has the MRS hook only before the rework: one undef_lock acquisition in total
    kern = _after(out, "info kernel")
    assert "acquisitions=1" in kern


@pytest.mark.parametrize("first,second", [("legacy", "p1+p2"), ("p1+p2", "legacy"), ("p1+p2", "p1")])
def test_arm64_sve_switch_reaches_do_sve_acc(script, first, second):
    rc, out = script(ARM, ["break trap sve-access", "continue", f"policy arm64-sve {second}", "finish", "continue"],
                     "--policy", f"arm64-sve={first}")
    assert rc == 0 and "program exited with status 0" in out
    fin = _after(out, "finish")
    assert "TIF_SVE set" in fin
    # do_sve_acc records sve_timeout only with Mark Brown's patches (p1, p1+p2)
    assert ("EL0 SVE enabled, sve_timeout=" in fin) == (second != "legacy")


def test_policy_errors_are_clear(script):
    rc, out = script(ARM, ["policy arm64-sve nope", "policy nosuch x", "continue"])
    assert rc == 1                                    # a script with failed commands says so
    assert "program exited with status 0" in out      # ... and the session went on
    assert "policy arm64-sve has no value 'nope'" in out and "legacy, p1, p1+p2" in out
    assert "unknown policy 'nosuch'" in out
    assert "Traceback" not in out
