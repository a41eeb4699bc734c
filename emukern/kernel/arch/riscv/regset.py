"""riscv64's regsets (arch/riscv/kernel/ptrace.c's riscv_user_regset): NT_PRSTATUS, NT_PRFPREG
and NT_RISCV_VECTOR, for PTRACE_GETREGSET/SETREGSET and the core dump.  The generic half is
kernel/signal/ptrace.py; the vector regset's rules (which errno, which CSR values, what an Initial
state shows under each riscv-discard value) are kernel/arch/riscv/vector.py's riscv_vr_get/_set."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel.arch.riscv.vector import RISCV_MAX_VLENB, NT_RISCV_VECTOR, V_REGSET_HDR, riscv_vr_get, riscv_vr_set
from emukern.kernel.signal.ptrace import NT_PRFPREG, NT_PRSTATUS, Regset
from emukern.machine.cpu_riscv import RiscvCpu

if TYPE_CHECKING:
    from emukern.kernel.task import Task
    from emukern.kernel.types import Kernel

# NT_RISCV_VECTOR counts in 4-byte units and is sized for the largest VLEN: a GETREGSET length is
# cut to that, not to the tracee's real size (the header and 32 * vlenb bytes are what is written)
RISCV_REGSETS = (Regset(NT_PRSTATUS, 32, 8, "NT_PRSTATUS"), Regset(NT_PRFPREG, 33, 8, "NT_PRFPREG"),
                 Regset(NT_RISCV_VECTOR, (V_REGSET_HDR + 32 * RISCV_MAX_VLENB) // 4, 4, "NT_RISCV_VECTOR"))


def gpr_get(ctx: dict[str, Any]) -> bytes:
    """NT_PRSTATUS of a user context: struct user_regs_struct — pc, then x1-x31."""
    regs = [ctx["pc"]] + list(ctx["x"][1:32])
    return b"".join((v & (2**64 - 1)).to_bytes(8, "little") for v in regs)


def fpr_get(fp: dict[str, Any] | None) -> bytes:
    """NT_PRFPREG (__riscv_d_ext_state: f0-f31, fcsr, padded to 8) of a saved F state (zeros
    when the task has none)."""
    f = fp["f"] if fp else [0] * 32
    fcsr = fp["fcsr"] if fp else 0
    return (b"".join((v & (2**64 - 1)).to_bytes(8, "little") for v in f)
            + (fcsr & 0xFFFF_FFFF).to_bytes(4, "little") + bytes(4))


def _vlenb(k: "Kernel") -> int:
    return k.config.vlen // 8


def regset_access(k: "Kernel", task: "Task", child: "Task", rs: Regset, write: bool, base: int,
                  length: int) -> int | None:
    """NT_RISCV_VECTOR is transferred here whole: its get can fail (no V, never used), and a set
    takes exactly the bytes given (a short write keeps the registers past it), neither of which
    the generic read-merge-store path can say.  None for the other regsets."""
    if rs.note != NT_RISCV_VECTOR:
        return None
    if not write:
        # the tracer's CPU: its register file is what a save inside the tracer's GETREGSET reads
        reader = k.cpus[task.cpu] if 0 <= task.cpu < len(k.cpus) else None
        got = riscv_vr_get(k, child, _vlenb(k), reader if isinstance(reader, RiscvCpu) else None)
        if isinstance(got, int):
            return got
        task.mm.write(base, got[:length])
        return 0
    return riscv_vr_set(k, child, _vlenb(k), task.mm.read(base, length))


def regset_get(k: "Kernel", child: "Task", rs: Regset) -> bytes:
    """The whole regset of a stopped (switched-out) task."""
    if rs.note == NT_PRSTATUS:
        return gpr_get(child.ctx)
    return fpr_get(child.thread.fp if child.thread is not None else None)


def regset_store(k: "Kernel", child: "Task", rs: Regset, full: bytes, words: list[int]) -> int:
    """Store a whole regset (its little-endian u64 ``words``)."""
    if rs.note == NT_PRSTATUS:
        child.ctx["pc"] = words[0]
        child.ctx["x"] = [0] + words[1:32]
        return 0
    if child.thread is not None:
        child.thread.fp = {"f": words[:32], "fcsr": words[32] & 0xFFFF_FFFF}
    return 0


def core_thread_regsets(k: "Kernel", cpu: Any, t: "Task", ctx: dict[str, Any]) -> tuple[bytes, bytes, None]:
    """(pr_reg, NT_PRFPREG, no further notes) of one thread of a dying process.  riscv_fpr_get:
    the live F state of a thread on a CPU (fstate_save), else the saved one."""
    st = cpu.save_fp() if cpu is not None else (t.thread.fp if t.thread is not None else None)
    return gpr_get(ctx), fpr_get(st), None
