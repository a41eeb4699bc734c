"""`emukern debug --script`: the REPL driven non-interactively, in-process."""
from __future__ import annotations

import pytest

from debug_testutil import ARM, DATA, RV, section


def test_syscall_stop_before_and_after_handler(debug_script):
    rc, out = debug_script(RV, ["break trap syscall write", "continue", "trap", "finish", "traps"])
    assert rc == 0
    assert "Trap breakpoint 1: syscall write (before the handler)" in out
    stop = section(out, "continue")
    assert "trap #1 syscall on cpu 0, tid 1  (stopped before the handler)" in stop
    assert "syndrome  scause=0x8  environment call from U-mode" in stop
    assert "ecall" in stop
    assert "handler   write (syscall 64)" in stop
    fin = section(out, "finish")
    assert "hello" in fin                          # the guest's write happened in the handler
    assert "handler   write\n" in fin
    assert "decision  returned 6" in fin
    assert "cycles    " in fin
    assert "=> 0x" in fin and "<vector_start>" in fin  # PC moved past the ecall
    assert "returned 6" in section(out, "traps") and "counts: syscall=1" in section(out, "traps")


def test_riscv_first_use_trap(debug_script):
    rc, out = debug_script(RV, ["break trap first-use", "continue", "finish", "step", "info vregs 32 v1",
                                "info kernel", "continue"])
    assert rc == 0
    stop = section(out, "continue")
    assert "trap #2 illegal" in stop and "(stopped before the handler)" in stop
    assert "vsetvli t1, t0, e32, m1, ta, ma" in stop
    assert "scause=0x2" in stop and "illegal instruction" in stop
    assert "do_trap_insn_illegal -> riscv_v_first_use_handler" in stop
    assert "vs=Off" in stop
    fin = section(out, "finish")
    assert "handler   riscv_v_first_use_handler" in fin
    assert "decision  allocated 1024-byte context" in fin and "the instruction re-executes" in fin
    assert "vs: Off -> " in fin
    # the vsetvli re-executes: `step` runs it and lands on the next instruction
    assert "vmv.v.i v1, 7" in section(out, "step")
    vregs = section(out, "info vregs 32 v1")
    assert "vl=4" in vregs and "elements as e32" in vregs
    assert "sstatus.VS Dirty" in section(out, "info kernel")
    assert "program exited with status 0" in out


def test_arm64_mrs_trap(debug_script):
    rc, out = debug_script(ARM, ["break trap mrs", "continue", "finish", "info regs x0"])
    assert rc == 0
    stop = section(out, "continue")
    assert "mrs x0, id_aa64isar0_el1" in stop
    assert "EC=0x00" in stop and "unknown/undefined" in stop
    assert "do_el0_undef -> try_emulate_mrs" in stop
    fin = section(out, "finish")
    assert "handler   do_el0_undef" in fin
    assert "decision  emulated MRS" in fin
    assert "<sve_start>" in fin                     # emulated: the PC moved past the MRS
    assert section(out, "info regs x0").split()[1] != "0x0000000000000000"


def test_arm64_sve_access_trap(debug_script):
    rc, out = debug_script(ARM, ["break trap sve-access", "continue", "trap", "finish", "stepi",
                                 "info regs x0", "info zregs", "continue"])
    assert rc == 0
    stop = section(out, "continue")
    assert "sve-access" in stop and "rdvl x0, #1" in stop
    assert "EC=0x19" in stop and "SVE access" in stop
    assert "handler   do_sve_acc" in stop
    fin = section(out, "finish")
    assert "handler   do_sve_acc" in fin
    assert "decision  TIF_SVE set" in fin
    assert "tif_sve: clear -> set" in fin
    # the rdvl re-executes with SVE enabled: Linux's boot default VL, the largest supported up
    # to 64 bytes: 512 bits = 64 bytes with the default --sve-vls 128,256,512
    assert "0x0000000000000040" in section(out, "info regs x0")
    assert "SVE VL=512" in section(out, "info zregs")
    assert "program exited with status 0" in out


def test_break_trap_any_and_after(debug_script):
    rc, out = debug_script(ARM, ["break trap any after", "continue", "continue", "info breakpoints"])
    assert rc == 0
    first = out.split("(emukern) continue\n")[1]
    assert "(after the handler)" in first and "decision  returned 6" in first
    second = out.split("(emukern) continue\n")[2]
    assert "handler   do_el0_undef" in second
    bps = section(out, "info breakpoints")
    assert "trap" in bps and "any (after the handler)" in bps and " 2 " in bps


