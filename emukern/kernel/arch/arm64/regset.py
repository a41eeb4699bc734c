"""arm64's regsets (arch/arm64/kernel/ptrace.c's aarch64_regsets): what PTRACE_GETREGSET /
PTRACE_SETREGSET and the core dump's notes read and write for a thread.  The generic half
(ptrace_regset's iovec handling) is kernel/signal/ptrace.py; the FP/SIMD and SVE views are
kernel/arch/arm64/ptrace.py's fpr_get/sve_get, which save the live state first as Linux does."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.arch.arm64.ptrace import NT_ARM_SVE, NT_ARM_SVE_UNITS, fpr_get, fpr_set, sve_get, sve_set
from emukern.kernel.arch.arm64.tagged_addr import get_tagged_addr_ctrl, set_tagged_addr_ctrl
from emukern.kernel.signal.ptrace import (NT_ARM_HW_BREAK, NT_ARM_HW_WATCH, NT_ARM_TAGGED_ADDR_CTRL, NT_ARM_TLS,
                                          NT_PRFPREG, NT_PRSTATUS, Regset)
from emukern.kernel.arch.arm64.hwcap import HWCAP_NAMES
from emukern.kernel.arch.arm64 import pointer_auth as pauth
from emukern.kernel.signal.coredump import note

if TYPE_CHECKING:
    from emukern.kernel.task import Task
    from emukern.kernel.types import Kernel

_ARM_MAX_BRP = 16                    # user_hwdebug_state.dbg_regs[16]
_PSR_MODE_MASK, _PSR_MODE32, _PSR_DAIF = 0xF, 0x10, 0x3C0
_NZCV = 0xF000_0000
NT_ARM_SYSTEM_CALL = 0x404
NT_ARM_PAC_MASK, NT_ARM_PACA_KEYS, NT_ARM_PACG_KEYS = 0x406, 0x407, 0x408
NT_ARM_PAC_ENABLED_KEYS = 0x40A
_EOPNOTSUPP = 95

ARM64_REGSETS = (Regset(NT_PRSTATUS, 34, 8, "NT_PRSTATUS"), Regset(NT_PRFPREG, 132, 4, "NT_PRFPREG"),
                 Regset(NT_ARM_TLS, 2, 8, "NT_ARM_TLS"),
                 Regset(NT_ARM_HW_BREAK, 66, 4, "NT_ARM_HW_BREAK"),
                 Regset(NT_ARM_HW_WATCH, 66, 4, "NT_ARM_HW_WATCH"),
                 Regset(NT_ARM_SVE, NT_ARM_SVE_UNITS, 16, "NT_ARM_SVE"),
                 # struct user_pac_mask, the enabled-keys word, user_pac_address_keys and
                 # user_pac_generic_keys (__uint128_t units)
                 Regset(NT_ARM_PAC_MASK, 2, 8, "NT_ARM_PAC_MASK"),
                 Regset(NT_ARM_PAC_ENABLED_KEYS, 1, 8, "NT_ARM_PAC_ENABLED_KEYS"),
                 Regset(NT_ARM_PACA_KEYS, 4, 16, "NT_ARM_PACA_KEYS"),
                 Regset(NT_ARM_PACG_KEYS, 1, 16, "NT_ARM_PACG_KEYS"),
                 Regset(NT_ARM_TAGGED_ADDR_CTRL, 1, 8, "NT_ARM_TAGGED_ADDR_CTRL"))
_PAC_NOTES = (NT_ARM_PAC_MASK, NT_ARM_PAC_ENABLED_KEYS, NT_ARM_PACA_KEYS, NT_ARM_PACG_KEYS)


def gpr_get(ctx: dict[str, Any]) -> bytes:
    """NT_PRSTATUS of a user context (a saved ``Task.ctx`` or a CPU's save_context): struct
    user_pt_regs — x0-x30, sp, pc, pstate (its NZCV: the only bits EL0 has)."""
    regs = list(ctx["x"]) + [ctx["sp"], ctx["pc"], ctx["nzcv"] & _NZCV]
    return b"".join((v & (2**64 - 1)).to_bytes(8, "little") for v in regs)


def tls_get(ctx: dict[str, Any]) -> bytes:
    """NT_ARM_TLS: TPIDR_EL0, then TPIDR2_EL0, which reads 0 without SME."""
    return ctx["tpidr"].to_bytes(8, "little") + bytes(8)


def regset_access(k: "Kernel", task: "Task", child: "Task", rs: Regset, write: bool, base: int,
                  length: int) -> int | None:
    """sve_get/sve_set's own rules: -EINVAL when the system has no SVE; a write is exactly the
    bytes given (a short one leaves the rest as sve_set_common defines), not merged into a full
    read.  The pointer-auth regsets are -EINVAL on a system without that kind of
    authentication, and NT_ARM_PAC_MASK has no set (-EOPNOTSUPP, whatever the system).  None
    for every other regset (and an SVE read): the generic path."""
    if rs.note in _PAC_NOTES:
        if write and rs.note == NT_ARM_PAC_MASK:
            return -_EOPNOTSUPP              # copy_regset_from_user: no ->set
        ok = (pauth.system_supports_generic_auth(k) if rs.note == NT_ARM_PACG_KEYS
              else pauth.system_supports_address_auth(k))
        return None if ok else -E.EINVAL
    if rs.note != NT_ARM_SVE:
        return None
    if not k.config.has_sve:
        return -E.EINVAL
    if not write:
        return None
    return sve_set(k, k.cpus[task.cpu], child, task.mm.read(base, length))


def regset_get(k: "Kernel", child: "Task", rs: Regset) -> bytes:
    """The whole regset of a stopped (switched-out) task."""
    ctx = child.ctx
    if rs.note == NT_PRSTATUS:
        return gpr_get(ctx)
    if rs.note == NT_PRFPREG:
        return fpr_get(k, child)
    if rs.note == NT_ARM_TLS:
        return tls_get(ctx)
    if rs.note == NT_ARM_SVE:
        return sve_get(k, child)
    if rs.note == NT_ARM_TAGGED_ADDR_CTRL:
        return get_tagged_addr_ctrl(child).to_bytes(8, "little")      # tagged_addr_ctrl_get
    if rs.note == NT_ARM_PAC_MASK:
        return pauth.pac_mask_get()
    if rs.note == NT_ARM_PAC_ENABLED_KEYS:
        return pauth.pac_enabled_keys_get(k, child)
    if rs.note == NT_ARM_PACA_KEYS:
        return pauth.pac_address_keys_get(child)
    if rs.note == NT_ARM_PACG_KEYS:
        return pauth.pac_generic_keys_get(child)
    return hwdebug_get(k, rs.note)


def regset_store(k: "Kernel", child: "Task", rs: Regset, full: bytes, words: list[int]) -> int:
    """Store a whole regset (``full``, also as little-endian u64 ``words``), or -errno."""
    ctx = child.ctx
    if rs.note == NT_PRSTATUS:
        pstate = words[33]
        if pstate & (_PSR_MODE_MASK | _PSR_MODE32 | _PSR_DAIF):
            return -E.EINVAL                # valid_user_regs: only EL0t with DAIF clear
        ctx["x"] = words[:31]
        ctx["sp"], ctx["pc"], ctx["nzcv"] = words[31], words[32], pstate & _NZCV
        return 0
    if rs.note == NT_PRFPREG:
        fpr_set(k, child, full)
        return 0
    if rs.note == NT_ARM_TLS:
        ctx["tpidr"] = words[0]             # TPIDR2 writes are ignored without SME
        return 0
    if rs.note == NT_ARM_TAGGED_ADDR_CTRL:
        return set_tagged_addr_ctrl(k, child, words[0])              # tagged_addr_ctrl_set
    if rs.note == NT_ARM_PAC_ENABLED_KEYS:
        # pac_enabled_keys_set: the word is the new set of enabled keys, out of all four
        return pauth.ptrauth_set_enabled_keys(k, child, pauth.PR_PAC_ENABLED_KEYS_MASK, words[0])
    if rs.note in (NT_ARM_PACA_KEYS, NT_ARM_PACG_KEYS):
        return pauth.pac_keys_set(k, child, full, rs.note == NT_ARM_PACG_KEYS)
    return hwdebug_set(k, rs.note, full)


def hwdebug_info(k: "Kernel", note: int) -> int:
    """ptrace_hbp_get_resource_info: (debug architecture << 8) | slots, from the sanitised
    ID_AA64DFR0_EL1 (DebugVer; BRPs or WRPs + 1, at most 16)."""
    dfr0 = k.arm64_undef.id_regs.sanitised("ID_AA64DFR0_EL1")
    debug_arch = dfr0 & 0xF
    slots = ((dfr0 >> 12) & 0xF) + 1 if note == NT_ARM_HW_BREAK else ((dfr0 >> 20) & 0xF) + 1
    return (debug_arch << 8) | min(slots, _ARM_MAX_BRP)


def hwdebug_get(k: "Kernel", note: int) -> bytes:
    """hw_break_get: dbg_info, a pad word, then (addr, ctrl, pad) per slot — all zero: no
    breakpoint or watchpoint is installed."""
    return hwdebug_info(k, note).to_bytes(4, "little") + bytes(4 + 16 * _ARM_MAX_BRP)


def hwdebug_set(k: "Kernel", note: int, data: bytes) -> int:
    """hw_break_set: entries past the slots are EINVAL when set; an enabled entry (ctrl bit 0)
    is EINVAL too — the machine has no debug registers to program."""
    slots = hwdebug_info(k, note) & 0xFF
    for i in range(_ARM_MAX_BRP):
        off = 8 + 16 * i
        addr = int.from_bytes(data[off:off + 8], "little")
        ctrl = int.from_bytes(data[off + 8:off + 12], "little")
        if (addr or ctrl) and i >= slots:
            return -E.EINVAL
        if ctrl & 1:
            return -E.EINVAL
    return 0


# ---- the core dump's view (fs/binfmt_elf.c fill_thread_core_info over aarch64_regsets) -----------
def core_thread_regsets(k: "Kernel", cpu: Any, t: "Task", ctx: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """(pr_reg, NT_PRFPREG, the "LINUX" notes after it) of one thread of a dying process, each
    as PTRACE_GETREGSET gives it.  A thread live on a CPU has its FP state saved first
    (fpr_get: fpsimd_preserve_current_state)."""
    if cpu is not None:
        from emukern.kernel.arch.arm64.fpsimd import fpsimd_save_user_state
        fpsimd_save_user_state(k, cpu, t, regs=True)
    return gpr_get(ctx), fpr_get(k, t), _linux_notes(k, t, ctx)


def _note(name: bytes, ntype: int, desc: bytes) -> bytes:
    return note(name, ntype, desc)


def _linux_notes(k: "Kernel", t: "Task", ctx: dict[str, Any]) -> bytes:
    """The "LINUX" notes elf_core_dump writes for an arm64 thread after NT_PRFPREG: every regset
    of aarch64_regsets the machine has, in that table's order (measured on Debian's 6.1 and 6.12
    kernels under QEMU's max CPU): TLS, HW_BREAK, HW_WATCH, SYSTEM_CALL, SVE (with SVE), PAC_MASK,
    PAC_ENABLED_KEYS, PACA_KEYS (with address authentication), PACG_KEYS (with generic
    authentication), TAGGED_ADDR_CTRL."""
    caps = k.arch.hwcap()
    has = {name: bool(caps >> HWCAP_NAMES.index(name) & 1) for name in ("sve", "paca", "pacg")}
    th = t.thread
    out = _note(b"LINUX", NT_ARM_TLS, tls_get(ctx))
    out += _note(b"LINUX", NT_ARM_HW_BREAK, hwdebug_get(k, NT_ARM_HW_BREAK))
    out += _note(b"LINUX", NT_ARM_HW_WATCH, hwdebug_get(k, NT_ARM_HW_WATCH))
    # system_call_get: pt_regs->syscallno, NO_SYSCALL (-1) unless the last entry was an svc
    # (its number is still in x8: the kernel does not clobber it)
    nr = ctx["x"][8] & 0xFFFFFFFF if th is not None and th.in_syscall else 0xFFFFFFFF
    out += _note(b"LINUX", NT_ARM_SYSTEM_CALL, nr.to_bytes(4, "little"))
    if has["sve"] and th is not None:
        out += _note(b"LINUX", NT_ARM_SVE, sve_get(k, t))        # as PTRACE_GETREGSET gives it
    if has["paca"]:
        # the same regsets PTRACE_GETREGSET reads: the mask, the thread's enabled keys and keys
        out += _note(b"LINUX", NT_ARM_PAC_MASK, pauth.pac_mask_get())
        out += _note(b"LINUX", NT_ARM_PAC_ENABLED_KEYS, pauth.pac_enabled_keys_get(k, t))
        out += _note(b"LINUX", NT_ARM_PACA_KEYS, pauth.pac_address_keys_get(t))
    if has["pacg"]:
        out += _note(b"LINUX", NT_ARM_PACG_KEYS, pauth.pac_generic_keys_get(t))
    # tagged_addr_ctrl_get: PR_TAGGED_ADDR_ENABLE when the thread enabled the tagged address ABI
    out += _note(b"LINUX", NT_ARM_TAGGED_ADDR_CTRL, get_tagged_addr_ctrl(t).to_bytes(8, "little"))
    return out
