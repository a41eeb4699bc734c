"""arm64 pointer authentication (kernel/arch/arm64/pointer_auth.py, Arm64Cpu.enable_pointer_auth /
load_ptrauth_keys): guest_asm/c/pac_probe.c signs and authenticates, forks, execs itself,
resets and disables keys, reads and writes the PAC regsets of a traced copy, and returns through
a corrupted signed return address; its expected output (below) is what Linux gives (the lines
qemu-user can run print the same under qemu-aarch64 -cpu max)."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from emukern.api import Machine

FLAGS = ("-march=armv8.3-a", "-mbranch-protection=pac-ret")

EXPECTED = """\
pacia signs: 1
only PAC bits 54:48: 1
autia restores: 1
autia wrong modifier: error code in bits 54:53: 0x1
pacda differs from pacia: 1
pacga nonzero low half zero: 1 1
victim(0) returns: 0
GET_ENABLED_KEYS: 15
GET_ENABLED_KEYS bad arg: -1 22
fork child signs the same: 1
exec'd children sign differently from us: 1 1
two exec'd children differ: 1
RESET_KEYS bad key: -1 22
RESET_KEYS arg3: -1 22
RESET_KEYS APIB: 0
  APIA signature kept: 1
RESET_KEYS APIA: 0
  APIA signature changed: 1  APDA kept: 1
RESET_KEYS 0 (all): 0
  APIA and APDA changed: 1 1
SET_ENABLED_KEYS enabled not in keys: -1 22
SET_ENABLED_KEYS APGA: -1 22
SET_ENABLED_KEYS arg4: -1 22
SET_ENABLED_KEYS IA off: 0
  GET_ENABLED_KEYS: 14  pacia is a NOP: 1
SET_ENABLED_KEYS IA on: 0
  GET_ENABLED_KEYS: 15  pacia signs: 1
PAC_MASK: 0 len 16 data 0x7f000000000000 insn 0x7f000000000000
PAC_MASK set: -1 Operation not supported
PAC_ENABLED_KEYS: 0 len 8 0xf
PAC_ENABLED_KEYS set 1: 0 now 0x1
PAC_ENABLED_KEYS set 0x10: -1 Invalid argument
PACA_KEYS: 0 len 64 nonzero words 8 distinct 1
PACA_KEYS set: 0 read back equal 1
PACG_KEYS: 0 len 16
PACA_KEYS len 24: -1 Invalid argument
tracee after SETREGSET: APIA signature changed 1, pacda a NOP 1
corrupted return address: signal 11
"""


def _root(cguest, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(cguest("pac_probe", "arm64", *FLAGS), root / "pac_probe")
    return root


@pytest.mark.parametrize("cpus", [1, 2])
def test_pac_probe_as_on_linux(cguest, tmp_path, cpus):
    root = _root(cguest, tmp_path)
    r = Machine(arch="arm64", cpus=cpus, root=str(root)).load(root / "pac_probe", ["/pac_probe"]).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED


def test_same_run_same_signatures(cguest, tmp_path):
    """The keys come from the machine's deterministic source: a run twice signs alike."""
    root = _root(cguest, tmp_path)
    outs = [Machine(arch="arm64", root=str(root)).load(root / "pac_probe", ["sig"]).run().stdout
            for _ in range(2)]
    assert outs[0] == outs[1] and int(outs[0], 16) != 0x0000AAAABBBB1000


def _notes(core: Path) -> dict[int, bytes]:
    from elftools.elf.elffile import ELFFile
    data = core.read_bytes()
    out = {}
    with open(core, "rb") as fh:
        for seg in ELFFile(fh).iter_segments():
            if seg["p_type"] == "PT_NOTE":
                for n in seg.iter_notes():
                    if n["n_name"] == "LINUX":
                        off = n["n_offset"] + 12 + ((n["n_namesz"] + 3) & ~3)
                        t = n["n_type"] if isinstance(n["n_type"], int) else n["n_type"]
                        out[_NT.get(t, t)] = data[off:off + n["n_descsz"]]
    return out


