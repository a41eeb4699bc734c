"""Core files (kernel/coredump.py): a core-action signal with RLIMIT_CORE >= a page writes an ELF
core named ``core`` in the working directory (a writable guest root), which gdb-multiarch reads
like a Linux core; the wait status says "core dumped" only when the whole core was written.

The layout is checked against fs/binfmt_elf.c's elf_core_dump (the note order, struct
elf_prstatus / elf_prpsinfo sizes of the 64-bit ABIs, coredump_filter 0x33) rather than against
qemu-user, whose cores come from its own writer, not Linux's."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from emukern.api import Machine

ARCHES = ["riscv64", "arm64"]
EM = {"riscv64": "EM_RISCV", "arm64": "EM_AARCH64"}
PRSTATUS_SIZE = {"riscv64": 376, "arm64": 392}      # sizeof(struct elf_prstatus)
FPREG_SIZE = {"riscv64": 264, "arm64": 528}         # __riscv_d_ext_state (padded), user_fpsimd_state
MARKER = 0x1234ABCD5678EF01


def _run(cguest, arch: str, root: Path | None, *args: str, flags: tuple[str, ...] = ()):
    elf = cguest("coredump", arch, *flags)
    m = Machine(root=str(root), root_rw=True) if root is not None else Machine()
    return elf, m.load(elf, list(args)).run()


def _notes(core: Path) -> list[tuple[str, object, bytes]]:
    """(name, type, descriptor bytes) of every note, in file order (pyelftools finds them; the
    descriptor is cut from the file at the note's offset: name and descriptor 4-byte aligned)."""
    data = core.read_bytes()
    out = []
    with open(core, "rb") as fh:
        for seg in ELFFile(fh).iter_segments():
            if seg["p_type"] == "PT_NOTE":
                for n in seg.iter_notes():
                    off = n["n_offset"] + 12 + ((n["n_namesz"] + 3) & ~3)
                    out.append((n["n_name"], n["n_type"], data[off:off + n["n_descsz"]]))
    return out


@pytest.mark.parametrize("arch", ARCHES)
def test_core_file_layout(cguest, arch, tmp_path):
    elf, r = _run(cguest, arch, tmp_path, "unlimited")
    assert r.message == "killed by SIGSEGV (core dumped)"
    core = tmp_path / "core"
    assert core.is_file() and (core.stat().st_mode & 0o777) == 0o600
    with open(core, "rb") as fh:
        f = ELFFile(fh)
        assert f["e_type"] == "ET_CORE" and f["e_machine"] == EM[arch]
        loads = [(s["p_vaddr"], s["p_memsz"], s["p_filesz"]) for s in f.iter_segments() if s["p_type"] == "PT_LOAD"]
    # one PT_LOAD per mapping of the address space (the process's /proc/self/maps at the end)
    assert len(loads) >= 4 and all(size % 4096 == 0 for _, size, _ in loads)
    notes = _notes(core)
    assert [(nm, t) for nm, t, _ in notes[:5]] == [("CORE", "NT_PRSTATUS"), ("CORE", "NT_PRPSINFO"),
                                                    ("CORE", "NT_SIGINFO"), ("CORE", "NT_AUXV"),
                                                    ("CORE", "NT_FPREGSET")]
    if arch == "arm64":
        # the aarch64_regsets after NT_PRFPREG, in that table's order (as Debian's kernels write
        # them: tests/oracle/test_oracle_coredump.py); emukern's default CPU has SVE and PAC
        assert [(nm, t) for nm, t, _ in notes[5:]] == [("LINUX", t) for t in (
            0x401, 0x402, 0x403, 0x404, 0x405, 0x406, 0x40A, 0x407, 0x408, 0x409)]
        sve = notes[9][2]
        size, max_size, vl, max_vl, flags = struct.unpack_from("<IIHHH", sve)
        vq = vl // 16
        # SVE_PT_SIZE(vq, SVE): header, then SVE_PT_SVE_SIZE: Z, P, FFR, FPSR at the next
        # 16-byte boundary, FPCR, the whole rounded up to 16 (uapi/asm/ptrace.h)
        fpsr = (16 + 32 * vq * 16 + 17 * vq * 2 + 15) & ~15
        sve_size = 16 + ((fpsr + 8 - 16 + 15) & ~15)
        assert max_size == sve_size == {4: 2224}[vq]
        assert size == len(sve) and vl == max_vl == 512 // 8                # sve_vls 128,256,512
        assert size == (sve_size if flags & 1 else 16 + 528)                # SVE or FPSIMD form
        assert struct.unpack("<i", notes[8][2])[0] == -1                    # syscallno: a fault
    else:
        assert len(notes) == 5
    pr = notes[0][2]
    assert len(pr) == PRSTATUS_SIZE[arch] and len(notes[4][2]) == FPREG_SIZE[arch]
    signo, code, _errno, cursig = struct.unpack_from("<iiih", pr, 0)
    pid, ppid = struct.unpack_from("<ii", pr, 32)
    assert (signo, cursig, pid, ppid) == (11, 11, 1, 0)
    pc = struct.unpack_from("<Q", pr, 112 + (32 * 8 if arch == "arm64" else 0))[0]
    assert pc == r.fault["pc"]                       # pr_reg: riscv pc first, arm64 after x0-x30 and sp
    si = notes[2][2]
    assert struct.unpack_from("<iii", si, 0) == (11, 0, 1)           # SIGSEGV, errno 0, SEGV_MAPERR
    assert struct.unpack_from("<Q", si, 16)[0] == 16                 # si_addr
    psinfo = notes[1][2]
    assert len(psinfo) == 136 and psinfo[1:2] == b"R"
    assert psinfo[56:136].rstrip(b"\0").endswith(b" unlimited")     # pr_psargs
    auxv = notes[3][2]
    pairs = dict(struct.iter_unpack("<QQ", auxv))
    with open(elf, "rb") as fh:
        assert pairs[9] == ELFFile(fh)["e_entry"]                    # AT_ENTRY


@pytest.mark.skipif(shutil.which("gdb-multiarch") is None, reason="gdb-multiarch is not installed")
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("how", ["segv", "thread"])
def test_gdb_reads_the_core(cguest, arch, how, tmp_path):
    """What a user does with it: gdb shows where it died, every thread, and the program's data."""
    elf, r = _run(cguest, arch, tmp_path, "unlimited", how, flags=("-g",))
    assert r.message == "killed by SIGSEGV (core dumped)"
    out = subprocess.run(["gdb-multiarch", "-batch", "-nx", "-ex", "info registers pc", "-ex", "thread apply all bt",
                          "-ex", "p/x marker", str(elf), str(tmp_path / "core")],
                         capture_output=True, text=True, timeout=120).stdout
    assert "Program terminated with signal SIGSEGV" in out
    assert f"pc             {r.fault['pc']:#x}" in out
    assert "in crash_here (depth=" in out and f"$1 = {MARKER:#x}" in out
    if arch == "arm64":         # gdb takes the SVE vector length from NT_ARM_SVE
        vg = subprocess.run(["gdb-multiarch", "-batch", "-nx", "-ex", "p $vg", str(elf), str(tmp_path / "core")],
                            capture_output=True, text=True, timeout=120).stdout
        assert "$1 = 8" in vg, vg                                         # VL 512 = 8 granules
    if how == "thread":
        assert "(LWP 2)" in out and "(LWP 1)" in out and "in worker (" in out and "__pthread_clockjoin_ex" in out
    else:
        assert "in main (" in out


@pytest.mark.parametrize("arch", ARCHES)
def test_no_core_without_a_writable_root_or_limit(cguest, arch, tmp_path):
    """A read-only (or no) root is a file system the core cannot go to; RLIMIT_CORE below a page
    is no core at all: in both cases no file and no 'core dumped' (WCOREDUMP stays clear)."""
    _elf, r = _run(cguest, arch, None, "unlimited")
    assert r.message == "killed by SIGSEGV"
    _elf, r = _run(cguest, arch, tmp_path, "4095")
    assert r.message == "killed by SIGSEGV" and not (tmp_path / "core").exists()
    _elf, r = _run(cguest, arch, tmp_path, "0", "abort")
    assert r.message == "killed by SIGABRT" and not (tmp_path / "core").exists()


@pytest.mark.parametrize("arch", ARCHES)
def test_core_truncated_at_the_limit_is_not_dumped(cguest, arch, tmp_path):
    _elf, r = _run(cguest, arch, tmp_path, "8192")
    assert r.message == "killed by SIGSEGV"                     # dump_emit failed: no WCOREDUMP
    core = tmp_path / "core"
    assert 0 < core.stat().st_size <= 8192 and core.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHES)
