"""The SVE2 integer remainder (int_mac, int_narrow, int_complex, int_misc2) against
qemu-aarch64 (QEMU 7.2 implements all of SVE2): every case of sve2a_cases.cases() runs on random
z0-z7 / p0-p7 in one static ELF (sve2_guest's harness), at VL 128, 256 and 512 and with two
operand seeds, under both; z0-z7, p0-p7 and NZCV after each case must be identical.  Also: every
case's instruction words decode to the entry its mnemonic names (LLVM's encoder against the
unit's decoder), and the case list names every entry of the four modules."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import sve2_guest
import sve2a_cases

VLS = (128, 256, 512)
SEEDS = (1, 2)
MODULES = ("int_mac", "int_narrow", "int_complex", "int_misc2")


@pytest.fixture(scope="module")
def sve2a_elfs(tmp_path_factory):
    """{seed: ELF path} of the differential guest, and the case list."""
    from emukern.loader.asm import assemble
    cl = sve2a_cases.cases()
    d = tmp_path_factory.mktemp("sve2a")
    elfs = {}
    for seed in SEEDS:
        src = d / f"sve2a_cases_{seed}.S"
        src.write_text(sve2_guest.guest_source(cl, seed=seed))
        elfs[seed] = assemble(src, "arm64")
    return elfs, cl


def _qemu(elf, vl: int) -> bytes:
    q = subprocess.run(["qemu-aarch64", "-cpu", f"max,sve{vl}=on", str(elf)], capture_output=True,
                       timeout=300)
    assert q.returncode == 0, q.stderr
    return q.stdout


@pytest.mark.qemu
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("vl", VLS)
def test_every_case_matches_qemu(sve2a_elfs, run_guest, vl, seed):
    if shutil.which("qemu-aarch64") is None:
        pytest.skip("qemu-aarch64 not installed")
    elfs, cl = sve2a_elfs
    want = sve2_guest.split(_qemu(elfs[seed], vl), cl, vl // 8)
    r, m = run_guest(elfs[seed], sve_vl=vl, max_insns=10_000_000)
    assert r.exit_status == 0, r.message
    got = sve2_guest.split(r.stdout, cl, vl // 8)
    bad = [name for name, _ in cl if got[name] != want[name]]
    assert not bad, f"{len(bad)} of {len(cl)} cases differ from qemu at VL {vl}: {bad}"
    assert m.kernel.cpus[0].sve2.insns >= len(cl)


def _words(lines: list[str]) -> list[int]:
    from emukern.loader.asm import find_tools  # noqa: F401  (llvm-mc is what assemble uses)
    p = subprocess.run(["llvm-mc", "-triple=aarch64", "-mattr=+sve,+sve2", "-show-encoding"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    encs = re.findall(r"encoding: \[(.*?)\]", p.stdout)
    assert len(encs) == len(lines)
    return [int.from_bytes(bytes(int(x, 16) for x in e.split(",")), "little") for e in encs]


@pytest.mark.skipif(shutil.which("llvm-mc") is None, reason="needs llvm-mc")
def test_cases_decode_to_their_entries():
    from emukern.machine.sve2 import decode
    lines = []
    for _, text in sve2a_cases.cases():
        for line in text.split("\n"):
            line = line.strip()
            if line.split()[0] not in ("mov", "asr"):
                lines.append(line)
    bad = []
    for line, w in zip(lines, _words(lines)):
        insn = decode.lookup(w)
        if insn is None or insn.name.split(".")[0] != line.split()[0]:
            bad.append((line, hex(w), insn and insn.name))
    assert not bad


def test_case_list_covers_every_entry():
    import importlib
    names = {n.split(".")[0] for n, _ in sve2a_cases.cases()}
    for mod in MODULES:
        for insn in importlib.import_module(f"emukern.machine.sve2.{mod}").INSNS:
            assert insn.name.split(".")[0] in names, insn.name