_NT = {"NT_ARM_PAC_MASK": 0x406, "NT_ARM_PACA_KEYS": 0x407, "NT_ARM_PACG_KEYS": 0x408,
       "NT_ARM_PAC_ENABLED_KEYS": 0x40A}


def test_core_notes_hold_the_keys(cguest, tmp_path):
    """The core's NT_ARM_PACA_KEYS / NT_ARM_PACG_KEYS are the keys PTRACE_GETREGSET read from a
    forked copy (fork keeps the keys), and the same bytes on a second run."""
    root = _root(cguest, tmp_path)
    cores = []
    for _ in range(2):
        r = Machine(arch="arm64", root=str(root), root_rw=True).load(root / "pac_probe", ["core"]).run()
        assert r.message == "killed by SIGABRT (core dumped)", r.message
        paca, pacg = r.stdout.decode().split()
        notes = _notes(root / "core")
        words = struct.unpack("<8Q", notes[0x407])
        assert "".join(f"{w:016x}" for w in words) == paca and all(words)
        assert "".join(f"{w:016x}" for w in struct.unpack("<2Q", notes[0x408])) == pacg
        assert notes[0x406] == struct.pack("<QQ", 0x007F_0000_0000_0000, 0x007F_0000_0000_0000)
        assert notes[0x40A] == struct.pack("<Q", 0xF)
        cores.append((root / "core").read_bytes())
        (root / "core").unlink()
    assert cores[0] == cores[1]


def test_keys_loaded_only_when_they_change():
    """ptrauth_keys_install_user's cost: the CPU writes the key registers and SCTLR_EL1 only
    when they differ from what it holds."""
    from emukern.machine.clock import Clock
    from emukern.machine.cpu_arm64 import Arm64Cpu, PAUTH_KEY_REGS, SCTLR_EL1, SCTLR_ENIA
    cpu = Arm64Cpu(0, Clock())
    cpu.enable_pointer_auth()
    keys = (1 << 100 | 5, 2, 3, 4, 5)
    assert cpu.load_ptrauth_keys(keys, SCTLR_ENIA)
    assert cpu.cpr_read(PAUTH_KEY_REGS[0][0]) == 5 and cpu.cpr_read(PAUTH_KEY_REGS[0][1]) == 1 << 36
    assert cpu.cpr_read(SCTLR_EL1) & SCTLR_ENIA
    assert not cpu.load_ptrauth_keys(keys, SCTLR_ENIA)
    assert cpu.load_ptrauth_keys(keys, 0) and not cpu.cpr_read(SCTLR_EL1) & SCTLR_ENIA


HWCAP_PROBE = r'''
#include <errno.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
int main(void) {
    unsigned long h = getauxval(AT_HWCAP), isar1;
    printf("paca %lu pacg %lu\n", h >> 30 & 1, h >> 31 & 1);
    errno = 0; printf("reset %d %d\n", prctl(54, 0, 0, 0, 0), errno);
    errno = 0; printf("get %d %d\n", prctl(61, 0, 0, 0, 0), errno);
    errno = 0; printf("set %d %d\n", prctl(60, 1, 0, 0, 0), errno);
    __asm__("mrs %0, ID_AA64ISAR1_EL1" : "=r"(isar1));
    printf("APA %lu API %lu GPA %lu GPI %lu\n", isar1 >> 4 & 15, isar1 >> 8 & 15, isar1 >> 24 & 15, isar1 >> 28 & 15);
    return 0;
}
'''


