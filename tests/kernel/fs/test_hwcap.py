"""arm64 HWCAPs derived from the sanitised ID registers (setup_elf_hwcaps), checked against the
ID-register fields the same program reads with MRS; glibc's own CPU probing reaches the MRS
emulation; /proc/cpuinfo and /proc/self/auxv; /proc/sys/abi/sve_default_vector_length."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.kernel.arch.arm64.hwcap import HWCAP_NAMES, hwcap_names

from conftest import install, make_root


def lines(r) -> dict[str, str]:
    out = {}
    for ln in r.stdout.decode().splitlines():
        name, _, rest = ln.partition(" ")
        out[name] = rest.strip()
    return out


@pytest.fixture(scope="module")
def hwcap_exe(cbuild):
    return cbuild("hwcap_mrs", "arm64", static=True)


def test_static_glibc_takes_mrs_traps(cbuild):
    # proc_syscalls has no MRS of its own: the emulated MRS is glibc's start-up CPU probing,
    # which it does only because AT_HWCAP carries HWCAP_CPUID
    exe = cbuild("proc_syscalls", "arm64", static=True)
    m = Machine().load(exe)
    r = m.run()
    assert r.exit_status == 0
    mrs = [t for t in m.trap_log if t.kind == "illegal" and "emulated MRS" in t.decision]
    assert len(mrs) >= 1
    hwcap, _ = m.kernel.arch.elf_hwcaps()
    assert hwcap >> HWCAP_NAMES.index("cpuid") & 1


def test_every_hwcap_agrees_with_the_id_registers(hwcap_exe):
    r = Machine().load(hwcap_exe).run()
    assert r.exit_status == 0, r.stdout.decode()
    got = lines(r)
    assert got["cpuid"] == "hwcap=1"
    assert "all" in got and got["all"] == "agree"
    # the max CPU has these: the bits are set, not just consistently absent
    for name in ("fp", "asimd", "aes", "pmull", "sha1", "sha2", "sha512", "crc32", "atomics", "sve"):
        assert got[name].startswith("hwcap=1"), (name, got[name])


@pytest.mark.parametrize("overrides,cpus,gone", [
    ({0: {"ID_AA64ISAR0_EL1.AES": 0}}, 1, ("aes", "pmull")),
    ({0: {"ID_AA64ISAR0_EL1.AES": 1, "ID_AA64ISAR0_EL1.SHA2": 1}}, 1, ("pmull", "sha512")),
    ({0: {"ID_AA64ISAR0_EL1.ATOMIC": 0, "ID_AA64ISAR0_EL1.CRC32": 0}}, 1, ("atomics", "crc32")),
    ({0: {"ID_AA64PFR0_EL1.FP": 0, "ID_AA64PFR0_EL1.AdvSIMD": 0}}, 1, ("fphp", "asimdhp")),
    # heterogeneous: one CPU without the feature removes it for everybody (LOWER_SAFE)
    ({1: {"ID_AA64ISAR0_EL1.AES": 0}}, 2, ("aes", "pmull")),
    ({2: {"ID_AA64ISAR0_EL1.SHA3": 0, "ID_AA64ISAR1_EL1.LRCPC": 1}}, 3, ("sha3", "ilrcpc")),
])
def test_cpu_id_overrides_change_hwcaps_consistently(hwcap_exe, overrides, cpus, gone):
    r = Machine(cpus=cpus, cpu_id_overrides=overrides).load(hwcap_exe).run()
    got = lines(r)
    assert r.exit_status == 0 and got["all"] == "agree", r.stdout.decode()
    for name in gone:
        assert got[name].startswith("hwcap=0"), (name, got[name])


def test_no_sve_machine_has_no_sve_hwcap(hwcap_exe):
    m = Machine(has_sve=False).load(hwcap_exe)
    r = m.run()
    got = lines(r)
    assert got["all"] == "agree" and got["sve"] == "hwcap=0 field=0 agree"   # MRS says no SVE too
    assert not m.kernel.arch.elf_hwcaps()[0] >> HWCAP_NAMES.index("sve") & 1


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_proc_files(cbuild, tmp_path, arch):
    root = make_root(tmp_path / "root", arch)
    exe = install(root, cbuild("proc_probe", arch), "proc_probe")
    m = Machine(root=str(root), cpus=2).load(root / exe.lstrip("/"), ["a b", "c"])
    r = m.run()
    out = r.stdout.decode()
    assert r.exit_status == 0, (r.message, out)
    assert "auxv: " in out and "agrees with getauxval, AT_BASE set" in out
    assert "maps: libc mapped, stack mapped, heap-or-anon yes" in out
    assert "exe: /bin/proc_probe" in out
    assert f"cmdline: {root}/bin/proc_probe|a b|c|" in out    # argv as given (argv[0]: the CLI path)
    assert "fd link: /proc/cpuinfo" in out
    assert "status: Threads:\t1" in out
    assert "stat: pid=1 comm=(proc_probe) state=R pid-matches=1" in out
    assert out.count("cpuinfo processor") == 2
    if arch == "arm64":
        feats = " ".join(hwcap_names(*m.kernel.arch.elf_hwcaps()))
        assert f"cpuinfo Features\t: {feats}" in out
        assert "cpuid" in feats.split() and "sve" in feats.split()
    else:
        assert "cpuinfo isa\t\t: rv64imafdcv_" in out


def test_sve_default_vector_length(cbuild, tmp_path):
    root = make_root(tmp_path / "root", "arm64")
    exe = install(root, cbuild("proc_probe", "arm64"), "proc_probe")
    r = Machine(root=str(root)).load(root / exe.lstrip("/")).run()
    out = r.stdout.decode()
    assert "default VL: 64\n" in out                # Linux's boot choice: largest <= 64 bytes
    assert "write 48: ok -> 32" in out               # rounded down to a supported length
    assert "write -1: ok -> 64" in out               # -1: the maximum
    assert "write 15: Invalid argument -> 64" in out  # not a valid VL
    assert "write abc: Invalid argument -> 64" in out
    assert "write 16: ok -> 16" in out
    assert "exec'd VL=16" in out                     # the next exec starts with the new default


@pytest.mark.parametrize("vls,default", [((128, 256), 256), ((128, 256, 512, 1024), 512), ((1024, 2048), 1024)])
def test_boot_default_vl(vls, default):
    from emukern.config import MachineConfig
    c = MachineConfig(arch="arm64", sve_vls=vls)
    c.validate()
    assert c.sve_vl == default


# (sets an SVE implementation may have: every power of two up to its maximum, others optional)
@pytest.mark.parametrize("vls", [(128, 256, 512), (128, 256, 512, 1024), (128,), (128, 256, 384, 512, 1024, 2048)])
def test_sve_vls_is_what_a_guest_enumerates(cbuild, vls):
    r = Machine(sve_vls=vls).load(cbuild("sve_probe_vls", "arm64", static=True)).run()
    assert r.exit_status == 0
    got = [int(ln.split()[1]) * 8 for ln in r.stdout.decode().splitlines()]
    assert got == sorted(vls, reverse=True)
