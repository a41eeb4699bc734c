"""The CLI: output, exit status, JSON, and clear errors instead of tracebacks."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
    assert "guest_asm/riscv/:" in out and "hello.S" in out and "guest_asm/arm64/:" in out
    assert "include" not in out.split(":", 1)[1].split()      # include files are not programs