@pytest.mark.parametrize("has_pac, out", [
    (True, "paca 1 pacg 1\nreset 0 0\nget 15 0\nset 0 0\nAPA 1 API 0 GPA 1 GPI 0\n"),
    # --no-pac (arm64.nopauth): the ID registers, the HWCAPs and the prctls all say no PAC
    (False, "paca 0 pacg 0\nreset -1 22\nget -1 22\nset -1 22\nAPA 0 API 0 GPA 0 GPI 0\n"),
])
def test_hwcaps_id_registers_and_prctl_agree(cguest, tmp_path, has_pac, out):
    src = tmp_path / "hw.c"
    src.write_text(HWCAP_PROBE)
    r = Machine(arch="arm64", has_pac=has_pac).load(cguest(src, "arm64"), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == out


def test_no_pac_leaves_pointers_unsigned_and_no_core_notes(cguest, tmp_path):
    root = _root(cguest, tmp_path)
    r = Machine(arch="arm64", root=str(root), has_pac=False).load(root / "pac_probe", ["sig"]).run()
    assert int(r.stdout, 16) == 0x0000AAAABBBB1000
    r = Machine(arch="arm64", root=str(root), root_rw=True, has_pac=False).load(root / "pac_probe", ["core"]).run()
    assert r.message == "killed by SIGABRT (core dumped)", r.message
    assert not set(_notes(root / "core")) & {0x406, 0x407, 0x408, 0x40A}


def _linux_pauth_selftest(tmp_path: Path) -> Path:
    """Linux's tools/testing/selftests/arm64/pauth (pac + exec_target), built as its Makefile
    does, from the kernel source the selftest suite uses (skips without it)."""
    import subprocess
    from emukern.selftests.build import build_root
    from emukern.selftests.source import SourceError, fetch_debian
    cc = shutil.which("aarch64-linux-gnu-gcc")
    if cc is None:
        pytest.skip("aarch64-linux-gnu-gcc is not installed")
    try:
        src = fetch_debian()
        inc = src.headers("arm64", build_root(src))
    except (SourceError, OSError) as e:
        pytest.skip(f"no Linux source for the selftest: {e}")
    d = src.selftests / "arm64" / "pauth"
    out = tmp_path / "root"
    out.mkdir()
    base = [cc, "-static", f"-I{src.selftests}", f"-I{inc}", "-mbranch-protection=pac-ret"]
    for cmd in ([*base, "-c", str(d / "pac_corruptor.S"), "-o", str(tmp_path / "pac_corruptor.o"), "-march=armv8.3-a"],
                [*base, "-c", str(d / "helper.c"), "-o", str(tmp_path / "helper.o"), "-march=armv8.3-a"],
                [*base, str(d / "exec_target.c"), str(tmp_path / "helper.o"), "-o", str(out / "exec_target"),
                 "-march=armv8.2-a"],
                [*base, str(d / "pac.c"), str(tmp_path / "pac_corruptor.o"), str(tmp_path / "helper.o"),
                 "-o", str(out / "pac"), "-march=armv8.2-a"]):
        subprocess.run(cmd, check=True, capture_output=True)
    return out


@pytest.mark.parametrize("cpus, has_pac", [(1, True), (2, True), (1, False)])
def test_linux_pauth_selftest(tmp_path, cpus, has_pac):
    """arm64/pauth: 7/7 pass with PAC (corrupt_pac, the not-NOP checks, keys per process, new
    keys at exec, keys kept across context switches); with --no-pac all 7 skip themselves."""
    root = _linux_pauth_selftest(tmp_path)
    r = Machine(arch="arm64", cpus=cpus, root=str(root), has_pac=has_pac).load(root / "pac", []).run()
    out = r.stdout.decode()
    assert r.exit_status == 0, out
    assert ("# Totals: pass:7 fail:0 xfail:0 xpass:0 skip:0 error:0" if has_pac
            else "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:7 error:0") in out


def test_el0_cannot_read_or_write_the_keys(tmp_path):
    """The key registers are EL1's: an EL0 MRS/MSR of APIAKeyLo_EL1 is UNDEF (SIGILL), as on
    Linux, with the keys loaded."""
    for insn in ("mrs x0, S3_0_C2_C1_0", "msr S3_0_C2_C1_0, x0"):     # APIAKeyLo_EL1
        src = tmp_path / "k.S"
        src.write_text(f".global _start\n_start:\n    {insn}\n    mov x8, #93\n    svc #0\n")
        r = Machine(arch="arm64").load(src, []).run()
        assert r.signal == 4, (insn, r.message)