def test_existing_core_link_is_replaced_not_followed(cguest, arch, tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    os.symlink("precious", tmp_path / "core")
    _elf, r = _run(cguest, arch, tmp_path, "unlimited")
    assert r.message == "killed by SIGSEGV (core dumped)"
    assert target.read_text() == "keep me\n"
    assert not (tmp_path / "core").is_symlink() and (tmp_path / "core").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.parametrize("arch", ARCHES)
def test_core_is_deterministic(cguest, arch, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    _run(cguest, arch, a, "unlimited", "thread")
    _run(cguest, arch, b, "unlimited", "thread")
    assert (a / "core").read_bytes() == (b / "core").read_bytes()


def test_run_summary_says_core_dumped(cguest, tmp_path, monkeypatch, capsys):
    from emukern.cli import main
    monkeypatch.setenv("EMUKERN_NO_FORK", "1")
    elf = cguest("coredump", "riscv64")
    rc = main(["run", "--root", str(tmp_path), "--root-rw", str(elf), "unlimited"])
    err = capsys.readouterr().err
    assert rc == 139 and "killed by SIGSEGV (core dumped) (status 139)" in err, err
    rc = main(["run", str(elf), "unlimited"])
    err = capsys.readouterr().err
    assert rc == 139 and "killed by SIGSEGV (status 139)" in err and "core dumped" not in err, err