def test_break_at_symbol_and_stepi_counts(debug_script):
    rc, out = debug_script(str(DATA / "arm64_loop.S"), [
        "break loop", "info breakpoints", "continue", "info cpu", "continue", "delete 1",
        "stepi 3", "info cpu", "until after_loop", "stepi 3", "continue"])
    assert rc == 0
    assert "Breakpoint 1 at 0x" in out and "<loop>" in out
    assert "Breakpoint 1, 0x" in section(out, "continue")
    # stopped before `loop` ran: 1 user instruction (mov x1, #5)
    assert "(user 1)" in section(out, "info cpu")
    second = out.split("(emukern) continue\n")[2]
    assert "Breakpoint 1" in second and "(user 3)" not in second
    stepi = section(out, "stepi 3")
    assert "=> 0x" in stepi
    cpu_after = out.split("(emukern) info cpu\n")[2]
    assert "(user 6)" in cpu_after        # 1 + 2 (one loop round) + 3 stepped
    assert "Reached 0x" in section(out, "until after_loop") and "<after_loop>" in section(out, "until after_loop")
    last = out.split("(emukern) stepi 3\n")[2]
    assert "Stopped at a trap" in last and "exit_group" in last
    assert "program exited with status 7" in out


def test_stepi_count_matches_counter(debug_script):
    rc, out = debug_script(RV, ["stepi 5", "info cpu", "stepi", "info cpu", "stepi", "info cpu"])
    assert rc == 0
    assert "(user 5)" in out.split("(emukern) info cpu\n")[1]
    # the 6th instruction is the ecall: stepping stops at its trap entry, the handler not yet run
    assert "Stopped at a trap" in section(out, "stepi") and "handler   write (syscall 64)" in section(out, "stepi")
    assert "(user 6)" in out.split("(emukern) info cpu\n")[2]
    # the next stepi first runs the pending handler, then executes one instruction
    third = out.split("(emukern) stepi\n")[2]
    assert "handled syscall" in third and "returned 6" in third
    assert "(user 7)" in out.split("(emukern) info cpu\n")[3]


def test_condition_breakpoints_deferred(debug_script):
    rc, out = debug_script(str(DATA / "rv_dirty.S"), [
        "break when vs-changes", "continue", "continue", "print vs", "continue", "print vs", "info kernel",
        "delete", "break when jiffies>1000", "info breakpoints", "continue"])
    assert rc == 0
    first = out.split("(emukern) continue\n")[1]
    assert "Breakpoint 1 (when vs-changes (checked after each trap and before each instruction)) is true" in first
    assert "riscv_v_first_use_handler" in first and "vs: Off -> Clean" in first
    # the vsetvli made VS Dirty -- in the vector unit, no trap: the stop is before the next instruction
    second = out.split("(emukern) continue\n")[2]
    assert "is true" in second and "trap #" not in second and "vmv.v.i v4, 5" in second
    assert "vs = Dirty" in out.split("(emukern) print vs\n")[1]
    third = out.split("(emukern) continue\n")[3]
    assert "handler   getpid" in third and "vs: Dirty -> Initial" in third
    assert "vs = Initial" in out.split("(emukern) print vs\n")[2]
    assert "last vector decision: VS=Initial: discard" in section(out, "info kernel")
    assert "when jiffies>1000" in section(out, "info breakpoints")
    assert "program exited with status 0" in out


def test_condition_breakpoints_eager(debug_script):
    rc, out = debug_script(str(DATA / "rv_dirty.S"), [
        "break when vs=Dirty and syscall=getpid", "continue", "info kernel", "continue", "continue"],
        "--policy", "riscv-discard=eager", "--sysctl", "abi.riscv_v_vstate_discard=1")
    assert rc == 0
    first = out.split("(emukern) continue\n")[1]
    assert "is true" in first and "handler   getpid" in first and "vs=Dirty" in first
    assert "eager discard: registers clobbered, VS=Dirty" in section(out, "info kernel")
    assert "is true" in out.split("(emukern) continue\n")[2]
    assert "program exited with status 0" in out.split("(emukern) continue\n")[3]


