"""The second half of the SVE2 unit (perm2, fp2, mem2) against qemu-aarch64 ``-cpu max``
(QEMU 7.2 implements all of SVE2): every case of sve2b_cases at VL 128, 256 and 512, one
static ELF under both, z0-z7 / p0-p7 / NZCV compared case by case."""
from __future__ import annotations

import shutil
import subprocess

import pytest

import sve2_guest
import sve2b_cases

VLS = (128, 256, 512)


@pytest.fixture(scope="module")
def sve2b_elf(tmp_path_factory):
    from emukern.loader.asm import assemble
    cl = sve2b_cases.cases()
    src = tmp_path_factory.mktemp("sve2b") / "sve2b_cases.S"
    src.write_text(sve2b_cases.guest_source(cl))
    return assemble(src, "arm64"), cl


def _qemu(elf, vl: int) -> bytes:
    q = subprocess.run(["qemu-aarch64", "-cpu", f"max,sve{vl}=on", str(elf)], capture_output=True,
                       timeout=120)
    assert q.returncode == 0, q.stderr
    return q.stdout


@pytest.mark.qemu
@pytest.mark.parametrize("vl", VLS)
def test_every_case_matches_qemu(sve2b_elf, run_guest, vl):
    if shutil.which("qemu-aarch64") is None:
        pytest.skip("qemu-aarch64 not installed")
    elf, cl = sve2b_elf
    want = sve2_guest.split(_qemu(elf, vl), cl, vl // 8)
    r, m = run_guest(elf, sve_vl=vl)
    assert r.exit_status == 0, r.message
    got = sve2_guest.split(r.stdout, cl, vl // 8)
    bad = [name for name, _ in cl if got[name] != want[name]]
    assert not bad, f"{len(bad)} of {len(cl)} cases differ from qemu at VL {vl}: {bad}"
    assert m.kernel.cpus[0].sve2.insns >= len(cl)


def test_case_list_covers_every_class():
    """The differential cases name every entry of this half's modules."""
    from emukern.machine.sve2 import fp2, mem2, perm2
    names = {n.split(".")[0] for n, _ in sve2b_cases.cases() + sve2b_cases.ld1ro_cases()}
    for mod in (perm2, mem2, fp2):
        for insn in mod.INSNS:
            assert insn.name.split(".")[0] in names, insn.name
