"""arm64 EL0 system instructions as Linux configures them (issue 11, item 14, arm64 part).

Linux sets SCTLR_EL1.UCT, UCI and DZE for EL0, so ``mrs ctr_el0``, ``dc cvau``, ``ic ivau``,
``dc cvac``, ``dc civac`` and ``dc zva`` execute without a trap (``__builtin___clear_cache`` is
made of them), and clears CNTKCTL_EL1.EL0PCTEN, so ``mrs cntpct_el0`` traps to do_el0_sys,
which has no hook for it: SIGILL.  qemu-aarch64 is the oracle where it models the same
(it runs with the same SCTLR bits as Linux user space).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SIGILL = 4
HERE = Path(__file__).parent / "guests"


def prog(body: str) -> str:
    return f""".globl _start
_start:
    adr x1, buf
    {body}
    mov x8, #94
    svc #0
.data
.balign 64
buf: .fill 128, 1, 0xff
"""


@pytest.mark.parametrize("insn", ["dc cvau, x1", "ic ivau, x1", "dc cvac, x1", "dc civac, x1"])
def test_el0_cache_maintenance_is_allowed(run_guest, insn):
    r, _ = run_guest(prog(f"{insn}\n    dsb ish\n    isb\n    mov x0, #0"), arch="arm64")
    assert r.exit_status == 0, (r.message, r.fault)


def test_el0_reads_ctr_el0(run_guest):
    # exit with CTR_EL0's IminLine (log2 words of the smallest icache line): the real value
    r, m = run_guest(prog("mrs x2, ctr_el0\n    and x0, x2, #0xf\n    lsr x3, x2, #31\n    add x0, x0, x3, lsl #4"),
                     arch="arm64")
    ctr = m.kernel.cpus[0].cpr_read((3, 3, 0, 0, 1))
    assert r.exit_status == (ctr & 0xF) + ((ctr >> 31) << 4), (r.message, r.fault)
    assert ctr >> 31 == 1                      # RES1 bit: the read returned CTR_EL0, not zero


def test_el0_dc_zva_zeroes_a_block(run_guest):
    # DCZID_EL0.BS = log2(words) of the block; DZP clear (DZE set); the block at buf is zeroed
    r, _ = run_guest(prog("mrs x2, dczid_el0\n    dc zva, x1\n    ldr x3, [x1]\n    ldr x4, [x1, #56]\n"
                          "    orr x3, x3, x4\n    lsr x5, x2, #4\n    and x5, x5, #1\n    add x0, x3, x5"),
                     arch="arm64")
    assert r.exit_status == 0, (r.message, r.fault)


def test_el0_cntpct_el0_is_sigill(run_guest):
    r, _ = run_guest(prog("mrs x0, cntpct_el0\n    mov x0, #0"), arch="arm64")
    assert r.signal == SIGILL, (r.message, r.fault)


def test_el0_cntvct_el0_still_reads_the_model_clock(run_guest):
    r, _ = run_guest(prog("mrs x2, cntvct_el0\n    mrs x3, cntvct_el0\n    cmp x3, x2\n    cset x0, lo"), arch="arm64")
    assert r.exit_status == 0, (r.message, r.fault)


@pytest.fixture(scope="module")
def jit_elf(cguest):
    return cguest(HERE / "clear_cache_jit.c", "arm64")


def test_builtin_clear_cache_jit_runs(jit_elf):
    from emukern.api import Machine
    r = Machine().load(jit_elf).run()
    assert r.exit_status == 0, (r.message, r.fault)
    assert r.stdout == b"jit 42 7\n"


@pytest.mark.qemu
def test_builtin_clear_cache_jit_matches_qemu(jit_elf):
    if shutil.which("qemu-aarch64") is None:
        pytest.skip("qemu-aarch64 not installed")
    from emukern.api import Machine
    q = subprocess.run(["qemu-aarch64", str(jit_elf)], capture_output=True, timeout=60)
    r = Machine().load(jit_elf).run()
    assert (q.returncode, q.stdout) == (r.exit_status, r.stdout)
