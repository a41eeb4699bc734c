"""Start-up is structural: a short run imports what its own machine needs and no more.  Checked
by module names in a fresh interpreter (sys.modules after a whole `emukern run -q hello.S`), not
by timing, so the check holds on a loaded machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from emukern.cli import main
rc = main(["run", "-q", sys.argv[1]])
print("MODULES=" + json.dumps(sorted(sys.modules)))
sys.exit(rc)
"""

# what no run of a short .S needs: the debugger, sweep, the oracle, the selftests, the
# benchmarks, rich (only the summary prints with it), pyelftools (symbols are read with struct),
# and the plotting and disassembly libraries
NEVER = ("emukern.debug", "emukern.sweep", "emukern.oracle", "emukern.selftests", "emukern.bench",
         "rich", "elftools", "capstone", "matplotlib", "pandas", "dask")
OTHER_ARCH = {"riscv64": ("emukern.machine.cpu_arm64", "emukern.kernel.arch.arm64"),
              "arm64": ("emukern.machine.cpu_riscv", "emukern.kernel.arch.riscv")}


def modules_after_run(arch: str) -> list[str]:
    hello = ROOT / "guest_asm" / ("riscv" if arch == "riscv64" else "arm64") / "hello.S"
    env = dict(os.environ, EMUKERN_NO_FORK="1", PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", PROBE, str(hello)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("MODULES="))
    return json.loads(line[len("MODULES="):])


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_a_run_imports_only_its_own_architecture(arch):
    mods = modules_after_run(arch)
    other = [m for m in mods if m.startswith(OTHER_ARCH[arch])]
    assert not other, f"a {arch} run imported the other architecture: {other}"
    unneeded = [m for m in mods if m.split(".")[0] in NEVER or m.startswith(NEVER)]
    assert not unneeded, f"a {arch} run imported modules it does not need: {unneeded}"
    # the run itself did happen on that architecture
    own = "emukern.machine.cpu_riscv" if arch == "riscv64" else "emukern.machine.cpu_arm64"
    assert own in mods


def test_the_default_realtime_shortcut_is_that_time():
    from emukern import config
    assert config._DEFAULT_REALTIME_NS == config.parse_realtime(config.DEFAULT_REALTIME + " ")
