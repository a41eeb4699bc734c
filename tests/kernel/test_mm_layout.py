"""The mmap layout chosen at exec from RLIMIT_STACK (kernel/mm/layout.py, mm/util.c
arch_pick_mmap_layout) and the resource limits behind it (kernel/resource.py, kernel/sys.c
do_prlimit), with a static glibc program (guest_asm/c/mmlayout.c).  qemu-user is the oracle for
the limit errnos only: it places guest mmaps with its own allocator (bottom-up whatever the
rlimit) and ignores setrlimit(RLIMIT_STACK), so the layout checks follow the kernel source."""
from __future__ import annotations

import shutil
import sys
import subprocess

import pytest

from emukern.api import Machine
from emukern.errors import ConfigError
from emukern.kernel.mm.layout import MAX_GAP, mmap_is_legacy, task_unmapped_base, topdown_base
from emukern.kernel.resource import RLIM_INFINITY, parse_rlimit_option

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


def _elf(cguest, arch):
    """mmlayout.c cguest for ``arch`` (skips without the cross compiler)."""
    return cguest("mmlayout", arch)


def _run(exe, args, **options):
    r = Machine(**options).load(exe, list(args)).run()
    assert r.exit_status == 0, (r.message, r.stderr)
    return r.stdout.decode()


def test_legacy_rule_and_bases():
    assert mmap_is_legacy(RLIM_INFINITY) and not mmap_is_legacy(8 << 20)
    assert mmap_is_legacy(8 << 20, legacy_va_layout=1)
    # PAGE_ALIGN(TASK_SIZE / 3) on riscv64 (Sv39: 1 << 38), DEFAULT_MAP_WINDOW / 4 on arm64
    assert task_unmapped_base("riscv64") == 0x15_5555_6000
    assert task_unmapped_base("arm64") == 0x10_0000_0000
    top = 0x3F_FF00_0000
    # a bigger finite stack limit moves the top-down base down by as much, never past MAX_GAP
    assert topdown_base(top, 8 << 20) - topdown_base(top, 72 << 20) == 64 << 20
    assert topdown_base(top, 1 << 60) == topdown_base(top, RLIM_INFINITY) == (top - MAX_GAP - 0x1000_0000) & ~0xFFF


@pytest.mark.parametrize("arch", list(CC))
def test_default_limit_is_top_down(cguest, arch):
    out = _run(_elf(cguest, arch), ["layout"])
    assert out == ("stack rlimit: finite\nlayout: top-down\n"
                   "first mmap below 1/2 of the address space: 0\n")


@pytest.mark.parametrize("arch", list(CC))
def test_unlimited_stack_is_bottom_up_from_task_unmapped_base(cguest, arch):
    exe = _elf(cguest, arch)
    m = Machine(rlimits={"STACK": "unlimited"}).load(exe, ["layout"])
    r = m.run()
    assert r.stdout == (b"stack rlimit: unlimited\nlayout: bottom-up\n"
                        b"first mmap below 1/2 of the address space: 1\n")
    anon = [mp.start for mp in m.kernel.init_task.mm.mappings if mp.name == "[anon]"]
    assert anon and min(anon) >= task_unmapped_base(arch)


@pytest.mark.parametrize("arch", list(CC))
def test_setrlimit_takes_effect_at_the_next_exec(cguest, arch):
    exe = _elf(cguest, arch)
    out = _run(exe, ["reexec", "/" + exe.name], root=str(exe.parent))
    assert out == ("stack rlimit: unlimited\nlayout: bottom-up\n"
                   "first mmap below 1/2 of the address space: 1\n")


@pytest.mark.parametrize("arch", list(CC))
def test_free_hint_is_honoured(cguest, arch):
    assert _run(_elf(cguest, arch), ["hint"]) == ("free hint taken: 1\n"
                                                 "MAP_FIXED_NOREPLACE on a used page: File exists\n"
                                                 "MAP_FIXED_NOREPLACE on a free page: 1\n")


@pytest.mark.qemu
@pytest.mark.parametrize("arch", list(CC))
def test_limit_errnos_match_qemu(cguest, arch):
    exe = _elf(cguest, arch)
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    q = subprocess.run([QEMU[arch], str(exe), "errors"], capture_output=True, timeout=60)
    assert q.returncode == 0
    assert _run(exe, ["errors"]) == q.stdout.decode()
    assert "Invalid argument" in q.stdout.decode() and "No such process" in q.stdout.decode()


@pytest.mark.parametrize("name,value,want", [
    ("STACK", "unlimited", (3, (RLIM_INFINITY, RLIM_INFINITY))),
    ("rlimit_nofile", "100:200", (7, (100, 200))),
    ("STACK", "0x1000000", (3, (1 << 24, 1 << 24))),
])
def test_rlimit_option_parses(name, value, want):
    assert parse_rlimit_option(name, value) == want


@pytest.mark.parametrize("name,value", [("STAK", "1"), ("STACK", "lots"), ("STACK", "200:100"),
                                        ("STACK", "-1")])
def test_bad_rlimit_option_is_a_clear_error(cguest, name, value):
    exe = _elf(cguest, "riscv64")
    with pytest.raises(ConfigError) as e:
        Machine(rlimits={name: value}).load(exe, ["layout"])
    assert e.value.hint


def test_cli_rlimit(cguest, tmp_path):
    exe = _elf(cguest, "riscv64")
    r = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", "--rlimit", "STACK=unlimited", str(exe),
                        "layout"], capture_output=True, text=True)
    assert "layout: bottom-up" in r.stdout, r.stderr
    bad = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "--rlimit", "STACK=lots", str(exe)],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "STACK" in bad.stderr
