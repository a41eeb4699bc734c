"""Debugger UX: `break when` where conditions change, element views of vector/SVE registers,
restart keeping the prompt's sysctl/policy changes, and the MRS decision naming what was read."""
from __future__ import annotations

import re

import pytest

from debug_testutil import DATA, REPO, section

VEC = str(REPO / "guest_asm" / "riscv" / "vec_reduce.S")
SVE = str(DATA / "arm64_sve_regs.S")
DIRTY = str(DATA / "rv_dirty.S")


def test_break_when_vs_dirty_fires_on_an_ordinary_vector_program(debug_script):
    """The README's example: VS becomes Dirty in the vector unit (no trap), so the condition
    must be checked at instructions, not only after traps."""
    rc, out = debug_script(VEC, ["break when vs=Dirty", "continue", "print vs", "info breakpoints",
                                 "delete", "continue"])
    assert rc == 0
    stop = section(out, "continue")
    assert "Breakpoint 1 (when vs=Dirty (checked after each trap and before each instruction)) is true" in stop
    assert "vs = Dirty" in section(out, "print vs")
    assert "program exited with status 0" in out


def test_condition_stop_counts_and_final_result_unchanged(tmp_path):
    from emukern.api import Machine, run_program
    from emukern.debug.engine import Debugger
    plain = run_program(VEC)
    d = Debugger(lambda: Machine().load(VEC))
    d.add_cond_breakpoint("vs=Dirty")
    stops = []
    while not d.finished:
        ev = d.cont()
        if ev.reason == "condition":
            stops.append(ev.pc)
    assert stops                                                  # it fired, at least once
    assert d.exit_status == plain.exit_status
    r = d.k                                                       # every instruction counted once
    assert sum(c.user_insns for c in r.cpus) == plain.user_insns


def test_register_condition_stops_before_the_next_instruction(debug_script, tmp_path):
    src = tmp_path / "cond.S"
    src.write_text("# arch: riscv64\n.globl _start\n_start:\n    li a0, 1\n    li a0, 5\nafter5:\n"
                   "    li a0, 6\n    li a0, 5\nagain:\n    li a7, 93\n    ecall\n")
    rc, out = debug_script(str(src), ["break when a0=5", "continue", "info regs pc a0", "continue",
                                      "info regs pc", "continue"])
    assert rc == 0
    first = out.split("(emukern) info regs pc a0\n")[1]
    assert "<after5>" in first and re.search(r"^a0\s+0x0+5\b", first, re.M)
    # it stays true at the ecall only after becoming true again: the second stop is at `again`
    assert "<again>" in out.split("(emukern) info regs pc\n")[1]
    assert "program exited with status 5" in out


def test_trap_only_condition_is_not_per_instruction(debug_script):
    rc, out = debug_script(DIRTY, ["break when syscall=getpid", "info breakpoints", "continue"])
    assert "(checked after each trap)" in section(out, "info breakpoints")
    assert "handler   getpid" in section(out, "continue")


def test_info_vregs_defaults_to_vtype_sew_and_keeps_every_named_register(debug_script):
    rc, out = debug_script(DIRTY, ["break trap first-use", "continue", "finish", "stepi 2", "info vregs v4 v5",
                                   "info vregs e8 v4", "info vregs e99"])
    v = section(out, "info vregs v4 v5")
    assert "vtype=0xd0" in v and "elements as e32" in v
    assert re.search(r"^v4\s+(00000005 ){7}00000005$", v, re.M)
    assert re.search(r"^v5\s+", v, re.M)                          # both registers shown
    assert re.search(r"^v4\s+05 00 00 00 05", section(out, "info vregs e8 v4"), re.M)
    assert "bad argument 'e99'" in out


def test_info_zregs_and_pregs_element_views(debug_script):
    rc, out = debug_script(SVE, ["break sve_set", "continue", "info zregs e32 z0 z1", "info zregs z0",
                                 "info pregs e32 p0 p1 ffr", "info pregs p0", "info zregs z32"], "--sve-vl", "256")
    z = section(out, "info zregs e32 z0 z1")
    assert "elements as e32" in z
    assert re.search(r"^z0\s+00000001 00000002 00000003 00000004 00000005 00000006 00000007 00000008$", z, re.M)
    assert re.search(r"^z1\s+(5a5a5a5a ){7}5a5a5a5a$", z, re.M)
    assert len([ln for ln in z.splitlines() if ln.startswith("z")]) == 2     # only the ones asked for
    assert re.search(r"^z0\s+0000000200000001 0000000400000003", section(out, "info zregs z0"), re.M)
    p = section(out, "info pregs e32 p0 p1 ffr")
    assert re.search(r"^p0\s+11111111\s+\(8 of 8 active", p, re.M)
    assert re.search(r"^ffr\s+11111111\s+\(8 of 8 active", p, re.M)
    assert re.search(r"^p0\s+(1\.\.\.){8}\s+\(8 of 32 active", section(out, "info pregs p0"), re.M)
    assert "bad argument 'z32'" in out


def test_restart_keeps_prompt_sysctl_and_policy(debug_script):
    rc, out = debug_script(DIRTY, ["sysctl abi.riscv_v_vstate_discard 1", "policy riscv-discard eager",
                                   "restart", "sysctl abi.riscv_v_vstate_discard", "policy riscv-discard",
                                   "break trap syscall getpid after", "continue"])
    r = section(out, "restart")
    assert "kept from the prompt: sysctl abi.riscv_v_vstate_discard=1, policy riscv-discard=eager" in r
    assert "abi.riscv_v_vstate_discard = 1" in section(out, "sysctl abi.riscv_v_vstate_discard")
    assert "riscv-discard = eager" in section(out, "policy riscv-discard")
    assert "eager" in section(out, "continue")                     # the kernel really uses it


def test_mrs_decision_names_register_and_value(debug_script):
    prog = str(REPO / "guest_asm" / "arm64" / "mrs_midr.S")
    rc, out = debug_script(prog, ["break trap mrs", "continue", "finish", "info regs x11"])
    fin = section(out, "finish")
    m = re.search(r"MIDR_EL1 read as (0x[0-9a-f]+) into x11", fin)
    assert m, fin
    assert re.search(rf"x11\s+0x0*{int(m.group(1), 16):x}\b", section(out, "info regs x11"))


def test_repl_watchpoints(debug_script):
    rc, out = debug_script(str(DATA / "rv_watch.S"), ["watch var", "rwatch var 8", "continue", "x/1xg var",
                                                      "continue", "info breakpoints", "watch", "continue"])
    assert "Watchpoint 1: write" in section(out, "watch var")
    w = section(out, "continue")
    assert "Watchpoint 1 (write" in w and "<do_store> wrote" in w and "sd t1, 0(t0)" in w
    assert "0x0000000000000005" in section(out, "x/1xg var")
    r = out.split("(emukern) continue\n")[2]
    assert "Watchpoint 2 (read" in r and "<do_load> read" in r
    assert re.search(r"^1\s+watchpoint\s+y\s+1\s+write", section(out, "info breakpoints"), re.M)
    assert "usage: watch ADDR|SYMBOL [LENGTH]" in out
    assert "program exited with status 5" in out
