"""Machine options: one dataclass shared by the CLI, the API, the pytest plugin and benchmarks."""
from __future__ import annotations

from dataclasses import dataclass, field

from emukern.errors import ConfigError

ARCHES = ("riscv64", "arm64")
RVV_VLENS = (64, 128, 256, 512, 1024, 2048, 4096)


@dataclass
class MachineConfig:
    arch: str = "riscv64"
    cpus: int = 1
    freq_hz: int = 1_000_000_000
    hz: int = 250
    timer_freq: int = 100_000_000
    # RISC-V
    vlen: int = 256
    dlen: int | None = None
    has_v: bool = True
    vstate_discard_default: bool = False      # CONFIG_RISCV_ISA_V_VSTATE_DISCARD
    riscv_v_default_allow: bool = True        # CONFIG_RISCV_ISA_V_DEFAULT_ENABLE
    # arm64
    # default vector length of new tasks (bits); None = Linux's boot choice (sve_setup): the
    # largest supported VL up to 64 bytes (512 bits), /proc/sys/abi/sve_default_vector_length
    sve_vl: int | None = None
    sve_vls: tuple[int, ...] = (128, 256, 512)  # vector lengths the machine supports
    has_sve: bool = True
    idst: bool = False                        # FEAT_IDST: ID-register reads trap as EC 0x18
    cpu_id_overrides: dict[int, dict[str, int]] = field(default_factory=dict)  # per-CPU ID reg values
    # kernel
    sysctls: dict[str, str] = field(default_factory=dict)
    policies: dict[str, str] = field(default_factory=dict)
    costs: dict[str, int] = field(default_factory=dict)
    cost_file: str | None = None
    max_insns: int | None = None              # stop a runaway guest after this many user insns
    max_tasks: int = 1024
    quantum: int = 2000                       # SMP lockstep: max cycles a CPU runs ahead of others
    timeslice_ticks: int = 1                  # CFS-like slice, in ticks, before tick preemption
    stdin: bytes = b""
    trace_traps: bool = False
    # the guest file system (kernel/fs): a host directory the guest sees as "/", read-only unless
    # root_rw; None = an empty root with only the synthetic /proc and /dev (hermetic)
    root: str | None = None
    root_rw: bool = False

    def validate(self) -> None:
        if self.arch not in ARCHES:
            raise ConfigError(f"unknown architecture {self.arch!r}", hint="use --arch riscv64 or --arch arm64")
        if not 1 <= self.cpus <= 64:
            raise ConfigError(f"--cpus must be between 1 and 64, got {self.cpus}")
        if self.vlen not in RVV_VLENS:
            raise ConfigError(f"--vlen {self.vlen} is not supported",
                              hint="VLEN must be a power of two: " + ", ".join(map(str, RVV_VLENS)))
        if self.dlen is not None and (self.dlen <= 0 or self.dlen & (self.dlen - 1) or self.dlen > self.vlen):
            raise ConfigError(f"--dlen {self.dlen} must be a power of two no larger than VLEN")
        if not self.sve_vls:
            raise ConfigError("--sve-vls is empty", hint="list at least one vector length, e.g. --sve-vls 128,256")
        if self.sve_vl is None:
            ok = [v for v in self.sve_vls if v % 128 == 0 and 128 <= v <= 2048]
            fit = [v for v in ok if v <= 512]
            self.sve_vl = max(fit) if fit else (min(ok) if ok else 128)
        for vl in (self.sve_vl, *self.sve_vls):
            if vl % 128 or not 128 <= vl <= 2048:
                raise ConfigError(f"SVE vector length {vl} is invalid",
                                  hint="use a multiple of 128 between 128 and 2048")
        if self.sve_vl not in self.sve_vls:
            raise ConfigError(f"--sve-vl {self.sve_vl} is not among the machine's vector lengths "
                              f"{list(self.sve_vls)}", hint="add it with --sve-vls")
        if self.freq_hz <= 0 or self.hz <= 0 or self.hz > self.freq_hz:
            raise ConfigError("--freq and --hz must be positive and HZ below the CPU frequency")
        if self.max_insns is not None and self.max_insns <= 0:
            raise ConfigError("--max-insns must be positive")
        if self.quantum <= 0:
            raise ConfigError("--quantum must be positive")

    def summary(self) -> dict[str, object]:
        d: dict[str, object] = {"arch": self.arch, "cpus": self.cpus, "freq_hz": self.freq_hz, "hz": self.hz}
        if self.arch == "riscv64":
            d.update(vlen=self.vlen, dlen=self.dlen or self.vlen, has_v=self.has_v)
        else:
            d.update(sve_vl=self.sve_vl, sve_vls=list(self.sve_vls), idst=self.idst)
        if self.root:
            d.update(root=self.root, root_rw=self.root_rw)
        return d
