"""Which Linux emukern models: one coherent kernel version per architecture (``--kernel NAME``).

A real kernel is one snapshot of many paths that changed at different times.  Mixing them gives a
kernel that never existed (v5.10's undef_hook list beside v6.6 ID-register tables beside a v7.x
``fpsimd_syscall_enter``).  A :class:`KernelVersion` names the Linux release each modelled path
follows and selects, together:

* ``mrs``: the EL0 MRS emulation path of do_el0_undef() -- ``hook-list`` (mrs_hook on the
  undef_hook list, walked under undef_lock: every release before 6.2) or ``direct``
  (try_emulate_mrs() first, lock-free: "arm64: rework EL0 MRS emulation" by Mark Rutland, merged
  for 6.2).  It is the ``arm64-mrs`` policy's value in that kernel.
* ``ftr_tables``: the ID-register field tables (``arm64_ftr_bits``) of that release
  (:func:`emukern.kernel.arch.arm64.cpufeature.ftr_regs_for`): e.g. 6.1 still keeps the AArch32
  ID_ISAR6_EL1 fields, MVFR1_EL1.FPHP/SIMDHP and ID_PFR2_EL1.SSBS hidden from EL0, which 6.12
  exposes (measured on Debian's 6.1.176 and 6.12.117 under qemu-system, ``emukern compare``).
* ``fpsimd_syscall``: how syscall entry and fpsimd_save_user_state() treat SVE state:

  - ``sve_user_discard`` (6.1): syscall entry clears TIF_SVE and makes EL0 SVE trap again; the
    next SVE instruction takes do_sve_acc().  Mark Brown's "arm64/sve: Leave SVE enabled on
    syscall if we don't context switch" (8c845e273104, 6.2) removed this.
  - ``in_syscall`` (6.2 .. 6.1x, so Debian 13's 6.12): syscall entry keeps TIF_SVE and flushes
    the live state above the FPSIMD subset (sve_flush_live); fpsimd_save_user_state() saves only
    the FPSIMD subset while ``in_syscall(current_pt_regs())``; loading FPSIMD-only state drops
    TIF_SVE.
  - ``fpsimd_syscall_enter`` (the newest release): the same flush, but syscall entry records
    ``to_save = FP_STATE_FPSIMD`` (Mark Rutland's fpsimd_syscall_enter/exit rework) and the save
    tests only ``to_save``.

  The three are the same for a task that does not use SVE; they differ in when TIF_SVE is dropped
  and so in how many SVE access traps and flushes a task pays.
* ``policies``: which of the four modelled changes exist in it.  A change a release lacks runs as
  its "before" value there; ``--policy`` still overrides any of them for one run.

Every release comes twice: as shipped (``debian-13-arm64``) and with the four changes applied on
top where they apply (``debian-13-arm64+changes``).  "Where they apply" follows each patch's own
context: the MRS rework applies to 6.1 (the 5.10 backport shows it applies to older trees too);
Mark Brown's "arm64/sve: Performance improvements with SVE state saving" patch 1 changes the
FPSIMD-only load that exists since 6.2, patch 2 changes fpsimd_syscall_enter(), which only the
newest release has; Drew Fustini's sysctl and Andy Chiu's "treat VS_INITIAL as discard" apply to
every RISC-V release with vector state discard (6.5 on).

The newest release emukern reads is Linux 7.3-rc1, the base Mark Brown's v11 series names; the
two RISC-V changes are treated as not merged in it (both are mailing-list patches emukern has no
merged tree to check against).  The default, for each architecture, is the newest release with
the four changes applied.  The profile names are those of the real kernels ``emukern linux`` and
``emukern compare`` boot (emukern.oracle.kernels reads its policies from this table).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from emukern.errors import ConfigError

PATCHED_SUFFIX = "+changes"

# a change's "before" (not in the kernel) and "after" value
BEFORE = {"riscv-vstate-sysctl": "absent", "riscv-discard": "eager",
          "arm64-mrs": "hook-list", "arm64-sve": "legacy"}
AFTER = {"riscv-vstate-sysctl": "present", "riscv-discard": "deferred",
         "arm64-mrs": "direct", "arm64-sve": "p1+p2"}
ARCH_OF = {"riscv-vstate-sysctl": "riscv64", "riscv-discard": "riscv64",
           "arm64-mrs": "arm64", "arm64-sve": "arm64"}


@dataclass(frozen=True)
class KernelVersion:
    name: str                       # e.g. debian-12-arm64, linux-7.3-arm64+changes
    arch: str                       # arm64 | riscv64
    linux: str                      # the upstream release line: "6.1", "6.12", "7.3-rc1"
    what: str                       # one line for `emukern info kernels`
    policies: dict[str, str] = field(default_factory=dict)   # the four changes in this kernel
    mrs: str = "direct"             # hook-list | direct (arm64)
    ftr_tables: str = "6.12"        # which arm64_ftr_bits tables (cpufeature.ftr_regs_for)
    fpsimd_syscall: str = "in_syscall"   # sve_user_discard | in_syscall | fpsimd_syscall_enter
    # do_el0_sys(): the sys64_hooks[] entries compared before mrs_handler.  Every modelled
    # release has Marc Zyngier's CNTVCTSS_EL0 handler (5.17) beside v5.10's four.
    sys64_hooks_before_mrs: tuple[str, ...] = ("user_cache_maint_handler", "ctr_read_handler",
                                               "cntvct_read_handler", "cntvctss_read_handler",
                                               "cntfrq_read_handler")
    patched: bool = False           # the four changes applied on top where they apply
    real: str | None = None         # the real kernel profile (emukern linux) it corresponds to

    @property
    def release(self) -> tuple[int, int]:
        """(major, minor) of ``linux`` ("7.3-rc1" -> (7, 3))."""
        major, minor = self.linux.split("-")[0].split(".")[:2]
        return int(major), int(minor)

    @property
    def rseq_auxv(self) -> bool:
        """create_elf_tables gives AT_RSEQ_FEATURE_SIZE / AT_RSEQ_ALIGN (Linux 6.3 on)."""
        return self.release >= (6, 3)

    @property
    def base(self) -> str:
        return self.name.removesuffix(PATCHED_SUFFIX)

    def describe(self) -> str:
        chg = ", ".join(f"{k}={v}" for k, v in self.policies.items())
        return f"Linux {self.linux} ({chg})"


def _pair(name: str, arch: str, linux: str, what: str, shipped: dict[str, str], applies: dict[str, str],
          **paths: str) -> list[KernelVersion]:
    """The release as shipped and with the changes that apply to it on top."""
    patched = {**shipped, **applies}
    real = name if name.startswith("debian-") else None
    return [KernelVersion(name, arch, linux, what, dict(shipped), mrs=shipped.get("arm64-mrs", "direct"),
                          real=real, **paths),
            KernelVersion(name + PATCHED_SUFFIX, arch, linux, what + ", with the four changes where they apply",
                          patched, mrs=patched.get("arm64-mrs", "direct"), patched=True, **paths)]


KERNELS: dict[str, KernelVersion] = {v.name: v for v in [
    # Debian 12 (bookworm): 6.1 -- before the MRS rework and before 8c845e273104
    *_pair("debian-12-arm64", "arm64", "6.1", "Debian 12 (bookworm) Linux 6.1",
           {"arm64-mrs": "hook-list", "arm64-sve": "legacy"},
           {"arm64-mrs": "direct"},           # the SVE series needs the 6.2 fp_type load: n/a
           ftr_tables="6.1", fpsimd_syscall="sve_user_discard"),
    # Debian 13 (trixie): 6.12 -- try_emulate_mrs first; no sve_timeout
    *_pair("debian-13-arm64", "arm64", "6.12", "Debian 13 (trixie) Linux 6.12",
           {"arm64-mrs": "direct", "arm64-sve": "legacy"},
           {"arm64-sve": "p1"},               # patch 2 needs fpsimd_syscall_enter(): not in 6.12
           ftr_tables="6.12", fpsimd_syscall="in_syscall"),
    *_pair("linux-7.3-arm64", "arm64", "7.3-rc1", "upstream Linux 7.3-rc1 (the SVE series' base)",
           {"arm64-mrs": "direct", "arm64-sve": "legacy"},
           {"arm64-sve": "p1+p2"},
           ftr_tables="7.3", fpsimd_syscall="fpsimd_syscall_enter"),
    # RISC-V: Debian 12 has no riscv64 release (and 6.1 has no vector support at all)
    *_pair("debian-13-riscv64", "riscv64", "6.12", "Debian 13 (trixie) Linux 6.12",
           {"riscv-vstate-sysctl": "absent", "riscv-discard": "eager"},
           {"riscv-vstate-sysctl": "present", "riscv-discard": "deferred"}),
    *_pair("linux-7.3-riscv64", "riscv64", "7.3-rc1", "upstream Linux 7.3-rc1",
           {"riscv-vstate-sysctl": "absent", "riscv-discard": "eager"},
           {"riscv-vstate-sysctl": "present", "riscv-discard": "deferred"}),
]}

DEFAULT = {"arm64": "linux-7.3-arm64+changes", "riscv64": "linux-7.3-riscv64+changes"}


def kernel_version(name: str | None, arch: str) -> KernelVersion:
    """The modelled kernel called ``name`` (None: the default for ``arch``), checked against ``arch``."""
    if name is None:
        return KERNELS[DEFAULT[arch]]
    v = KERNELS.get(name)
    if v is None:
        raise ConfigError(f"unknown kernel {name!r}",
                          hint="`emukern info kernels` lists them: " + ", ".join(KERNELS))
    if v.arch != arch:
        raise ConfigError(f"kernel {name} is an {v.arch} kernel but the program is {arch}",
                          hint="pick one of: " + ", ".join(n for n, k in KERNELS.items() if k.arch == arch))
    return v


def effective_policies(v: KernelVersion, requested: dict[str, str]) -> dict[str, str]:
    """The kernel's own values for the four changes, with ``--policy`` overrides on top."""
    return {**v.policies, **requested}


