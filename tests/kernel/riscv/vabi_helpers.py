"""Helpers for the RISC-V vector-ABI tests: run the guest_asm/riscv/vabi_*.S programs and decode
the snapshots they write (see guest_asm/riscv/vabi_macros.inc, SNAP and PATTERN)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.kernel.result import RunResult

GUEST = Path(__file__).resolve().parents[3] / "guest_asm" / "riscv"
VILL = 1 << 63
VTYPE_E32M2 = 0x11          # what PATTERN leaves: vsetivli 5, e32, m2, tu, mu
VCSR_PATTERN = 5            # vxrm=2, vxsat=1

needs_llvm = pytest.mark.skipif(shutil.which("llvm-mc") is None or shutil.which("ld.lld") is None,
                                reason="llvm-mc/ld.lld not installed (needed to assemble guests)")

IMPLS = ("eager", "deferred")
DISCARDS = (0, 1)
VLENS = (128, 256, 512)


@dataclass(frozen=True)
class Snap:
    vl: int
    vtype: int
    vstart: int
    vcsr: int
    regs: bytes                  # v0..v31, 32 * VLENB bytes

    def short(self) -> str:
        return (f"vl={self.vl} vtype={self.vtype:#x} vstart={self.vstart} vcsr={self.vcsr} "
                f"v0[:8]={self.regs[:8].hex()}")


def parse_snaps(data: bytes, vlen: int) -> list[Snap]:
    vlenb = vlen // 8
    size = 32 + 32 * vlenb
    assert len(data) % size == 0, f"{len(data)} bytes is not a whole number of {size}-byte snapshots"
    out = []
    for off in range(0, len(data), size):
        hdr = [int.from_bytes(data[off + i: off + i + 8], "little") for i in range(0, 32, 8)]
        out.append(Snap(*hdr, regs=data[off + 32: off + size]))
    return out


def pattern(seed: int, vlen: int) -> Snap:
    """The state PATTERN leaves: group g (v0, v8, v16, v24) byte i = i + seed + 7*g (mod 256)."""
    n = vlen  # bytes per m8 group = 8 * VLENB = VLEN
    regs = b"".join(bytes((i + seed + 7 * g) & 0xFF for i in range(n)) for g in range(4))
    return Snap(5, VTYPE_E32M2, 0, VCSR_PATTERN, regs)


def zeroed(vlen: int) -> Snap:
    """The first-use context: a zeroed __riscv_v_ext_state restored (vl=0, vtype=0)."""
    return Snap(0, 0, 0, 0, bytes(4 * vlen))


def clobbered(vlen: int, vcsr: int = VCSR_PATTERN) -> Snap:
    """What __riscv_v_vstate_discard leaves: v0-v31 all ones, vl=0, vtype=vill.  vxrm/vxsat
    (vcsr) are not part of the clobber and keep their value."""
    return Snap(0, VILL, 0, vcsr, b"\xff" * (4 * vlen))


def machine(vlen: int = 256, impl: str = "deferred", discard: int | None = None,
            **options) -> Machine:
    policies = dict(options.pop("policies", {}))
    policies.setdefault("riscv-discard", impl)
    sysctls = dict(options.pop("sysctls", {}))
    if discard is not None:
        sysctls["abi.riscv_v_vstate_discard"] = str(discard)
    # the round-robin queue: these scenarios place their context switches with short ticks (a
    # switch at every tick); the fair class would keep a task running for its 0.75 ms slice
    options.setdefault("sched", "rr")
    return Machine(vlen=vlen, policies=policies, sysctls=sysctls, **options)


def run_prog(name: str, argv: list[str], vlen: int = 256, impl: str = "deferred",
             discard: int | None = None, **options) -> tuple[RunResult, Machine]:
    m = machine(vlen, impl, discard, **options)
    m.load(GUEST / name, argv)
    return m.run(), m


def words(data: bytes) -> list[int]:
    """stdout of vabi_sysctl/vabi_ctrl: signed 64-bit little-endian results."""
    return [int.from_bytes(data[i: i + 8], "little", signed=True) for i in range(0, len(data) - len(data) % 8, 8)]
