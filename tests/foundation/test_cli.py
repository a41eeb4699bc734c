"""The CLI: output, exit status, JSON, and clear errors instead of tracebacks."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from emukern.api import result_fields
from emukern.cli import main


def test_run_prints_output_and_returns_guest_status(capsys, guest_asm):
    st = main(["run", str(guest_asm / "riscv" / "hello.S")])
    out, err = capsys.readouterr()
    assert st == 0
    assert "Hello from RISC-V" in out
    assert "user instructions" in err and "traps" in err and "simulated time" in err


def test_json_summary(tmp_path, guest_asm, capsys):
    j = tmp_path / "r.json"
    st = main(["run", str(guest_asm / "arm64" / "hello.S"), "--json", str(j), "-q"])
    d = json.loads(j.read_text())
    assert st == 0 and d["exit_status"] == 0 and d["traps"] == {"syscall": 2}
    assert d["config"]["arch"] == "arm64" and "wall_seconds" not in d


@pytest.mark.parametrize("argv,needle", [
    (["run", "/nonexistent.S"], "no such program"),
    (["run", "/etc/hostname"], "not an ELF"),
    (["run", "GUEST/riscv/hello.S", "--policy", "riscv-discard=lazy"], "riscv-discard takes one of"),
    (["run", "GUEST/riscv/hello.S", "--policy", "nonsense"], "NAME=VALUE"),
    (["run", "GUEST/riscv/hello.S", "--sysctl", "abi.riscv_v_vstate_discard=on"], "invalid value"),
    (["run", "GUEST/riscv/hello.S", "--sysctl", "abi.nope=1"], "unknown sysctl"),
    (["run", "GUEST/riscv/hello.S", "--cost", "nosuch=3"], "unknown cost key"),
    (["run", "GUEST/riscv/hello.S", "--cpus", "65"], "--cpus"),
    (["run", "GUEST/riscv/hello.S", "--vlen", "100"], "--vlen"),
    (["run", "GUEST/arm64/hello.S", "--arch", "riscv64"], "arm64 program"),
])
def test_bad_input_is_a_clear_error(capsys, guest_asm, argv, needle):
    argv = [a.replace("GUEST", str(guest_asm)) for a in argv]
    st = main(argv)
    _, err = capsys.readouterr()
    assert st == 2
    assert needle in err and "Traceback" not in err


def test_assembly_error_names_the_line(tmp_path, capsys):
    src = tmp_path / "bad.S"
    src.write_text("# arch: riscv64\n.globl _start\n_start:\n    addi a0, a0\n")
    assert main(["run", str(src)]) == 2
    err = capsys.readouterr().err
    assert "bad.S:4" in err


def test_console_script_help():
    out = subprocess.run([sys.executable, "-m", "emukern.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "reproduce" in out.stdout and "--policy" not in out.stderr
    out = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "--help"], capture_output=True, text=True)
    assert "--max-insns" in out.stdout and "--sysctl" in out.stdout


def test_killed_guest_status_like_a_shell(capsys, tmp_path):
    src = tmp_path / "segv.S"
    src.write_text("# arch: arm64\n.globl _start\n_start:\n    mov x1, #8\n    ldr x0, [x1]\n")
    assert main(["run", str(src)]) == 139
    assert "SIGSEGV" in capsys.readouterr().err


def test_version(capsys):
    import emukern
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"emukern {emukern.__version__}"
    assert emukern.__version__.count(".") >= 2


def test_packaged_example_found_from_any_directory(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                 # no guest_asm/ here: the shipped example is used
    assert main(["run", "guest_asm/riscv/hello.S", "-q"]) == 0
    assert capsys.readouterr().out == "Hello from RISC-V user mode!\n"
    assert main(["run", "guest_asm/riscv/nosuch.S"]) == 2
    assert "emukern info examples" in capsys.readouterr().err


def test_info_examples_lists_the_shipped_guests(capsys, guest_asm):
    assert main(["info", "examples"]) == 0
    out = capsys.readouterr().out
    assert "guest_asm/riscv/\n" in out and "hello.S" in out and "guest_asm/arm64/\n" in out
    assert "guest_asm/include/" not in out                      # include files are not programs


def test_json_path_checked_before_the_run(capsys, guest_asm, tmp_path):
    st = main(["run", str(guest_asm / "riscv" / "hello.S"), "--json", str(tmp_path / "no" / "such" / "x.json")])
    out, err = capsys.readouterr()
    assert st == 2 and "does not exist" in err and "internal error" not in err
    assert out == ""                                   # the guest did not run
    assert main(["run", str(guest_asm / "riscv" / "hello.S"), "--json", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_quiet_keeps_an_explicit_trace(capsys, guest_asm):
    assert main(["run", str(guest_asm / "riscv" / "hello.S"), "-q", "--trace", "traps"]) == 0
    err = capsys.readouterr().err
    assert "write: returned 29" in err and "exit_group" in err
    assert "user instructions" not in err             # ... but no summary


@pytest.mark.parametrize("prog,opts,flags", [
    ("riscv/hello.S", ["--sve-vl", "512"], ["--sve-vl"]),
    ("riscv/hello.S", ["--idst", "--cpu-id", "1:MIDR_EL1=0", "--cpus", "2"], ["--idst", "--cpu-id"]),
    ("arm64/hello.S", ["--vlen", "512", "--no-v"], ["--vlen", "--no-v"]),
])
def test_other_arch_options_warn(capsys, guest_asm, prog, opts, flags):
    assert main(["run", str(guest_asm / prog), "-q", *opts]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and all(f in err for f in flags) and "ignored" in err


def test_own_arch_options_do_not_warn(capsys, guest_asm):
    assert main(["run", str(guest_asm / "riscv" / "hello.S"), "-q", "--vlen", "512"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_double_dash_passes_option_like_words_to_the_guest(tmp_path, capsys):
    src = tmp_path / "argc.S"
    src.write_text("# arch: riscv64\n.globl _start\n_start:\n    ld a0, 0(sp)\n    li a7, 93\n    ecall\n")
    assert main(["run", str(src), "-q", "--", "--verbose", "-n", "3"]) == 4
    assert main(["run", str(src), "x", "-q", "--cpus", "2", "--", "--cpus"]) == 3
    with pytest.raises(SystemExit):
        main(["info", "--", "x"])


def test_default_arch_assembly_failure_says_so(tmp_path, capsys):
    src = tmp_path / "prog.S"           # an arm64 source outside an arm64/ folder, no arch line
    src.write_text(".globl _start\n_start:\n    mov x0, #0\n    mov x8, #93\n    svc #0\n")
    assert main(["run", str(src)]) == 2
    err = capsys.readouterr().err
    assert "assembled as riscv64, the default" in err and "--arch arm64" in err
    assert main(["run", str(src), "--arch", "arm64", "-q"]) == 0
    assert main(["run", str(src), "--arch", "riscv64"]) == 2      # explicit: no note about defaults
    assert "the default" not in capsys.readouterr().err


def test_info_lists_rvv_costs_and_arm64_sysctls(capsys):
    assert main(["info", "costs"]) == 0
    out = capsys.readouterr().out
    assert "rvv.load.beat" in out and "rvv.arith.base" in out
    assert main(["info", "sysctls"]) == 0
    out = capsys.readouterr().out
    for key in ("abi.swp", "abi.cp15_barrier", "abi.setend", "abi.riscv_v_vstate_discard"):
        assert key in out


def test_rvv_cost_override_changes_the_cycles(guest_asm, capsys):
    from emukern.api import run_program
    prog = guest_asm / "riscv" / "vec_saxpy.S"
    base = run_program(prog)
    slow = run_program(prog, costs={"rvv.load.beat": 40})
    assert slow.cycles > base.cycles and slow.user_insns == base.user_insns
    assert main(["run", str(guest_asm / "riscv" / "hello.S"), "-q", "--cost", "rvv.load.beat=3"]) == 0
    assert main(["run", str(guest_asm / "riscv" / "hello.S"), "--cost", "rvv.load.nope=1"]) == 2
    assert "unknown cost key" in capsys.readouterr().err


@pytest.mark.parametrize("prog,cpus", [("riscv/spin.S", 1), ("arm64/spin.S", 2), ("riscv/threads.S", 2)])
def test_max_insns_stops_at_exactly_the_budget(guest_asm, tmp_path, capsys, prog, cpus):
    j = tmp_path / "r.json"
    argv = ["4", "100000", "2"] if "threads" in prog else ["100000000"]
    st = main(["run", str(guest_asm / prog), "--cpus", str(cpus), "--max-insns", "123457", "--json", str(j),
               "--", *argv])
    err = capsys.readouterr().err
    assert st == 124
    assert json.loads(j.read_text())["user_insns"] == 123_457
    assert "stopped: the --max-insns budget of 123,457 user instructions ran out" in err
    assert "stopped: stopped" not in err


def test_lat_ctx_vec_prints_a_text_line(guest_asm, capsys):
    """The README's --trace example guest: its result is a readable line, not raw bytes."""
    assert main(["run", str(guest_asm / "riscv" / "lat_ctx_vec.S"), "20", "-q",
                 "--policy", "riscv-discard=eager", "--trace", "traps"]) == 0
    cap = capsys.readouterr()
    got = result_fields(cap.out)
    assert cap.out.startswith("cycles=") and got["cycles"] > 0 and got["iterations"] == 20
    assert "riscv_v_first_use_handler" in cap.err and "vadd" not in cap.out
