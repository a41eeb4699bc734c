"""Issue 33 item 11: a PT_LOAD segment with no R, W or X flag (file bytes and bss) is mapped
PROT_NONE and the program runs, as Linux's elf_map/elf_load do -- both from the command line
(it was an internal error) and through a guest's execve (it was EFAULT).  Touching that
segment faults (SIGSEGV)."""
from __future__ import annotations

import shutil
import struct

import pytest

from emukern.api import Machine
from emukern.cli import main

ARCHES = ("riscv64", "arm64")
MACHINE = {"riscv64": 243, "arm64": 183}
EXIT42 = {
    "riscv64": struct.pack("<3I", 0x02A00513, 0x05D00893, 0x00000073),   # li a0,42; li a7,93; ecall
    "arm64": struct.pack("<3I", 0xD2800540, 0xD2800BA8, 0xD4000001),     # mov x0,#42; mov x8,#93; svc 0
}
# load the first word of the PROT_NONE segment, then exit(42)
TOUCH = {
    "riscv64": struct.pack("<2I", 0x000402B7, 0x0002A283),                # lui t0,0x40; lw t0,0(t0)
    "arm64": struct.pack("<2I", 0xD2A00089, 0xB9400129),                  # mov x9,#0x40000; ldr w9,[x9]
}


def noperm_elf(arch: str, touch: bool = False) -> bytes:
    """A static ET_EXEC: an r-x PT_LOAD at 0x10000 with the code, and a PT_LOAD with p_flags 0 at
    0x40000 (12 file bytes, two pages of memory)."""
    code = (TOUCH[arch] if touch else b"") + EXIT42[arch]
    off = 0x1000
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + bytes(9), 2, MACHINE[arch], 1,
                       0x10000, 64, 0, 0, 64, 56, 2, 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 1, 5, off, 0x10000, 0x10000, len(code), len(code), 0x1000) + \
        struct.pack("<IIQQQQQQ", 1, 0, off, 0x40000, 0x40000, 12, 0x2000, 0x1000)
    blob = ehdr + ph
    return blob + bytes(off - len(blob)) + code + bytes(64)


@pytest.mark.parametrize("arch", ARCHES)
def test_a_segment_without_flags_loads_prot_none(tmp_path, arch):
    prog = tmp_path / "noperm"
    prog.write_bytes(noperm_elf(arch))
    m = Machine()
    m.load(prog)
    r = m.run()
    assert r.exit_status == 42, r.message
    assert main(["run", "-q", str(prog)]) == 42              # the CLI: no internal error
    touched = tmp_path / "touch"
    touched.write_bytes(noperm_elf(arch, touch=True))
    r = Machine().load(touched).run()
    assert r.exit_status is None or r.exit_status != 42
    assert "SIGSEGV" in (r.message or "") + str(r.extra)


@pytest.mark.parametrize("arch", ARCHES)
def test_a_guest_execve_of_it_runs(cprog, tmp_path, arch):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(cprog("exec_arg", arch), root / "exec_arg")
    (root / "noperm").write_bytes(noperm_elf(arch))
    (root / "noperm").chmod(0o755)
    r = Machine(root=str(root)).load(root / "exec_arg", ["/noperm"]).run()
    assert r.stdout == b"exit=42\n", r.message
