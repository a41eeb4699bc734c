"""Every architecture difference behind one interface: :class:`emukern.kernel.arch.base.ArchBase`
and its two fillings, arm64 (kernel/arch/arm64/, mirroring arch/arm64/kernel) and riscv64
(kernel/arch/riscv/, mirroring arch/riscv/kernel).  Generic kernel code asks ``k.arch``; it never
tests ``config.arch`` itself (tests/foundation/test_shape.py checks it)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emukern.kernel.arch.base import ArchBase
    from emukern.kernel.types import Kernel


def make_arch(k: "Kernel") -> "ArchBase":
    """The arch object of the machine ``k`` boots (its ``config.arch``).  Each architecture is
    imported only here, when a machine of it boots: a run pays for its own architecture's
    modules (its CPU, cpufeature tables, signal frames), not the other's
    (tests/perf/test_startup_imports.py checks it)."""
    if k.config.arch == "riscv64":
        from emukern.kernel.arch.riscv.arch import RiscvArch
        return RiscvArch(k)
    from emukern.kernel.arch.arm64.arch import Arm64Arch
    return Arm64Arch(k)