_FP_SYSCALL = {
    "sve_user_discard": "syscall entry clears TIF_SVE (SVE traps again)",
    "in_syscall": "syscall entry flushes; save tests in_syscall()",
    "fpsimd_syscall_enter": "fpsimd_syscall_enter: flush, to_save=FPSIMD",
}


def format_kernels() -> list[str]:
    """`emukern info kernels`: every modelled release and what it selects."""
    out = ["kernels (emukern run --kernel NAME; the default per arch is marked *):"]
    for v in KERNELS.values():
        star = "*" if DEFAULT.get(v.arch) == v.name else " "
        out.append(f" {star}{v.name:26} {v.what}")
        chg = ", ".join(f"{k}={val}" for k, val in v.policies.items())
        out.append(f"   {'':26} changes: {chg}")
        if v.arch == "arm64":
            out.append(f"   {'':26} EL0 MRS: {v.mrs}; ID-register tables: Linux {v.ftr_tables}; "
                       f"FP at syscall: {_FP_SYSCALL[v.fpsimd_syscall]}")
        if v.real:
            out.append(f"   {'':26} real kernel: `emukern linux --kernel {v.real}` boots it")
    out.append("--policy NAME=VALUE overrides one change for a run; a change a kernel lacks runs as its "
               "'before' value there.")
    return out
