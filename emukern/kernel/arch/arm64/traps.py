"""arm64 undefined-instruction and system-register traps — arch/arm64/kernel/traps.c (+ the EL0 MRS
emulation of cpufeature.c and the undef hooks of armv8_deprecated.c).

"arm64: rework EL0 MRS emulation" (Mark Rutland; ``kernel.policy("arm64-mrs")``), on Linux v5.10:

* ``hook-list`` (before)::

      do_el0_undef()                      undef_read_insn       user_insn_read(): get_user the insn
        call_undef_hook(regs, insn)
          raw_spin_lock_irqsave(&undef_lock)                    kernel.spin_lock(cpu, "undef_lock")
          list_for_each_entry(hook, &undef_hook, node)          undef_hook_compare per hook
              if ((insn & mask) == val && (pstate & pmask) == pval) fn = hook->fn;
          raw_spin_unlock_irqrestore(&undef_lock)               kernel.spin_unlock
          return fn ? fn(regs, insn) : 1;                        emulate_mrs (mrs_hook's fn)
        force_signal_inject(SIGILL)  if nothing handled it

  The walk visits *every* hook (no early exit: the last match wins) and the hook's ``fn`` runs
  after the lock is dropped — exactly as Linux's ``call_undef_hook()``; only the walk is under
  ``undef_lock``, but every MRS on every CPU takes that one global lock.
* ``direct`` (after, default): ``do_el0_undef()`` calls ``try_emulate_mrs()`` right after reading
  the instruction — lock-free — and only other instructions go on to ``call_undef_hook()``.  The
  ``mrs_hook`` is no longer registered.

With FEAT_IDST (``MachineConfig.idst``) an EL0 read of the ID space is an EC 0x18 trap:
``do_el0_sys()`` walks the static ``sys64_hooks[]`` array (no lock, first match) to
``mrs_handler()`` -> ``do_emulate_mrs()``; both policies behave the same there.

The undef hook list (``Linux's LIST_HEAD(undef_hook)``; ``register_undef_hook`` is ``list_add``,
i.e. *at the head*).  Registration order at boot (both are ``core_initcall``s; within a level the
link order of arch/arm64/kernel/Makefile decides, and ``cpufeature.o`` links before
``armv8_deprecated.o``):

1. ``enable_mrs_emulation()`` registers ``mrs_hook``                  (hook-list policy only)
2. ``armv8_deprecated_init()``: ``register_insn_emulation()`` registers the hooks of every
   instruction whose mode is "emulate": SWP/SWPB (obsolete: default *undef*, not registered),
   CP15 barriers (deprecated: default *emulate*, 2 hooks), SETEND (deprecated: default *emulate*
   when the system supports mixed-endian EL0 — Unicorn's ``max`` does (ID_AA64MMFR0_EL1.BigEnd=1)
   — 2 hooks, A32 and T16).

So the walk for an AArch64 MRS compares, in order: setend T16, setend A32, cp15 barrier #2,
cp15 barrier #1, then mrs_hook (5 compares; the AArch32 hooks never match an AArch64 task: their
pstate check wants AArch32 user mode).  The list is configured the Linux way, through the
``abi.swp`` / ``abi.cp15_barrier`` / ``abi.setend`` sysctls (0 = undef, 1 = emulate, 2 = hw;
``--sysctl abi.setend=0``); changing one (un)registers that instruction's hooks, at the head, as
``update_insn_emulation_mode()`` does.  (The AArch32 handlers themselves are not modelled: emukern
runs AArch64 tasks only, which they never match.)

Lock ordering across simulated CPUs: a trap that is about to take ``undef_lock`` while another
active CPU's clock is still behind is parked (``Kernel.sync_gate``) and delivered once this CPU is
the furthest behind, so CPUs take the lock in simulated-time order and spinning emerges from the
lock's hand-offs (``kernel/spinlock.py``), independent of the lock-step quantum.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, cast

from emukern.machine import regs

from emukern.errors import ConfigError
from emukern.kernel import errno as E
from emukern.kernel.plugins import kernel_function
from emukern.kernel.sysctl import SysctlEntry
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.kernel.signal import generate as signal_generate

UNDEF_LOCK = "undef_lock"

# PSTATE values the hooks compare against (arch/arm64/include/uapi/asm/ptrace.h)
PSR_MODE_EL0t = 0x0
PSR_AA32_MODE_USR = 0x10
PSR_AA32_MODE_MASK = 0x1F
PSR_AA32_T_BIT = 0x20
#: PSTATE of an AArch64 EL0 task as far as the hooks' masks can see (M[4:0] = EL0t, T = 0).
EL0_PSTATE = PSR_MODE_EL0t

# insn emulation modes (armv8_deprecated.c: enum insn_emulation_mode)
INSN_UNDEF, INSN_EMULATE, INSN_HW = 0, 1, 2


@dataclass(frozen=True)
class UndefHook:
    """Linux ``struct undef_hook``; ``fn(k, cpu, task, trap, insn) -> int`` (0 = handled)."""
    name: str
    instr_mask: int
    instr_val: int
    pstate_mask: int
    pstate_val: int
    fn: Callable[..., int] | None = None

    def matches(self, insn: int, pstate: int) -> bool:
        return (insn & self.instr_mask) == self.instr_val and (pstate & self.pstate_mask) == self.pstate_val


def _aarch32_only(k: "Kernel", cpu: Any, task: Any, trap: Trap, insn: int) -> int:
    return 1        # AArch32 emulation handlers: never reached by an AArch64 task


# armv8_deprecated.c (v5.10): name -> (hooks in array order, status, max mode)
DEPRECATED_INSNS: dict[str, tuple[tuple[UndefHook, ...], str, int]] = {
    "swp": ((UndefHook("swp", 0x0FB00FF0, 0x01000090, PSR_AA32_MODE_MASK, PSR_AA32_MODE_USR,
                       _aarch32_only),), "obsolete", INSN_EMULATE),
    "cp15_barrier": ((UndefHook("cp15_barrier", 0x0FFF0FDF, 0x0E070F9A, PSR_AA32_MODE_MASK,
                                PSR_AA32_MODE_USR, _aarch32_only),
                      UndefHook("cp15_barrier", 0x0FFF0FFF, 0x0E070F95, PSR_AA32_MODE_MASK,
                                PSR_AA32_MODE_USR, _aarch32_only)), "deprecated", INSN_HW),
    "setend": ((UndefHook("setend_a32", 0xFFFFFDFF, 0xF1010000, PSR_AA32_MODE_MASK,
                          PSR_AA32_MODE_USR, _aarch32_only),
                UndefHook("setend_t16", 0xFFFFFFF7, 0x0000B650, PSR_AA32_T_BIT | PSR_AA32_MODE_MASK,
                          PSR_AA32_T_BIT | PSR_AA32_MODE_USR, _aarch32_only)), "deprecated", INSN_HW),
}


class UndefState:
    """The arm64 trap state of one machine: ID registers, the undef hook list, caches."""

    def __init__(self, k: "Kernel") -> None:
        from emukern.kernel.arch.arm64.cpufeature import (SystemIdRegs, build_cpu_id_regs, cpu_model_id_regs,
                                                     ftr_regs_for)
        try:
            base = cpu_model_id_regs(k.config.arm64_cpu_model)
        except ValueError as exc:
            raise ConfigError(str(exc), hint="arm64_cpu_model is qemu-max (default) or unicorn-max") from None
        try:
            cpus = build_cpu_id_regs(k.config.cpus, k.config.cpu_id_overrides, base=base)
        except ValueError as exc:
            raise ConfigError(f"cpu_id_overrides: {exc}",
                              hint="use {cpu: {'REG.FIELD': value}} / --cpu-id CPU:REG[.FIELD]=VALUE, "
                                   "e.g. --cpu-id 1:ID_AA64ISAR0_EL1.AES=0") from None
        if not k.config.has_sve:
            # a machine without SVE (like Linux's arm64.nosve override): the ID registers say so
            # too, so the emulated MRS and the HWCAPs (kernel/arch/arm64/hwcap.py) agree
            cpus = [c.with_overrides("ID_AA64PFR0_EL1", "SVE", 0).with_raw("ID_AA64ZFR0_EL1", 0) for c in cpus]
        if not k.config.has_pac:
            # arm64.nopauth: no address or generic authentication in any algorithm field, so the
            # MRS, the HWCAPs and pointer_auth.setup (which then never enables the keys) agree
            for reg, fld in (("ID_AA64ISAR1_EL1", "APA"), ("ID_AA64ISAR1_EL1", "API"), ("ID_AA64ISAR1_EL1", "GPA"),
                             ("ID_AA64ISAR1_EL1", "GPI"), ("ID_AA64ISAR2_EL1", "APA3"), ("ID_AA64ISAR2_EL1", "GPA3")):
                cpus = [c.with_overrides(reg, fld, 0) for c in cpus]
        # the arm64_ftr_bits tables of the modelled release (kernel/versions.py)
        self.id_regs = SystemIdRegs(cpus, tables=ftr_regs_for(k.version.ftr_tables))
        self.k = k
        self.hooks: list[UndefHook] = []          # head first, as list_for_each_entry walks it
        self.mrs_cache: dict[tuple[int, int], tuple[int, int] | None] = {}
        self.walk_cache: dict[int, Callable[..., int] | None] = {}
        self.costs = k.cost.values                # the live cost table (overrides included)
        # arm64-mrs == "direct", i.e. kernel.policy("arm64-mrs") as the decision points read it.
        # Kept as a field that sync_mrs_hook (the switch's change listener) refreshes, so a
        # run-time `policy` switch still takes effect at the next trap, without a policy lookup on
        # every trap (two per MRS: sync_gate and do_el0_undef).
        self.direct = k.policy("arm64-mrs") == "direct"

    def sync_mrs_hook(self, _value: str = "") -> None:
        """Before the rework, MRS emulation is one more undef_hook (enable_mrs_emulation); after
        it, there is no such hook.  Called at boot and whenever arm64-mrs is switched."""
        self.direct = self.k.policy("arm64-mrs") == "direct"
        present = any(h is _MRS_HOOK for h in self.hooks)
        if not self.direct and not present:
            self.register(_MRS_HOOK)
        elif self.direct and present:
            self.unregister(_MRS_HOOK)

    # register_undef_hook / unregister_undef_hook (under undef_lock in Linux: boot time here)
    def register(self, hook: UndefHook) -> None:
        self.hooks.insert(0, hook)                # list_add: at the head
        self.walk_cache.clear()

    def unregister(self, hook: UndefHook) -> None:
        self.hooks = [h for h in self.hooks if h is not hook]
        self.walk_cache.clear()

    def walk(self, insn: int) -> Callable[..., int] | None:
        """list_for_each_entry over the hooks: the fn of the *last* match (Linux keeps walking).
        The pstate is an AArch64 EL0 task's; results are cached per instruction word."""
        try:
            return self.walk_cache[insn]
        except KeyError:
            fn = None
            for hook in self.hooks:
                if hook.matches(insn, EL0_PSTATE):
                    fn = hook.fn
            self.walk_cache[insn] = fn
            return fn

    def sync_gate(self, cpu: "Arm64Cpu", task: "Task", trap: Trap) -> bool:
        """Kernel.sync_gate: park an undef trap that will take undef_lock while others are behind."""
        if trap.kind is not TrapKind.ILLEGAL:
            return False
        insn = trap.insn
        if insn is None:
            return False                          # SIGILL without the lock
        if self.direct and (insn & 0xFFF00000) == 0xD5300000 and self.emulate(insn, cpu.index) is not None:
            return False                          # try_emulate_mrs handles it lock-free
        k = self.k
        k.percpu[cpu.index].sync_hint = True      # it takes undef_lock
        return cpu.now > k.sync_floor

    def emulate(self, insn: int, cpu_index: int) -> tuple[int, int] | None:
        """do_emulate_mrs on ``cpu_index``: (rt, value) or None (not emulated -> SIGILL)."""
        key = (insn, cpu_index)
        try:
            return self.mrs_cache[key]
        except KeyError:
            from emukern.kernel.arch.arm64.cpufeature import try_emulate_mrs_value
            res = self.mrs_cache[key] = try_emulate_mrs_value(insn, cpu_index, self.id_regs)
            return res

    def emulate_iss(self, iss: int, cpu_index: int) -> tuple[int, int] | None:
        """mrs_handler(): the same from an EC 0x18 ISS (esr_sys64_to_sysreg, ISS.Rt)."""
        key = (-1 - iss, cpu_index)
        try:
            return self.mrs_cache[key]
        except KeyError:
            from emukern.kernel.arch.arm64.cpufeature import try_emulate_mrs_esr
            res = self.mrs_cache[key] = try_emulate_mrs_esr(iss, cpu_index, self.id_regs)
            return res


