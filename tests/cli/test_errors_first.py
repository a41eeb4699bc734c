"""Errors lead with the fix: an arm64 .S assembled under the default arch (loader/asm.py
wrong_arch_error), the sweep extra checked before the first point, `linux --sysctl`, an
other-arch --policy warned about, a sysctl a policy removed named as such."""
from __future__ import annotations

import builtins
import importlib.util

import pytest

from emukern.cli import main

ARM64 = ".globl _start\n_start:\n" + "".join(f"    mov x{i}, #{i}\n" for i in range(30)) + \
        "    mov x8, #93\n    svc #0\n"


def test_arm64_source_under_the_default_arch_leads_with_the_fix(tmp_path, capsys):
    src = tmp_path / "sve.S"
    src.write_text(ARM64)
    assert main(["run", str(src)]) == 2
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("emukern: error: sve.S looks like an arm64 program: pass --arch arm64")
    assert "32 of 32 errors" in err
    assert err.count("error: unknown operand") == 1          # the assembler's output cut to one
    assert len(err.splitlines()) < 8
    assert main(["run", str(src), "--arch", "arm64", "-q"]) == 0


@pytest.mark.parametrize("text, needle", [
    (".globl _start\n_start:\n    addd a0, a0, 1\n    li a7, 93\n    ecall\n", "unrecognized instruction mnemonic"),
    ('.include "nope.inc"\n.globl _start\n_start:\n    mov x0, #1\n', "Could not find include file"),
    (".globl _start\n_start:\n    li a0, (1 + \n    ecall\n", "error:"),
])
def test_include_and_syntax_errors_get_no_arch_hint(tmp_path, capsys, text, needle):
    src = tmp_path / "prog.S"
    src.write_text(text)
    assert main(["run", str(src)]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert "looks like an arm64" not in err and "--arch arm64" not in err


def test_sweep_without_the_extra_says_pip_install_before_any_point(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "s.toml"
    (tmp_path / "hello.S").write_text("# arch: riscv64\n.globl _start\n_start:\n    li a0, 0\n    li a7, 93\n    ecall\n")
    spec.write_text("[sweep]\nprograms = [\"hello.S\"]\n[grid]\ncpus = [1, 2]\n")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "pandas" else real(n, *a))
    ran = []
    import emukern.sweep.runner as runner
    monkeypatch.setattr(runner, "run_sweep", lambda *a, **k: ran.append(1))
    rc = main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--no-cache"])
    err = capsys.readouterr().err
    assert rc == 2 and not ran
    assert err.startswith("emukern: error:") and "pip install 'emukern[sweep]'" in err.splitlines()[0]


def test_linux_takes_sysctl_like_compare(monkeypatch, capsys):
    import emukern.cli.oracle as O
    seen = {}

    class Stop(Exception):
        pass

    def fake_real(a, prof, prog, sysctls=None):
        seen["sysctls"] = sysctls
        raise Stop
    monkeypatch.setattr(O, "_prepare", lambda a: (None, a.program, "riscv64"))
    monkeypatch.setattr(O, "_real", fake_real)
    with pytest.raises(Stop):
        O.cmd_linux(O.argparse.Namespace(**{**vars(_parse(["linux", "prog", "--sysctl", "abi.x=1"]))}))
    assert seen["sysctls"] == {"abi.x": "1"}
    with pytest.raises(SystemExit):
        main(["linux", "--help"])
    assert "--sysctl KEY=VALUE" in capsys.readouterr().out


def _parse(argv):
    from emukern.cli import make_parser, parse_command_line
    return parse_command_line(make_parser(), argv)


def test_other_arch_policy_is_warned_about(capsys):
    assert main(["run", "-q", "guest_asm/riscv/hello.S", "--policy", "arm64-sve=p1",
                 "--policy", "riscv-discard=eager"]) == 0
    err = capsys.readouterr().err
    assert "warning: --policy arm64-sve=p1 is for arm64 guests and ignored on this riscv64 guest" in err
    assert "riscv-discard" not in err
    assert main(["run", "-q", "guest_asm/riscv/hello.S", "--policy", "riscv-discard=eager"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_sysctl_the_policy_removed_says_so(capsys):
    rc = main(["run", "-q", "guest_asm/riscv/hello.S", "--policy", "riscv-vstate-sysctl=absent",
               "--sysctl", "abi.riscv_v_vstate_discard=0"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "unknown sysctl" not in err
    assert "abi.riscv_v_vstate_discard does not exist with riscv-vstate-sysctl=absent" in err
    assert "--policy riscv-vstate-sysctl=present" in err
    assert main(["run", "-q", "guest_asm/riscv/hello.S", "--sysctl", "abi.no_such=1"]) == 2
    assert "unknown sysctl 'abi.no_such'" in capsys.readouterr().err
