"""The SVE2 unit against qemu-aarch64 (QEMU 7.2 implements all of SVE2): every instruction and
element size of sve2_guest.cases(), at VL 128, 256 and 512, the same static ELF under both;
results compared case by case (z0-z7, p0-p7 and NZCV after the instruction)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

import sve2_guest

VLS = (128, 256, 512)


def _qemu(elf, vl: int) -> bytes:
    q = subprocess.run(["qemu-aarch64", "-cpu", f"max,sve{vl}=on", str(elf)], capture_output=True,
                       timeout=120)
    assert q.returncode == 0, q.stderr
    return q.stdout


@pytest.mark.qemu
@pytest.mark.parametrize("vl", VLS)
def test_every_case_matches_qemu(sve2_elf, run_guest, vl):
    if shutil.which("qemu-aarch64") is None:
        pytest.skip("qemu-aarch64 not installed")
    elf, cl = sve2_elf
    want = sve2_guest.split(_qemu(elf, vl), cl, vl // 8)
    r, m = run_guest(elf, sve_vl=vl)
    assert r.exit_status == 0, r.message
    got = sve2_guest.split(r.stdout, cl, vl // 8)
    bad = [name for name, _ in cl if got[name] != want[name]]
    assert not bad, f"{len(bad)} of {len(cl)} cases differ from qemu at VL {vl}: {bad}"
    # every case's instruction ran in the unit, one retired instruction each
    unit = m.kernel.cpus[0].sve2
    assert unit.insns >= len(cl)


def test_case_list_covers_every_class():
    """The differential cases name every entry of the unit's own modules."""
    from emukern.machine.sve2 import bitperm, crypto, int_arith, int_ops, int_shift
    names = {n.split(".")[0] for n, _ in sve2_guest.cases()}
    for mod in (int_ops, int_arith, int_shift, crypto, bitperm):
        for insn in mod.INSNS:
            assert insn.name.split(".")[0] in names, insn.name