def _state(k: "Kernel") -> UndefState:
    st = k.arm64_undef
    assert isinstance(st, UndefState), "arm64 traps.setup has not run"
    return st


def _mixed_endian_el0(st: UndefState) -> bool:
    """system_supports_mixed_endian_el0(): ID_AA64MMFR0_EL1.BigEnd or BigEndEL0 on every CPU."""
    v = st.id_regs.sanitised("ID_AA64MMFR0_EL1")
    return bool((v >> 8) & 0xF == 1 or (v >> 16) & 0xF == 1)


def _register_deprecated(k: "Kernel", st: UndefState) -> None:
    """armv8_deprecated_init(): register_insn_emulation() for SWP, CP15 barriers, SETEND."""
    for name, (hooks, status, max_mode) in DEPRECATED_INSNS.items():
        if name == "setend" and not _mixed_endian_el0(st):
            continue      # "setend instruction emulation is not supported on this system"
        mode = INSN_EMULATE if status == "deprecated" else INSN_UNDEF
        if mode == INSN_EMULATE:
            for h in hooks:
                st.register(h)

        def on_change(new: int, hooks: tuple[UndefHook, ...] = hooks, name: str = name) -> None:
            # update_insn_emulation_mode(): leave the old mode, enter the new one
            for h in hooks:
                st.unregister(h)
            if new == INSN_EMULATE:
                for h in hooks:
                    st.register(h)
        k.sysctl.register(SysctlEntry(f"abi.{name}", mode, minimum=INSN_UNDEF, maximum=max_mode,
                                      kind="int", on_change=on_change))


