"""Bad input against a real boot: a guest that never exits, binary output, a kernel that panics
before /init runs, a kernel that hangs.  Each ends in bounded time with a clear answer."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from emukern.oracle import OracleError
from emukern.oracle.initramfs import Program
from emukern.oracle.kernels import PROFILES
from emukern.oracle.session import RealKernel, Unavailable

ASM = Path(__file__).resolve().parents[2] / "guest_asm"
RISCV = PROFILES["debian-13-riscv64"]        # the fastest boot of the three

BINARY = """\
# arch: riscv64
# writes every byte value 0..255 (NULs, CR, ESC, 0xff ...) to stdout, then exits 7
.globl _start
_start:
    la t0, buf
    li t1, 0
1:  add t2, t0, t1
    sb t1, 0(t2)
    addi t1, t1, 1
    li t3, 256
    blt t1, t3, 1b
    li a0, 1
    mv a1, t0
    li a2, 256
    li a7, 64
    ecall
    li a0, 7
    li a7, 93
    ecall
.bss
buf: .space 256
"""


def _image():  # type: ignore[no-untyped-def]
    rk = RealKernel(disk_cache=False)
    try:
        return rk._image(RISCV)
    except Unavailable as exc:
        pytest.skip(f"real kernel unavailable: {exc.message}")


@pytest.mark.linux
def test_guest_that_never_exits_is_killed_after_its_limit(guest_asm: Path) -> None:
    from emukern.oracle.qemu import boot
    from emukern.api import resolve_program
    spin, _ = resolve_program(guest_asm / "riscv" / "spin.S", "riscv64")
    hello, _ = resolve_program(guest_asm / "riscv" / "hello.S", "riscv64")
    res = boot(_image(), [Program(spin, ["100000000000"], timeout=3), Program(hello)])
    r0, r1 = res.log.runs[0], res.log.runs[1]
    assert r0.timed_out and r0.exit_status == 128 + 9          # SIGKILL from the runner
    assert r1.exit_status == 0 and r1.stdout.startswith(b"Hello")   # the next program still runs


@pytest.mark.linux
def test_binary_output_arrives_byte_exact(tmp_path: Path) -> None:
    src = tmp_path / "allbytes.S"
    src.write_text(BINARY)
    from emukern.api import resolve_program
    from emukern.oracle.qemu import boot
    elf, _ = resolve_program(src, "riscv64")
    res = boot(_image(), [Program(elf)])
    assert res.log.runs[0].stdout == bytes(range(256)) and res.log.runs[0].exit_status == 7
    assert res.log.bad_lines == []


@pytest.mark.linux
def test_kernel_that_panics_before_init(monkeypatch: pytest.MonkeyPatch, guest_asm: Path) -> None:
    """A broken initramfs: the kernel finds no /init and panics; panic=-1 + -no-reboot end qemu."""
    import emukern.oracle.qemu as q
    img = _image()
    monkeypatch.setattr(q, "build_initramfs", lambda *a, **kw: b"070701 this is not an archive")
    from emukern.api import resolve_program
    hello, _ = resolve_program(guest_asm / "riscv" / "hello.S", "riscv64")
    t0 = time.monotonic()
    with pytest.raises(OracleError) as e:
        q.boot(img, [Program(hello)])
    assert "stopped before emukern's /init ran" in e.value.message
    assert "Kernel panic" in e.value.message                   # the console tail is shown
    assert time.monotonic() - t0 < 280


@pytest.mark.linux
def test_kernel_that_hangs_hits_the_timeout(tmp_path: Path, guest_asm: Path) -> None:
    """Not a kernel at all (zeros): the CPU spins in the firmware or the image; qemu is killed."""
    import dataclasses
    from emukern.api import resolve_program
    from emukern.oracle.qemu import boot
    img = _image()
    bogus = tmp_path / "vmlinux"
    bogus.write_bytes(bytes(4096))
    hello, _ = resolve_program(guest_asm / "riscv" / "hello.S", "riscv64")
    with pytest.raises(OracleError) as e:
        boot(dataclasses.replace(img, image=bogus), [Program(hello)], timeout=8)
    assert "did not finish within 8 s" in e.value.message and "console tail" in e.value.message


@pytest.mark.linux
def test_program_the_kernel_cannot_exec_is_reported(monkeypatch: pytest.MonkeyPatch, guest_asm: Path) -> None:
    """execve fails inside the booted machine (here: argv[0] names no file): the runner says so."""
    from emukern.api import resolve_program
    from emukern.oracle.compare import explain_errors
    from emukern.oracle.qemu import boot
    hello, _ = resolve_program(guest_asm / "riscv" / "hello.S", "riscv64")
    monkeypatch.setattr(Program, "argv0", lambda self, n: f"/emukern/{n}/missing")
    res = boot(_image(), [Program(hello)])
    r = res.log.runs[0]
    assert r.errors == ["execve 2"] and r.exit_status == 127
    assert explain_errors(r.errors) == "execve: ENOENT (No such file or directory)"
