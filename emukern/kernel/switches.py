"""The four modelled Linux changes (the patches as their mails name them) and their switches.

The declarations only, with no kernel imports: :mod:`emukern.kernel.policies` (one machine's
values) and :mod:`emukern.kernel.plugins` (user variants) both read them, so neither has to import
the other inside a function.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    """A Linux patch as its mail names it (from the raw mails in the project's seeds folder)."""
    subject: str
    author: str
    date: str
    message_id: str
    figure: str               # the published figure the benchmark compares with, and its source

    @property
    def short(self) -> str:
        """How user-facing text names the change: subject (author, date)."""
        return f"{self.subject} ({self.author}, {self.date})"

    @property
    def cite(self) -> str:
        return f"{self.short}, {self.message_id}"


PATCHES: dict[str, Patch] = {
    "riscv-vstate-sysctl": Patch(
        "riscv: Add sysctl to control discard of vstate during syscall", "Drew Fustini", "2025-07-18",
        "<20250719033912.1313955-1-fustini@kernel.org>",
        "null_syscall (vsetvli + getppid loop) on SiFive X280 (Tenstorrent Blackhole P100): 198.73 ns "
        "with discard=1, 149.89 ns with discard=0 (the patch mail)"),
    "riscv-discard": Patch(
        "riscv: vector: treat VS_INITIAL as discard", "Andy Chiu", "2026-04-01",
        "<20260402043414.2421916-2-andybnac@gmail.com>",
        "lmbench lat_ctx 2 on an FPGA with VLEN=512: 599.84 before, 559.17 after, 6.78 % better "
        "(the v2 patch mail)"),
    # the successor series of "treat VS_INITIAL as discard": a third value of the same switch
    "riscv-discard-optimize-restore": Patch(
        "riscv: optimize Vector context restore on syscall", "Andy Chiu; patch 2 by daichengrong",
        "v3 2026-05-21, v4 2026-05-28",
        "<20260521162521.188629-1-tchiu@tenstorrent.com> (v3 cover letter; v4 2/4 carries the figures)",
        "getpid on SiFive X280 (Blackhole), ns before -> after by sstatus.VS at entry: Initial 234.8 -> "
        "174.4 (-25.7 %), Dirty 235.9 -> 242.4 (+2.7 %, a regression the mail states), Off 178.2 -> "
        "174.5; lat_ctx_v mean 14.19 -> 11.62 us (-18.1 %) (the v4 2/4 patch mail)"),
    "arm64-mrs": Patch(
        "arm64: rework EL0 MRS emulation", "Mark Rutland; v5.10 backport by Jinjie Ruan", "2023-10-11",
        "<20231011072701.876772-11-ruanjinjie@huawei.com>",
        "64-vCPU VM, N threads x 1,000,000 reads of ID_AA64ISAR0_EL1: real 0.29 -> 65.40 s (1 -> 64 "
        "threads) before, 0.24 -> 0.33 s after; system 3609.09 / 11.27 s at 64 (the backport mail)"),
    "arm64-sve": Patch(
        "arm64/sve: Performance improvements with SVE state saving", "Mark Brown", "v11, 2026",
        "v11 cover letter and 2 patches; our copy has no Message-ID (v10 was 2026-07-03; change-id "
        "20230807-arm64-sve-trap-mitigation-2e7e2663c849)",
        "fp-pidbench, 128-bit SVE: ~6 % syscall overhead after SVE use; patch 2 ~4.5 % better than "
        "baseline after SVE use, ~0.4 % overhead with SVE between syscalls (the v11 cover letter)"),
}


@dataclass(frozen=True)
class Switch:
    name: str
    values: tuple[str, ...]
    default: str
    patch: Patch
    what: str
    arch: str
    decided: str              # where the kernel reads it (and so when a run-time switch bites)
    # values that come from a later patch series than ``patch`` (value -> that series)
    later: tuple[tuple[str, Patch], ...] = ()

    def patch_of(self, value: str) -> Patch:
        """The Linux change a value models: a later series' value names that series."""
        return dict(self.later).get(value, self.patch)


SWITCHES: dict[str, Switch] = {s.name: s for s in [
    Switch("riscv-vstate-sysctl", ("absent", "present"), "present", PATCHES["riscv-vstate-sysctl"],
           "absent: syscall entry always discards vector state (before the patch); present: "
           "abi.riscv_v_vstate_discard decides", "riscv64",
           "__riscv_v_vstate_discard, at every discard; switching adds/removes the sysctl"),
    Switch("riscv-discard", ("eager", "deferred", "optimize-restore"), "deferred", PATCHES["riscv-discard"],
           "eager: clobber registers at syscall entry and mark Dirty; deferred: mark VS=Initial and "
           "clobber on return to user, never saving the dead context; optimize-restore (the successor "
           "series, " + PATCHES["riscv-discard-optimize-restore"].short + "): VS=Initial means 'nothing worth saving' across syscalls and context switches "
           "(set_restore no longer marks Clean), a signal frame and ptrace see the nulled state, "
           "SETREGSET on an Initial tracee is dropped", "riscv64",
           "riscv_v_vstate_discard / _restore / _set_restore, riscv_v_first_use_handler, "
           "save_v_state / __restore_v_state (signal), riscv_vr_get / _set (ptrace), at every call",
           later=(("optimize-restore", PATCHES["riscv-discard-optimize-restore"]),)),
    Switch("arm64-mrs", ("hook-list", "direct"), "direct", PATCHES["arm64-mrs"],
           "hook-list: do_el0_undef walks undef_hooks under undef_lock; direct: try_emulate_mrs "
           "first, lock-free", "arm64", "do_el0_undef, at every UNDEFINED trap"),
    Switch("arm64-sve", ("legacy", "p1", "p1+p2"), "p1+p2", PATCHES["arm64-sve"],
           "legacy: TIF_SVE dropped only on an FPSIMD-only load; p1: sve_timeout kept on that load; "
           "p1+p2: also drop TIF_SVE at syscall entry once the timeout passed", "arm64",
           "do_sve_acc, task_fpsimd_load, fpsimd_syscall_enter, at every call"),
]}