def setup(k: "Kernel") -> None:
    # SCTLR_EL1 as Linux programs it for EL0 (INIT_SCTLR_EL1_MMU_ON): UCT (CTR_EL0 readable),
    # UCI (DC CVAU/CVAC/CIVAC and IC IVAU allowed: __builtin___clear_cache works without a
    # trap) and DZE (DC ZVA allowed).  No CPU needs the trap-and-emulate workarounds of
    # user_cache_maint_handler/ctr_read_handler, so these instructions never reach do_el0_sys.
    for cpu in k.cpus:
        cast("Arm64Cpu", cpu).set_el0_cache_controls(uct=True, uci=True, dze=True)
    st = UndefState(k)
    k.arm64_undef = st
    k.id_regs = st.id_regs
    st.sync_mrs_hook()                                # core_initcall(enable_mrs_emulation)
    k.policies.on_change("arm64-mrs", st.sync_mrs_hook)
    _register_deprecated(k, st)
    if k.config.cpus > 1:
        k.sync_gate = st.sync_gate


# ---- MRS emulation -------------------------------------------------------------------------------
# (Xt, PC) register-id pairs, one module-level tuple per Rt (Cpu.batch_writer caches its writer by
# the tuple's identity): the emulated value and the skipped PC go to the CPU in one libunicorn call
_XT_PC: tuple[tuple[int, ...], ...] = tuple(regs.regids("arm64", f"x{i}", "pc") for i in range(31))


