"""The vDSO (kernel/vdso): the image each arch builds from guest_asm/vdso/, what exec maps and
puts in the auxv, --vdso auto/on/off, and a C probe that finds the functions through
AT_SYSINFO_EHDR, calls them directly and through glibc, and returns from a handler through the
vDSO's rt_sigreturn."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from emukern.api import Machine
from emukern.kernel import vdso
from emukern.kernel.arch.arm64.arch import Arm64Arch
from emukern.kernel.arch.riscv.arch import RiscvArch
from emukern.loader.stack import AT_SYSINFO_EHDR
from emukern.pytest_plugin import GUEST_ASM

ARCHES = {"arm64": Arm64Arch, "riscv64": RiscvArch}
SYMBOLS = {
    "arm64": {"__kernel_rt_sigreturn", "__kernel_gettimeofday", "__kernel_clock_gettime",
              "__kernel_clock_getres"},
    "riscv64": {"__vdso_rt_sigreturn", "__vdso_gettimeofday", "__vdso_clock_gettime",
                "__vdso_clock_getres", "__vdso_getcpu", "__vdso_flush_icache", "__vdso_riscv_hwprobe"},
}
VERSION = {"arm64": "LINUX_2.6.39", "riscv64": "LINUX_4.15"}     # each arch's vdso.lds.S


def _image(arch: str) -> vdso.VdsoImage:
    a = ARCHES[arch]
    return vdso.vdso_image(GUEST_ASM / "vdso" / a.VDSO_SOURCE, arch, a.VDSO_VERSION,
                           a.VDSO_SYMBOLS, a.VDSO_SIGRETURN)


@pytest.mark.parametrize("arch", ARCHES)
def test_image_is_a_versioned_shared_object(arch):
    img = _image(arch)
    f = ELFFile(io.BytesIO(img.data))
    assert f["e_type"] == "ET_DYN" and f["e_entry"] == 0
    kinds = [p["p_type"] for p in f.iter_segments()]
    assert kinds == ["PT_LOAD", "PT_DYNAMIC", "PT_NOTE"]          # one PT_LOAD, as Linux links it
    tags = {t.entry.d_tag for t in f.get_section_by_name(".dynamic").iter_tags()}
    assert {"DT_HASH", "DT_GNU_HASH", "DT_SYMTAB", "DT_STRTAB", "DT_VERSYM", "DT_VERDEF",
            "DT_SONAME"} <= tags
    assert set(img.symbols) == SYMBOLS[arch]
    versions = [v.name for v, _ in f.get_section_by_name(".gnu.version_d").iter_versions()
                for v in [next(_)]]
    assert versions == ["linux-vdso.so.1", VERSION[arch]]
    note = next(next(iter(s.iter_notes())) for s in f.iter_segments() if s["p_type"] == "PT_NOTE")
    assert note["n_name"] == "Linux" and note["n_type"] == 0
    # the trampoline opens the second page: exec keeps it at the old trampoline's address
    assert img.symbols[ARCHES[arch].VDSO_SIGRETURN] == 0x1000 and img.size == 0x2000
    if arch == "riscv64":
        assert f["e_flags"] & 0x6 == 0x4                       # EF_RISCV_FLOAT_ABI_DOUBLE


def _mm_of(m):
    return m.kernel.tasks[1].mm


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("mode, mapped", [("on", True), ("off", False), ("auto", False)])
def test_asm_guest_gets_the_vdso_only_when_asked(arch, mode, mapped):
    """--vdso auto leaves hand-written assembly guests as they were (no notes, no interpreter)."""
    sub = "riscv" if arch == "riscv64" else "arm64"
    m = Machine(arch=arch, vdso=mode).load(GUEST_ASM / sub / "hello.S")
    mm = _mm_of(m)
    names = [x.name for x in mm.mappings]
    auxv = dict(mm.saved_auxv)
    tramp = next(x for x in mm.mappings if x.name == "[vdso]")
    if mapped:
        vvar = next(x for x in mm.mappings if x.name == "[vvar]")
        assert names.index("[vvar]") + 1 == names.index("[vdso]") and vvar.end == tramp.start
        assert (vvar.size, vvar.perms, tramp.size, tramp.perms) == (0x2000, "r--", 0x2000, "r-x")
        assert auxv[AT_SYSINFO_EHDR] == tramp.start and mm.saved_auxv[0][0] == AT_SYSINFO_EHDR
        assert m.read(tramp.start, 4) == b"\x7fELF"
    else:
        assert "[vvar]" not in names and AT_SYSINFO_EHDR not in auxv and tramp.size == 0x1000
    assert m.run().stdout.startswith(b"Hello")


@pytest.mark.parametrize("arch", ARCHES)
def test_asm_guest_records_do_not_change_under_auto(arch):
    sub = "riscv" if arch == "riscv64" else "arm64"
    out = []
    for mode in ("auto", "off"):
        m = Machine(arch=arch, vdso=mode, trace_traps=True).load(GUEST_ASM / sub / "sig_loop.S", ["5"])
        r = m.run()
        out.append((r.to_json(), [str(t) for t in m.trap_log]))
    assert out[0] == out[1]


def _probe(cguest, arch, tmp_path, *argv, mode="auto"):
    exe = cguest("vdso_probe", arch)
    shutil.copy(exe, tmp_path / "probe")
    m = Machine(arch=arch, vdso=mode, root=str(tmp_path)).load(tmp_path / "probe", list(argv))
    return m, m.run()


@pytest.mark.parametrize("arch", ARCHES)
def test_c_probe_calls_the_vdso(cguest, arch, tmp_path):
    m, r = _probe(cguest, arch, tmp_path)
    assert r.exit_status == 0, r.stdout
    lines = r.stdout.decode().splitlines()
    want = ["AT_SYSINFO_EHDR present", "note Linux type 0 code %#x" % vdso.linux_version_code(m.kernel),
            "loads 1 hash 1 versym 1 verdef 1", "symbols 1 1 1 1", "monotonic rets 0 0 0 ordered 1",
            "getres 0 0.000000001", "gettimeofday 0 sec 1767225600", "bad clock -22"]
    if arch == "riscv64":
        want += ["getcpu 0 cpu 0 node 0", "hwprobe 0 key 0", "flush_icache 0"]
    assert lines == want + ["signal 10 returned"]
    # glibc's clock_gettime and the handler's return went through the vDSO's code
    from emukern.kernel.signal.delivery import sigtramp_addr
    tramp = sigtramp_addr(m.kernel)                       # the image's second page opens with it
    assert next(t for t in m.trap_log if "rt_sigreturn" in str(t)).pc == tramp + 4   # its svc/ecall
    calls = [(t.pc - tramp, str(t).split(" ")[0]) for t in m.trap_log
             if any(f in str(t) for f in ("clock_gettime:", "clock_getres:", "gettimeofday:"))]
    # the vDSO's clock_gettime directly, glibc's clock_gettime (through the vDSO), the raw
    # syscall from the program, clock_getres and gettimeofday (vDSO), the bad clock (vDSO):
    # each vDSO function's svc/ecall is 4 bytes into its 16-byte slot after the trampoline
    assert [o for o, _ in calls if 0 <= o < 0x1000] == [0x14, 0x14, 0x34, 0x24, 0x14]
    assert len(calls) == 6

@pytest.mark.parametrize("arch", ARCHES)
def test_c_probe_without_the_vdso(cguest, arch, tmp_path):
    _, r = _probe(cguest, arch, tmp_path, mode="off")
    assert r.exit_status == 1 and r.stdout == b"AT_SYSINFO_EHDR absent\n"


@pytest.mark.parametrize("arch", ARCHES)
def test_fork_keeps_and_exec_remakes_the_mappings(cguest, arch, tmp_path):
    _, r = _probe(cguest, arch, tmp_path, "maps", "/probe")
    assert r.exit_status == 0
    lines = r.stdout.decode().splitlines()
    want = ["3ffe7fb000-3ffe7fd000 r--p 00000000 00:00 0".ljust(73) + "[vvar]",
            "3ffe7fd000-3ffe7ff000 r-xp 00000000 00:00 0".ljust(73) + "[vdso]"]
    assert lines == [f"{who} {w}" for who in ("parent", "child", "exec'd") for w in want]


@pytest.mark.parametrize("arch", ARCHES)
def test_core_dump_holds_the_vdso(arch):
    from emukern.kernel.signal.coredump import _dump_size
    m = Machine(arch=arch, vdso="on").load(GUEST_ASM / ("riscv" if arch == "riscv64" else "arm64") / "hello.S")
    for x in _mm_of(m).mappings:
        if x.name in ("[vvar]", "[vdso]"):
            assert _dump_size(x, b"") == x.size
