"""--kernel NAME: one coherent Linux release per run (emukern/kernel/versions.py).

What is checked: the table itself (names shared with the real-kernel profiles, the four changes
"before" where a release lacks them, the default), that a run models the release it names
(policies, report and --json), that --policy still overrides, and that bad names are clear errors.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.errors import ConfigError
from emukern.kernel.policies import SWITCHES
from emukern.kernel.versions import AFTER, ARCH_OF, BEFORE, DEFAULT, KERNELS, kernel_version
from emukern.oracle.kernels import PROFILES

ROOT = Path(__file__).resolve().parents[3]
HELLO = {"riscv64": ROOT / "guest_asm/riscv/hello.S", "arm64": ROOT / "guest_asm/arm64/hello.S"}


def test_real_kernel_profiles_are_the_same_table() -> None:
    # one table: every real kernel `emukern linux` boots is a modelled release with the same changes
    for name, prof in PROFILES.items():
        if prof.local:
            # built here with a series no release has (emukern.oracle.build): it follows the
            # release it is built from, with the series' switch values on top
            base = KERNELS[prof.emukern_kernel]
            assert base.arch == prof.arch and base.linux == prof.linux
            assert set(prof.policies) <= set(base.policies)
            continue
        v = KERNELS[name]
        assert v.arch == prof.arch and v.linux == prof.linux and v.real == name
        assert prof.policies == v.policies


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_release_sets_exactly_its_arch_changes(name: str) -> None:
    v = KERNELS[name]
    assert set(v.policies) == {c for c, a in ARCH_OF.items() if a == v.arch}
    for change, value in v.policies.items():
        assert value in SWITCHES[change].values
    if not v.patched:
        # no Debian release and not 7.3-rc1 has Mark Brown's SVE series or the two RISC-V patches
        for change in ("arm64-sve", "riscv-vstate-sysctl", "riscv-discard"):
            if change in v.policies:
                assert v.policies[change] == BEFORE[change], (name, change)
    else:
        shipped = KERNELS[v.base]
        # the +changes flavour never takes a change away
        for change, value in shipped.policies.items():
            if value == AFTER[change]:
                assert v.policies[change] == value


def test_mrs_rework_is_in_6_2_and_later_only() -> None:
    # "arm64: rework EL0 MRS emulation" (Mark Rutland) was merged for 6.2
    assert KERNELS["debian-12-arm64"].policies["arm64-mrs"] == "hook-list"
    assert KERNELS["debian-12-arm64"].mrs == "hook-list"
    assert KERNELS["debian-13-arm64"].policies["arm64-mrs"] == "direct"
    assert KERNELS["debian-12-arm64+changes"].policies["arm64-mrs"] == "direct"


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_default_is_newest_with_the_changes(arch: str) -> None:
    v = kernel_version(None, arch)
    assert v.name == DEFAULT[arch] and v.patched and v.linux == "7.3-rc1"
    # the switches' own defaults are the "after" values: the default kernel agrees with them
    assert v.policies == {c: SWITCHES[c].default for c in v.policies}


@pytest.mark.parametrize("name", ["debian-12-arm64", "debian-13-arm64+changes", "debian-13-riscv64"])
def test_run_models_and_reports_the_kernel(name: str) -> None:
    v = KERNELS[name]
    r = Machine(kernel=name).load(HELLO[v.arch]).run()
    assert r.exit_status == 0 and r.stdout.startswith(b"Hello from")
    assert r.config["kernel"] == name
    assert r.policies == v.policies
    assert r.to_json()["config"]["kernel"] == name


def test_default_run_names_the_default_kernel() -> None:
    r = Machine().load(HELLO["riscv64"]).run()
    assert r.config["kernel"] == "linux-7.3-riscv64+changes"


def test_policy_overrides_the_kernel() -> None:
    r = Machine(kernel="debian-12-arm64", policies={"arm64-mrs": "direct"}).load(HELLO["arm64"]).run()
    assert r.policies == {"arm64-mrs": "direct", "arm64-sve": "legacy"}


@pytest.mark.parametrize("name, arch, msg", [
    ("debian-12-arm64", "riscv64", "is an arm64 kernel"),
    ("debian-11-arm64", "arm64", "unknown kernel"),
])
def test_bad_kernel_is_a_clear_error(name: str, arch: str, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg) as ei:
        Machine(kernel=name).load(HELLO[arch])
    assert ei.value.hint


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "emukern.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_cli_run_kernel_and_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    p = _cli("run", "--kernel", "debian-13-arm64", "--json", str(out), str(HELLO["arm64"]))
    assert p.returncode == 0, p.stderr
    assert "kernel=debian-13-arm64" in p.stderr                  # the summary names it
    assert json.loads(out.read_text())["config"]["kernel"] == "debian-13-arm64"


def test_cli_bad_kernel() -> None:
    p = _cli("run", "--kernel", "debian-12-arm64", str(HELLO["riscv64"]))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "is an arm64 kernel" in p.stderr and "hint" in p.stderr


def test_info_kernels_lists_every_release() -> None:
    p = _cli("info", "kernels")
    assert p.returncode == 0, p.stderr
    for name in KERNELS:
        assert name in p.stdout
    assert "*linux-7.3-arm64+changes" in p.stdout and "*linux-7.3-riscv64+changes" in p.stdout