def test_bad_commands_no_traceback(debug_script):
    rc, out = debug_script(RV, ["frobnicate", "stepi x", "break trap bogus", "break when nosuchvar=1",
                                "break when (vs=Dirty", "x/8qz 0", "x/4xw 0x10", "info nosuch",
                                "set reg nosuch 1", "sysctl nosuch.key", "sysctl abi.riscv_v_vstate_discard abc",
                                "policy nosuch x", "finish", "delete 99", "until nowhere", "info zregs",
                                "help"])
    assert rc == 1
    assert "Traceback" not in out
    assert "error: unknown command 'frobnicate'" in out
    assert "error: expected a count, got 'x'" in out
    assert "error: unknown trap kind 'bogus'" in out
    assert "error: unknown variable 'nosuchvar'" in out
    assert "error: missing ')'" in out
    assert "error: bad format letter" in out
    assert "error: cannot access memory at 0x10" in out
    assert "error: no view 'nosuch'" in out
    assert "error: no register 'nosuch'" in out
    assert "error: unknown sysctl 'nosuch.key'" in out
    assert "error: invalid value 'abc'" in out
    assert "error: unknown policy 'nosuch'" in out
    assert "error: not stopped in a kernel handler" in out
    assert "error: no breakpoint number 99" in out
    assert "error: no symbol or register 'nowhere'" in out
    assert "error: info zregs/pregs are for arm64 SVE" in out
    assert out.count("error:") == 16


def test_help_for_every_command(debug_script):
    from emukern.debug.commands import COMMANDS
    names = sorted(COMMANDS)
    rc, out = debug_script(RV, [f"help {n}" for n in names] + ["help conditions", "info views"])
    assert rc == 0
    for n in names:
        sec = section(out, f"help {n}")
        assert COMMANDS[n].usage in sec and COMMANDS[n].help in sec
    assert "jiffies" in section(out, "help conditions")
    for v in ("registers", "vregs", "zregs", "pregs", "task", "tasks", "cpu", "kernel", "breakpoints"):
        assert v in section(out, "info views")


def test_state_views_and_memory(debug_script):
    rc, out = debug_script(RV, [
        "info regs", "info task", "info tasks", "info cpu", "info kernel", "info symbols",
        "x/8xb msg", "x/2xw msg", "x/1gx msg", "x/s msg", "x/2i $pc", "x/3dh msg", "disas _start 3",
        "set reg a0 0x1234", "print a0", "set mem/w msg 0x4c4c4548", "x/s msg",
        "sysctl", "sysctl abi.riscv_v_vstate_discard 1", "sysctl abi.riscv_v_vstate_discard",
        "policy riscv-discard eager", "policy", "info fregs f0", "cpu", "cpu 0"])
    assert rc == 0
    assert "pc" in section(out, "info regs") and "<_start>" in section(out, "info regs")
    assert "task 1 (pid 1)" in section(out, "info task") and "vector: VS=Off" in section(out, "info task")
    assert "*   1" in section(out, "info tasks")
    assert "_start" in section(out, "info symbols") and "msg" in section(out, "info symbols")
    assert "<msg>:  0x68  0x65  0x6c  0x6c  0x6f  0x0a" in section(out, "x/8xb msg")
    assert "0x6c6c6568" in section(out, "x/2xw msg")
    assert "'hello\\n'" in section(out, "x/s msg")
    assert "c.li a0, 1" in section(out, "x/2i $pc")
    assert "25960" in section(out, "x/3dh msg")
    assert "a0 = 4660 (0x1234)" in section(out, "print a0")
    assert "'HELLo\\n'" in out.split("(emukern) x/s msg\n")[2]
    assert "abi.riscv_v_vstate_discard = 1" in section(out, "sysctl abi.riscv_v_vstate_discard")
    assert "riscv-discard = eager" in section(out, "policy")
    assert "f0" in section(out, "info fregs f0")


def test_restart_keeps_breakpoints(debug_script):
    rc, out = debug_script(RV, ["break vector_start", "continue", "restart", "info regs pc", "run",
                                "continue"])
    assert rc == 0
    assert "<_start>" in section(out, "info regs pc")
    run = section(out, "run")
    assert "Restarted." in run and "Breakpoint 1, 0x" in run
    assert out.count("hello") == 2


def test_ex_and_batch(capsys):
    from emukern.cli import main
    rc = main(["debug", RV, "--ex", "break trap first-use", "--ex", "continue", "--ex", "finish", "--batch"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "(emukern) finish" in out and "handler   riscv_v_first_use_handler" in out


def test_machine_options_are_run_options(debug_script):
    rc, out = debug_script(RV, ["info kernel", "info cpu"], "--vlen", "512", "--cpus", "2",
                           "--policy", "riscv-discard=eager", "--sysctl", "abi.riscv_v_vstate_discard=1")
    assert rc == 0
    k = section(out, "info kernel")
    assert "riscv-discard=eager" in k and "abi.riscv_v_vstate_discard=1" in k and "2 cpu(s)" in k
    assert "VLEN 512" in section(out, "info cpu")


def test_bad_machine_option_is_a_clean_error(capsys):
    from emukern.cli import main
    rc = main(["debug", RV, "--policy", "nosuch=1", "--script", "/dev/null"])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown policy" in err and "Traceback" not in err
