"""`--cpu-model`: the arm64 ID registers an EL0 MRS reads — QEMU 7.2's max CPU (the default: what
Debian's kernels report under qemu-system) or only what Unicorn's CPU executes (no SVE2)."""
from __future__ import annotations

import json

import pytest

from emukern.cli import main

GUEST = """// arch: arm64
.globl _start
_start:
  mrs x0, ID_AA64ZFR0_EL1
  ubfx x0, x0, #0, #4          // SVEver: 1 = SVE2
  mov x8, #93
  svc #0
"""


@pytest.mark.parametrize("model, svever", [("qemu-max", 1), ("unicorn-max", 0)])
def test_cpu_model_selects_the_id_registers(tmp_path, monkeypatch, model, svever):
    monkeypatch.setenv("EMUKERN_NO_FORK", "1")
    src = tmp_path / "zfr0.S"
    src.write_text(GUEST)
    out = tmp_path / "r.json"
    assert main(["run", str(src), "--cpu-model", model, "-q", "--json", str(out)]) == svever
    cfg = json.loads(out.read_text())["config"]
    # the JSON names a non-default model (and stays as it was for the default one)
    assert cfg.get("cpu_model") == (None if model == "qemu-max" else model)


def test_unknown_cpu_model_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "x.S", "--cpu-model", "cortex-a53"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
