"""Kernel-mode vector user copies (Linux >= 6.8: enter_vector_usercopy, kernel_vector_begin/end)
and what they do to the user's vector state under both modelled RISC-V changes.

Reference: arch/riscv/kernel/kernel_mode_vector.c (kernel_vector_begin: riscv_v_vstate_save only
writes back a Dirty context, then riscv_v_vstate_set_restore), arch/riscv/lib/uaccess.S and
uaccess_vector.S (the threshold test and the vle8ff/vse8 loop), arch/riscv/include/asm/vector.h.
"""
from __future__ import annotations

import itertools
import shutil
import subprocess

import pytest

from emukern.api import Machine
from emukern.kernel.arch.riscv import kernel_mode_vector as kmv
from vabi_helpers import DISCARDS, IMPLS, clobbered, needs_llvm, parse_snaps, pattern, run_prog, zeroed

pytestmark = needs_llvm
THRESHOLD = 768


def expected_after(impl: str, discard: int, vector_copy: bool, vlen: int):
    """S2/S3 of vabi_ucopy: the state after write(N) and after read(N)."""
    if not vector_copy:                      # scalar copy: only the syscall ABI acts
        return clobbered(vlen) if discard else pattern(0x10, vlen)
    if impl == "eager":
        # before "treat VS_INITIAL as discard": entry leaves the context Dirty (clobbered or not),
        # kernel_vector_begin saves it, the return to user restores exactly that
        return clobbered(vlen) if discard else pattern(0x10, vlen)
    # after it: VS=Initial at entry, nothing saved, set_restore marks Clean, the return to user
    # restores the last *saved* context — here the zeroed first-use context — whatever the knob
    return zeroed(vlen)


GRID = list(itertools.product(IMPLS, DISCARDS, (128, 512), (100, THRESHOLD - 1, THRESHOLD, 8192)))


@pytest.mark.parametrize("impl,discard,vlen,n", GRID,
                         ids=[f"{i}-discard{d}-vlen{v}-{n}B" for i, d, v, n in GRID])
def test_user_vector_state_across_large_copies(impl, discard, vlen, n):
    r, m = run_prog("vabi_ucopy.S", [str(n)], vlen, impl, discard)
    assert r.exit_status == 0, (r.message, r.fault)
    s0, s1, s2, s3 = parse_snaps(r.stdout, vlen)
    assert s0 == zeroed(vlen) and s1 == pattern(0x10, vlen)
    want = expected_after(impl, discard, n >= THRESHOLD, vlen)
    assert s2 == want, s2.short()
    assert s3 == want, s3.short()
    # pipe_write/pipe_read copy a page at a time (copy_page_from_iter/copy_page_to_iter): one
    # region per page-sized chunk that reaches the threshold, each way, plus the final dump
    chunks = [min(4096, n - o) for o in range(0, n, 4096)]
    assert m.kernel.kernel_vector_regions == 2 * sum(c >= THRESHOLD for c in chunks) + 1


@pytest.mark.parametrize("impl", IMPLS)
def test_threshold_zero_turns_vector_copies_off(impl):
    r, m = run_prog("vabi_ucopy.S", ["8192"], 256, impl, 0, riscv_v_ucopy_threshold=0)
    assert r.exit_status == 0
    assert parse_snaps(r.stdout, 256)[2] == pattern(0x10, 256)
    assert m.kernel.kernel_vector_regions == 0


def test_the_trap_log_says_what_kernel_vector_did():
    r, m = run_prog("vabi_ucopy.S", ["4096"], 256, "deferred", 0)
    writes = [t for t in m.kernel.trap_log if t.handler == "write" and "kernel-mode vector" in t.decision]
    assert writes, [t.decision for t in m.kernel.trap_log]
    assert "copy_from_user 4096 bytes" in writes[0].decision
    assert "VS=Initial, nothing saved" in writes[0].decision


COPY_GUEST = """
.globl _start
_start:
    li a0, 0                 # read(0, buf, N): copy_to_user of the whole stdin
    la a1, buf
    li a2, {n}
    li a7, 63
    ecall
    mv a2, a0                # write(1, buf, got): copy_from_user
    li a0, 1
    la a1, buf
    li a7, 64
    ecall
    li a0, 0
    li a7, 94
    ecall
.bss
buf: .space 65536
"""


@pytest.mark.parametrize("vlen", (128, 1024))
def test_vector_copies_move_the_right_bytes(run_guest, vlen):
    data = bytes((i * 7 + 3) & 0xFF for i in range(5000))
    r, m = run_guest(COPY_GUEST.format(n=5000), arch="riscv64", vlen=vlen, stdin=data)
    assert r.exit_status == 0 and r.stdout == data
    assert m.kernel.kernel_vector_regions == 2


def test_a_faulting_vector_copy_is_efault(run_guest):
    src = """
.globl _start
_start:
    li a0, 1
    li a1, 0x100000          # unmapped
    li a2, 4096
    li a7, 64
    ecall
    neg a0, a0               # exit status = errno
    li a7, 94
    ecall
"""
    r, _ = run_guest(src, arch="riscv64")
    assert r.exit_status == 14               # EFAULT, as the scalar fallback gives


def test_vector_copy_cycles_come_from_the_rvv_cost_model(run_guest):
    r_vec, _ = run_guest(COPY_GUEST.format(n=4096), arch="riscv64", stdin=bytes(4096))
    r_sca, _ = run_guest(COPY_GUEST.format(n=4096), arch="riscv64", stdin=bytes(4096),
                         riscv_v_ucopy_threshold=0)
    assert r_vec.stdout == r_sca.stdout
    assert r_vec.kernel_cycles != r_sca.kernel_cycles


@pytest.mark.skipif(shutil.which("llvm-mc") is None, reason="llvm-mc not installed")
def test_usercopy_loop_words_match_llvm_mc(tmp_path):
    src = tmp_path / "loop.s"
    src.write_text("vsetvli a3, a2, e8, m8, ta, ma\nvle8ff.v v0, (a1)\ncsrr a3, vl\nvse8.v v0, (a0)\n")
    out = subprocess.run(["llvm-mc", "-triple=riscv64", "-mattr=+v", "-show-encoding", str(src)],
                         capture_output=True, text=True, check=True).stdout
    words = []
    for line in out.splitlines():
        if "encoding:" in line:
            b = [int(x, 16) for x in line.split("[")[1].rstrip("]").split(",")]
            words.append(int.from_bytes(bytes(b), "little"))
    assert tuple(words) == kmv.USERCOPY_LOOP


def test_kconfig_option_sets_the_threshold():
    from emukern.cli import apply_kconfig
    from emukern.config import MachineConfig
    from emukern.errors import ConfigError
    cfg = MachineConfig()
    apply_kconfig(cfg, ["CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=4096", "RISCV_ISA_V_VSTATE_DISCARD=y"])
    assert cfg.riscv_v_ucopy_threshold == 4096 and cfg.vstate_discard_default is True
    with pytest.raises(ConfigError, match="not a build option"):
        apply_kconfig(cfg, ["PREEMPT_RT=y"])
    with pytest.raises(ConfigError, match="integer or y/n"):
        apply_kconfig(cfg, ["HZ=fast"])