def _finish_mrs(cpu: "Arm64Cpu", trap: Trap, res: tuple[int, int]) -> None:
    rt, value = res
    if rt != 31:
        # pt_regs_write_reg(regs, rt, val) and arm64_skip_faulting_instruction(regs, 4) together
        cpu.batch_writer(_XT_PC[rt])((value, trap.pc + 4))
    else:
        cpu.set_pc(trap.pc + 4)                   # XZR discards the value: only the PC moves


def try_emulate_mrs(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap, insn: int) -> bool:
    """cpufeature.c try_emulate_mrs(): an AArch64 MRS of an emulated register -> handled."""
    if (insn & 0xFFF00000) != 0xD5300000:        # aarch64_insn_is_mrs()
        return False
    st: UndefState = k.arm64_undef     # (set by setup at boot; _state checks it off the hot path)
    cpu.charge(st.costs["emulate_mrs"])
    res = st.emulate(insn, cpu.index)
    if res is None:
        return False
    _finish_mrs(cpu, trap, res)
    return True


def _emulate_mrs_hook(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap, insn: int) -> int:
    """mrs_hook.fn = emulate_mrs() (before the patch): 0 if emulated, else -EINVAL."""
    st: UndefState = k.arm64_undef     # (set by setup at boot; _state checks it off the hot path)
    cpu.charge(st.costs["emulate_mrs"])
    res = st.emulate(insn, cpu.index)
    if res is None:
        return -E.EINVAL
    _finish_mrs(cpu, trap, res)
    return 0


_MRS_HOOK = UndefHook("mrs", 0xFFF00000, 0xD5300000, PSR_AA32_MODE_MASK, PSR_MODE_EL0t, _emulate_mrs_hook)


