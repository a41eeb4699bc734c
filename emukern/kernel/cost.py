"""The kernel's cost model: every cycle the kernel side charges comes from this one table.

It models kernel work (exception entry/return, syscall dispatch, schedule, the context switch,
trap handling ...), so it lives with the kernel; what the hardware costs stays in the machine
(one cycle per user instruction from the instruction counter, the RVV unit's beat costs in
``emukern.machine.rvv.cost``, which this table only lets the user override as ``rvv.*``).

User code costs one cycle per instruction (IPC 1, counted exactly by the instruction counter);
vector instructions on the RVV unit cost what ``emukern.machine.rvv.cost`` says; kernel stubs that
run real instructions (RVV save/restore/clobber sequences, SVE flushes) are charged by what they
execute.  Everything else the Python kernel does is charged here, by name.

The defaults are instruction-count estimates of the Linux code paths they stand for, assuming
IPC≈1 on an in-order core — not fitted to any seed figure.  Each entry says what it stands for, so
a user can see which constant a result depends on and override it (``--cost key=value`` or
``--cost-file FILE`` with ``key = value`` lines).
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from dataclasses import dataclass, field
from pathlib import Path

from emukern.errors import ConfigError
from emukern.machine.rvv.cost import DEFAULT_COSTS as RVV

# name -> (default cycles, what it models)
DEFAULT_COSTS: dict[str, tuple[int, str]] = {
    "exception_entry": (60, "kernel_entry / handle_exception: save 31 GPRs + sp, read epc/status/cause "
                            "(~35 stores and a few CSR/sysreg reads)"),
    "exception_return": (50, "ret_to_user / ret_from_exception: restore GPRs, write epc/status, eret/sret"),
    "syscall_dispatch": (30, "el0_svc_common / do_trap_ecall_u: bounds check, table lookup, indirect call"),
    "syscall_body": (20, "a trivial syscall body such as getpid/getppid (task->tgid via current)"),
    "syscall_per_byte": (1, "copy_to_user/copy_from_user per byte (read, write, pipes)"),
    "pipe_op": (150, "pipe_read/pipe_write: pipe mutex, wait-queue checks, buffer bookkeeping"),
    "schedule": (350, "schedule(): pick_next_task (CFS), rq lock, accounting"),
    "switch_mm": (100, "switch_mm: ASID/satp or TTBR0 switch when the next task has another mm"),
    "switch_to": (60, "__switch_to / cpu_switch_to: callee-saved registers, sp, tls"),
    "fp_save": (70, "save 32 scalar FP/FPSIMD registers + control to the thread struct"),
    "fp_restore": (70, "restore 32 scalar FP/FPSIMD registers + control"),
    "timer_tick": (300, "timer interrupt: entry/exit, update_process_times, scheduler_tick"),
    "wakeup": (120, "try_to_wake_up: enqueue on a run queue, set state"),
    "fork": (5000, "copy_process + mm/file table duplication (page-table copy not modelled)"),
    "exec": (20000, "execve: load ELF, new mm, stack setup"),
    "futex_op": (150, "futex hash-bucket lookup, queue/dequeue"),
    "mmap_op": (400, "vma allocation and insertion"),
    "signal_deliver": (500, "force_sig / signal delivery bookkeeping"),
    "undef_read_insn": (20, "do_el0_undef: read the faulting instruction from user memory (get_user)"),
    "undef_hook_compare": (6, "call_undef_hook: one (instr & mask) == val and pstate comparison"),
    "emulate_mrs": (40, "emulate_mrs: decode sysreg encoding, look up the sanitised value, write Rt"),
    "spin_lock": (20, "raw_spin_lock_irqsave uncontended: irq save + one atomic (LSE cas/amo)"),
    "spin_unlock": (10, "raw_spin_unlock_irqrestore: store-release + irq restore"),
    "cacheline_transfer": (100, "moving a contended lock's cache line between cores (~100 ns class on "
                               "server parts; one per contended hand-off)"),
    "spin_poll": (10, "one iteration of the spin-wait loop (load of the lock word)"),
    "sve_access_trap": (80, "do_sve_acc bookkeeping besides the register conversion it runs"),
    "first_use_trap": (80, "riscv_v_first_use_handler bookkeeping besides allocation/restore"),
    "vstate_alloc": (200, "allocate and zero the per-task vector context (kzalloc)"),
    "tif_check": (2, "a thread-flag test on the exit-to-user path"),
    "sve_sysreg": (10, "sysreg_clear_set of CPACR_EL1.ZEN or ZCR_EL1.LEN when the value changes "
                       "(sve_user_enable/disable, sve_set_vq: mrs + msr, serialised by the eret)"),
}


@dataclass
class CostTable:
    values: dict[str, int] = field(default_factory=lambda: {k: v for k, (v, _) in DEFAULT_COSTS.items()})

    def __post_init__(self) -> None:
        # every constant is also a plain attribute (cost.schedule): read on hot paths, so no
        # __getattr__ fallback
        self.__dict__.update(self.values)

    def __getitem__(self, key: str) -> int:
        return self.values[key]

    if TYPE_CHECKING:
        # (for the type checker only: at run time every constant is a real attribute, above)
        def __getattr__(self, name: str) -> int: ...

    # RVV unit constants (emukern.machine.rvv.cost.DEFAULT_COSTS) are overridden as "rvv.<kind>.<part>",
    # e.g. rvv.load.beat=2; the kernel hands them to each CPU's vector unit
    rvv: dict[str, int] = field(default_factory=dict)

    def override(self, key: str, value: str | int) -> None:
        if key.startswith("rvv."):
            self._override_rvv(key, value)
            return
        if key not in self.values:
            near = ", ".join(sorted(self.values))
            raise ConfigError(f"unknown cost key {key!r}", hint=f"known keys: {near}")
        try:
            v = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"cost {key} must be an integer number of cycles, got {value!r}") from None
        if v < 0:
            raise ConfigError(f"cost {key} must be >= 0, got {v}")
        self.values[key] = v
        self.__dict__[key] = v

    def _override_rvv(self, key: str, value: str | int) -> None:
        name = key[len("rvv."):]
        if name not in RVV:
            raise ConfigError(f"unknown cost key {key!r}",
                              hint="RVV keys: " + ", ".join(f"rvv.{k}" for k in sorted(RVV)))
        try:
            v = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"cost {key} must be an integer number of cycles, got {value!r}") from None
        if v < 0:
            raise ConfigError(f"cost {key} must be >= 0, got {v}")
        self.rvv[name] = v

    def apply(self, overrides: list[str]) -> None:
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--cost expects key=value, got {item!r}", hint="e.g. --cost schedule=500")
            k, v = item.split("=", 1)
            self.override(k.strip(), v.strip())

    def load_file(self, path: str | Path) -> None:
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read cost file {p}: {exc.strerror}") from None
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" not in line:
                raise ConfigError(f"{p}:{n}: expected 'key = value', got {line!r}")
            k, v = line.split("=", 1)
            self.override(k.strip(), v.strip())

    def describe(self) -> list[tuple[str, int, str]]:
        """(key, value, what it models) for every constant, the RVV unit's ("rvv.*") included."""
        rows = [(k, self.values[k], DEFAULT_COSTS[k][1]) for k in sorted(self.values)]
        for k in sorted(RVV):
            kind, part = k.split(".")
            what = {"base": "fixed cycles", "beat": "cycles per DLEN-bit beat",
                    "reg": "cycles per register of the group"}[part]
            v = self.rvv.get(k, RVV[k])
            rows.append((f"rvv.{k}", int(v) if float(v).is_integer() else v,  # type: ignore[arg-type]
                         f"RVV {kind} instructions: {what}"))
        return rows
