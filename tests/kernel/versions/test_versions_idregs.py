"""Per --kernel, the ID registers an EL0 MRS returns, against the real kernel and the kernel sources.

* Recorded answers of the real kernels: data/mrs_regs-<kernel>.bin is what guest_asm/arm64/mrs_regs.S
  wrote under Debian's kernel on ``qemu-system-aarch64 -cpu max,sve256=on`` (recorded with
  ``emukern linux -q --kernel <kernel> guest_asm/arm64/mrs_regs.S > data/mrs_regs-<kernel>.bin``;
  Debian 12: linux-image-6.1.0-50-arm64 6.1.176-1, Debian 13: 6.12.117-1).  emukern modelling the
  same release must write the same 488 bytes, with either trap path (FEAT_IDST or UNDEFINED).
  tests/oracle/test_oracle_real_kernels.py does the same live when qemu-system is present.
* Tables from the sources: for the registers whose EL0 view changed between the releases, the
  expected value is QEMU 7.2's ``max`` raw fields (target/arm/cpu64.c aarch64_max_initfn) masked
  with the fields each release's arch/arm64/kernel/cpufeature.c marks FTR_VISIBLE -- written out
  here independently of emukern's tables.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from emukern.api import Machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MRS_REGS = ROOT / "guest_asm/arm64/mrs_regs.S"
REAL = ["debian-12-arm64", "debian-13-arm64"]

# byte offsets in mrs_regs.S's output (8 bytes per register, in the order it reads them)
OFFSET = {"ID_ISAR6_EL1": 0x50, "MVFR1_EL1": 0x60, "ID_PFR2_EL1": 0x78, "ID_AA64PFR0_EL1": 0x98,
          "ID_AA64PFR1_EL1": 0xA0, "ID_AA64ZFR0_EL1": 0xB8, "ID_AA64ISAR1_EL1": 0x120}

# QEMU 7.2 max: (shift, value) of the fields it sets in these registers (non-zero ones)
QEMU_MAX = {
    "ID_ISAR6_EL1": {24: 1, 20: 1, 16: 1, 12: 1, 8: 1, 4: 1, 0: 1},       # I8MM BF16 SPECRES SB FHM DP JSCVT
    "MVFR1_EL1": {28: 1, 24: 3, 20: 2, 16: 1, 12: 1, 8: 1, 4: 1, 0: 1},    # SIMDFMAC FPHP SIMDHP SIMDSP ...
    "ID_PFR2_EL1": {4: 1, 0: 1},                                           # SSBS CSV3
    "ID_AA64PFR1_EL1": {4: 2, 0: 1},                                       # SSBS BT (MTE 0: no tag memory)
    "ID_AA64ZFR0_EL1": {56: 1, 52: 1, 44: 1, 40: 1, 32: 1, 20: 1, 16: 1, 4: 2, 0: 1},
}
# the fields of those registers each release exposes to EL0 (FTR_VISIBLE), by shift
VISIBLE = {
    "6.1": {"ID_ISAR6_EL1": (), "MVFR1_EL1": (28, 16, 12, 8), "ID_PFR2_EL1": (),
            "ID_AA64PFR1_EL1": (24, 8, 4, 0), "ID_AA64ZFR0_EL1": (56, 52, 44, 40, 32, 20, 16, 4, 0)},
    "6.12": {"ID_ISAR6_EL1": (24, 20, 12, 8, 4), "MVFR1_EL1": (28, 24, 20, 16, 12, 8), "ID_PFR2_EL1": (4,),
             "ID_AA64PFR1_EL1": (24, 8, 4, 0), "ID_AA64ZFR0_EL1": (56, 52, 44, 40, 32, 24, 20, 16, 4, 0)},
}
VERSION_OF = {"debian-12-arm64": "6.1", "debian-13-arm64": "6.12", "linux-7.3-arm64": "6.12",
              "debian-12-arm64+changes": "6.1", "linux-7.3-arm64+changes": "6.12"}


def _expected(version: str, reg: str) -> int:
    return sum(v << s for s, v in QEMU_MAX[reg].items() if s in VISIBLE[version][reg])


def _run(kernel: str, idst: bool = True, **opts: object) -> bytes:
    r = Machine(arch="arm64", kernel=kernel, idst=idst, **opts).load(MRS_REGS).run()
    assert r.exit_status == 0, r.message
    assert r.config["kernel"] == kernel
    return r.stdout


def _word(out: bytes, reg: str) -> int:
    return struct.unpack_from("<Q", out, OFFSET[reg])[0]


@pytest.mark.parametrize("idst", [True, False], ids=["idst", "undef"])
@pytest.mark.parametrize("kernel", REAL)
def test_mrs_matches_the_recorded_real_kernel(kernel: str, idst: bool) -> None:
    real = (HERE / "data" / f"mrs_regs-{kernel}.bin").read_bytes()
    assert len(real) == 488
    got = _run(kernel, idst)
    diff = [f"{i:#05x}: emukern {a:#018x} real {b:#018x}"
            for i, (a, b) in enumerate(zip(struct.unpack("<61Q", got), struct.unpack("<61Q", real)))
            if a != b]
    assert got == real, "\n".join(diff)


def test_the_two_real_kernels_differ_where_the_tables_do() -> None:
    # the recordings themselves: 6.1 and 6.12 differ exactly in the AArch32 fields 6.1 hides
    a, b = ((HERE / "data" / f"mrs_regs-{k}.bin").read_bytes() for k in REAL)
    differ = {off for off in range(0, 488, 8) if a[off:off + 8] != b[off:off + 8]}
    assert differ == {OFFSET["ID_ISAR6_EL1"], OFFSET["MVFR1_EL1"], OFFSET["ID_PFR2_EL1"]}


@pytest.mark.parametrize("reg", sorted(QEMU_MAX))
@pytest.mark.parametrize("kernel", sorted(VERSION_OF))
def test_mrs_matches_the_source_tables(kernel: str, reg: str) -> None:
    assert _word(_run(kernel), reg) == _expected(VERSION_OF[kernel], reg)


def test_unicorn_cpu_model_keeps_unicorns_values() -> None:
    # arm64_cpu_model="unicorn-max": the fields QEMU 7.2 adds are absent (SVE2 etc. read 0)
    out = _run("debian-13-arm64", arm64_cpu_model="unicorn-max")
    assert _word(out, "ID_AA64ZFR0_EL1") == 0
    assert _word(out, "ID_AA64PFR1_EL1") >> 4 & 0xF == 0       # no SSBS
    with pytest.raises(Exception, match="unknown arm64 CPU model"):
        _run("debian-13-arm64", arm64_cpu_model="cortex-a53")