def call_undef_hook(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap, insn: int) -> int:
    """Walk undef_hook under undef_lock (every hook; the last match wins), call its fn unlocked."""
    st: UndefState = k.arm64_undef     # (set by setup at boot; _state checks it off the hot path)
    held = k.spin_lock(cpu, UNDEF_LOCK)
    fn = st.walk(insn)
    cpu.charge(st.costs["undef_hook_compare"] * len(st.hooks))
    k.spin_unlock(cpu, UNDEF_LOCK, held)
    return fn(k, cpu, task, trap, insn) if fn is not None else 1


@kernel_function
def do_el0_undef(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap) -> None:
    trap.handler = "do_el0_undef"
    st: UndefState = k.arm64_undef     # (set by setup at boot; _state checks it off the hot path)
    cpu.charge(st.costs["undef_read_insn"])      # user_insn_read(): get_user()
    insn = trap.insn
    if insn is None:
        signal_generate.force_sig(k, cpu, task, E.SIGILL, trap, "undefined instruction (unreadable)")
        return
    if st.direct and try_emulate_mrs(k, cpu, task, trap, insn):
        trap.decision = "emulated MRS (try_emulate_mrs)"
        return
    if call_undef_hook(k, cpu, task, trap, insn) == 0:
        trap.decision = "emulated MRS (undef_hook)"
        return
    signal_generate.force_sig(k, cpu, task, E.SIGILL, trap, trap.detail or "undefined instruction")


# do_el0_sys(): the static sys64_hooks[] array, walked without a lock (first match).  v5.10's
# entries are below; the modelled releases add cntvctss_read_handler (versions.py).
# (esr_mask, esr_val) over ISS bits as in asm/esr.h; only mrs_handler is modelled as a handler,
# the others are compared (cost) and never match an ID-space MRS.
_SYS64_HOOKS_BEFORE_MRS = ("user_cache_maint_handler", "ctr_read_handler", "cntvct_read_handler",
                           "cntfrq_read_handler")


def do_el0_sys(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap) -> None:
    trap.handler = "do_el0_sys"
    st = _state(k)
    iss = (trap.iss or 0) if trap.esr is not None else 0
    # ESR_ELx_SYS64_ISS_SYS_MRS_OP_MASK/VAL: a read with Op0=3, Op1=0, CRn=0 -> mrs_handler
    is_id_read = bool(iss & 1) and (iss >> 20) & 3 == 3 and (iss >> 14) & 7 == 0 and (iss >> 10) & 0xF == 0
    # the release's sys64_hooks[] (kernel/versions.py): every entry up to mrs_handler is compared
    cpu.charge(st.costs["undef_hook_compare"] * (len(k.version.sys64_hooks_before_mrs) + 1))
    if is_id_read:
        cpu.charge(st.costs["emulate_mrs"])
        res = st.emulate_iss(iss, cpu.index)
        if res is not None:
            _finish_mrs(cpu, trap, res)
            trap.decision = "emulated MRS (mrs_handler, EC 0x18)"
            return
        signal_generate.force_sig(k, cpu, task, E.SIGILL, trap, "system register not emulated (mrs_handler)")
        return
    # No sys64 hook matched.  Every modelled release (6.1, 6.12, 7.3) then hands the instruction to
    # the ordinary undefined-instruction path, because SYS encodings that trap today used to be
    # UNDEFINED at EL0 and must keep behaving the same: do_el0_undef() reads the instruction and
    # walks the undef hooks (under undef_lock) before it sends SIGILL.
    do_el0_undef(k, cpu, task, trap)
    trap.handler = "do_el0_sys"


TRAP_TRACE = 2          # si_code of a completed single step


def single_step_handler(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap) -> None:
    """The EL0 software-step exception (debug-monitors.c single_step_handler): the stepped
    instruction completed, the tracee gets SIGTRAP with si_code TRAP_TRACE and the address of
    the next instruction, so its tracer sees a stop.  The step stays disarmed (the CPU cleared
    it when it took the exception) until the tracer asks PTRACE_SINGLESTEP again."""
    from emukern.kernel.signal.defs import SIGTRAP
    trap.handler = "single_step_handler"
    trap.decision = f"SIGTRAP (TRAP_TRACE): one instruction stepped, next pc {trap.pc:#x}"
    report = {"signal": SIGTRAP, "signame": "SIGTRAP", "tid": task.tid, "why": "single step", "pc": trap.pc}
    signal_generate.force_sig_fault(k, cpu, task, SIGTRAP, TRAP_TRACE, trap.pc, trap, report)

