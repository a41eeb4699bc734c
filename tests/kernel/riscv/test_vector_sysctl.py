"""abi.riscv_v_vstate_discard (seed 000): the /proc file, the CLI/API knob, the boot default, its
absence before the patch or without V, and when a change takes effect.

Reference: the seed 000 patch (arch/riscv/kernel/vector.c riscv_v_vstate_discard_table, mode
0644, proc_dobool; the check at the top of __riscv_v_vstate_discard) and proc_dobool in
kernel/sysctl.c (an int is parsed and stored into a bool)."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.errors import ConfigError
from emukern.kernel import errno as E
from vabi_helpers import GUEST, IMPLS, clobbered, needs_llvm, parse_snaps, pattern, run_prog, words

pytestmark = needs_llvm
KNOB = "abi.riscv_v_vstate_discard"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("initial", (0, 1))
def test_proc_file_and_when_a_write_takes_effect(impl, initial):
    vlen = 128
    r, m = run_prog("vabi_sysctl.S", [], vlen, impl, initial)
    assert r.exit_status == 0, r.message
    res = words(r.stdout[:128])
    assert res[0] >= 3 and res[1] == 2
    assert res[2].to_bytes(8, "little")[:2] == f"{initial}\n".encode()
    assert res[3] == 0                                  # EOF
    assert res[4] >= 3                                  # opened for writing (mode 0644)
    assert res[5] == -E.EINVAL and res[6] == -E.EINVAL  # "x\n", "1abc"
    assert res[7] == -E.ENOENT                          # no such sysctl
    assert res[9] == 2 and res[10] == 1                 # "1\n" and "0" accepted
    assert res[11] == 1                                 # "2": proc_dobool stores true
    assert res[12] == 2 and res[13].to_bytes(8, "little")[:2] == b"1\n"
    assert res[14] >= 3
    assert res[15] == 0                                 # an empty write changes nothing
    assert m.kernel.sysctl.get(KNOB) == 1
    s0, s1, s2, s3, s4 = parse_snaps(r.stdout[128:], vlen)
    p, ones = pattern(0x10, vlen), clobbered(vlen)
    assert s0 == p
    # The write that flips the knob 0 -> 1: eager reads the knob at syscall entry (the old value),
    # deferred on the way out (the new value) — so with deferred the change already applies to
    # the very syscall that makes it.
    if impl == "eager":
        assert s1 == (ones if initial else p)
    else:
        assert s1 == ones
    assert s2 == ones                                   # from the next syscall on: both discard
    # Flipping 1 -> 0: eager clobbered at entry; deferred sees 0 on the way out and keeps P.
    assert s3 == (ones if impl == "eager" else p)
    assert s4 == p


def test_boot_default_and_api(machine_factory):
    m = machine_factory(vlen=128)                       # CONFIG_RISCV_ISA_V_VSTATE_DISCARD=n
    m.load(GUEST / "vabi_state.S", ["1"])
    assert m.kernel.sysctl.get(KNOB) == 0
    e = m.kernel.sysctl.entries[KNOB]
    assert e.mode == 0o644 and e.render() == b"0\n"
    m = machine_factory(vlen=128, vstate_discard_default=True)
    m.load(GUEST / "vabi_state.S", ["1"])
    assert m.kernel.sysctl.get(KNOB) == 1 and m.kernel.sysctl.entries[KNOB].render() == b"1\n"
    # --sysctl overrides the boot default (same validation as a write)
    m = machine_factory(vlen=128, vstate_discard_default=True, sysctls={KNOB: "0"})
    r = m.load(GUEST / "vabi_state.S", ["1"]).run()
    assert r.sysctls[KNOB] == 0
    with pytest.raises(ConfigError):
        Machine(vlen=128, sysctls={KNOB: "maybe"}).load(GUEST / "vabi_state.S", ["1"])


def test_cli_sysctl(tmp_path, capfd):
    import json

    from emukern.cli import main
    out = tmp_path / "run.json"
    rc = main(["run", "-q", "--sysctl", f"{KNOB}=1", "--vlen", "128", "--json", str(out),
               str(GUEST / "vabi_state.S"), "1"])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["sysctls"][KNOB] == 1
    assert main(["run", "-q", "--sysctl", f"{KNOB}=x", str(GUEST / "vabi_state.S"), "1"]) == 2
    assert "invalid value" in capfd.readouterr().err


def test_not_registered_without_v_or_before_the_patch():
    # without V: neither abi knob exists (riscv_v_sysctl_init registers them only with V)
    m = Machine(vlen=128, has_v=False)
    with pytest.raises(ConfigError):
        Machine(vlen=128, has_v=False, sysctls={KNOB: "1"}).load(GUEST / "vabi_state.S", ["1"])
    m.load(GUEST / "vabi_state.S", ["1"])
    assert KNOB not in m.kernel.sysctl.entries
    r = m.run()
    assert r.exit_status == 132                         # no V at all: SIGILL
    # before seed 000 (policy riscv-vstate-sysctl=absent): no file, and syscalls always discard
    r, m = run_prog("vabi_sysctl.S", [], 128, "deferred", None,
                    policies={"riscv-vstate-sysctl": "absent"})
    res = words(r.stdout[:128])
    assert res[0] == -E.ENOENT and res[4] == -E.ENOENT
    r, m = run_prog("vabi_state.S", ["1"], 128, "eager", None, policies={"riscv-vstate-sysctl": "absent"})
    from vabi_helpers import parse_snaps as ps
    s = ps(r.stdout, 128)
    assert s[2] == clobbered(128) and s[3] == clobbered(128)


def test_sysctl_table_parse_like_proc_dobool():
    from emukern.kernel.sysctl import SysctlEntry
    e = SysctlEntry(KNOB, 0)
    ok = {b"0": 0, b"1": 1, b"1\n": 1, b"2": 1, b"-1": 1, b" 0\n": 0, b"0x10": 1, b"00": 0}
    for text, v in ok.items():
        assert e.parse(text) == v, text
    for text in (b"x", b"1abc", b"", b"\n", b"99999999999", b"08"):
        assert e.parse(text) is None, text
