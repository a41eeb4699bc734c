"""Machine options: one dataclass shared by the CLI, the API, the pytest plugin and benchmarks.

Plain data: nothing here imports the kernel model (its checks are :mod:`emukern.kernel.boot_checks`)."""
from __future__ import annotations

from dataclasses import dataclass, field

from emukern.errors import ConfigError

ARCHES = ("riscv64", "arm64")
# The realtime clock's reading at boot when --realtime is not given: a fixed instant, so that every
# run of the same inputs reads the same wall-clock time whatever the host's clock or root says
# (a root's own file times stay the host's: give --realtime a later date if a guest, make or tar,
# must not see files "from the future").
DEFAULT_REALTIME = "2026-01-01T00:00:00Z"
_DEFAULT_REALTIME_NS = 1_767_225_600 * 10**9     # DEFAULT_REALTIME (tests/perf checks the two agree)


def parse_realtime(when: object) -> int:
    """``--realtime WHEN`` -> nanoseconds since 1970-01-01T00:00:00Z.

    WHEN is ISO 8601 (``2026-01-01T00:00:00Z``, ``2026-01-01T12:30:00.5+02:00``, ``2026-01-01``;
    without an offset it is UTC, never the host's zone) or ``@SECONDS`` as date(1) takes it
    (``@0``, ``@1767225600.25``); the API also takes a number of seconds.  Negative times (before
    1970) are refused: Linux's do_settimeofday64 refuses them too."""
    if when == DEFAULT_REALTIME:      # every run that names no time: skip datetime and decimal
        return _DEFAULT_REALTIME_NS
    import datetime
    import re
    from decimal import Decimal, InvalidOperation
    hint = "e.g. --realtime 2026-01-01T00:00:00Z or --realtime @1767225600"
    if isinstance(when, bool) or not isinstance(when, (str, int, float)):
        raise ConfigError(f"realtime must be a string or a number of seconds, got {when!r}", hint=hint)
    if isinstance(when, (int, float)) or when.startswith("@"):
        text = str(when)[1:] if isinstance(when, str) else repr(when)
        try:
            ns = int(Decimal(text.strip()) * 10**9)
        except InvalidOperation:
            raise ConfigError(f"--realtime {when!r}: @SECONDS expects a number", hint=hint) from None
    else:
        text = when.strip()
        if re.search(r"[+-]\d\d$", text):
            text += ":00"                   # +02 -> +02:00 (fromisoformat of older Pythons)
        try:
            t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ConfigError(f"--realtime {when!r} is not an ISO 8601 time", hint=hint) from None
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.timezone.utc)
        d = t - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        ns = (d.days * 86400 + d.seconds) * 10**9 + d.microseconds * 1000
    if ns < 0:
        raise ConfigError(f"--realtime {when!r} is before 1970", hint=hint)
    return ns
RVV_VLENS = (64, 128, 256, 512, 1024, 2048, 4096)


def sve_vl_valid_bits(vl: int) -> bool:
    """An SVE vector length the architecture allows: a multiple of 128 bits from 128 to 2048."""
    return vl % 128 == 0 and 128 <= vl <= 2048


SCHED_POLICIES = ("fair", "rr")
VDSO_MODES = ("auto", "on", "off")


@dataclass
class MachineConfig:
    """Every option of a machine; ``Machine(**options)`` and the fixtures take these names.

    General: ``arch`` ("riscv64" | "arm64"), ``cpus`` (1..64), ``freq_hz`` (cycles -> time),
    ``hz`` (CONFIG_HZ), ``max_insns`` (user-instruction budget; None = none), ``quantum``
    (SMP lock-step, cycles), ``sched`` ("fair": Linux's EEVDF fair class; "rr": round-robin),
    ``vdso`` (map Linux's vDSO at exec: "auto", "on", "off"), ``stdin`` (bytes the guest reads).
    RISC-V: ``vlen``, ``dlen`` (vector datapath width for the cost model), ``has_v``,
    ``vstate_discard_default`` (CONFIG_RISCV_ISA_V_VSTATE_DISCARD), ``riscv_v_default_allow``.
    arm64: ``sve_vl`` (default vector length, bits), ``sve_vls`` (supported lengths), ``has_sve``, ``has_pac``,
    ``idst`` (FEAT_IDST), ``cpu_id_overrides`` ({cpu: {"REG[.FIELD]": value}}).
    Kernel: ``kernel`` (the Linux release modelled, ``emukern info kernels``; None = the newest with
    the four changes), ``sysctls`` ({"abi.riscv_v_vstate_discard": 1}: ints, bools or strings),
    ``policies`` ({"riscv-discard": "eager"}: see ``emukern info policies``), ``costs``
    ({"schedule": 500, "rvv.load.beat": 2}: see ``emukern info costs``), ``cost_file``.
    :meth:`validate` checks the plain data (a :class:`~emukern.errors.ConfigError` names the bad
    one); what needs the kernel model's knowledge (the preemption model, the ``kernel`` name, the
    ``rlimits``) is :func:`emukern.kernel.boot_checks.validate_for_kernel`'s, run at the machine's boot.
    """

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
    riscv_v_ucopy_threshold: int = 768        # CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD (0: no vector usercopy)
    # CONFIG_RISCV_ISA_V_PREEMPTIVE (kernel/preempt.py); None = its Kconfig default: y when the
    # kernel is preemptible (PREEMPT=full), and the option does not exist otherwise
    riscv_v_preemptive: bool | None = None
    # arm64
    # default vector length of new tasks (bits); None = Linux's boot choice (sve_setup): the
    # largest supported VL up to 64 bytes (512 bits), /proc/sys/abi/sve_default_vector_length
    sve_vl: int | None = None
    sve_vls: tuple[int, ...] = (128, 256, 512)  # vector lengths the machine supports
    has_sve: bool = True
    # pointer authentication (FEAT_PAuth); False is Linux's arm64.nopauth: the ID registers and
    # HWCAPs say no PAC and the PAC instructions stay NOPs (faster: see kernel/arch/arm64/pointer_auth.py)
    has_pac: bool = True
    idst: bool = False                        # FEAT_IDST: ID-register reads trap as EC 0x18
    cpu_id_overrides: dict[int, dict[str, int]] = field(default_factory=dict)  # per-CPU ID reg values
    arm64_cpu_model: str = "qemu-max"          # ID registers of QEMU 7.2's max | unicorn-max (machine/arm64_idregs.py)
    # kernel
    kernel: str | None = None                # --kernel NAME (kernel/versions.py); None: newest+changes
    # the preemption model (kernel/preempt.py): CONFIG_PREEMPT_NONE / _VOLUNTARY / PREEMPT;
    # voluntary is what Debian 12's and 13's arm64 and riscv64 kernels are built with
    preempt: str = "voluntary"
    sysctls: dict[str, str] = field(default_factory=dict)
    # the first process's resource limits ({"STACK": "unlimited"}: a shell's ulimit before it
    # starts; kernel/resource.py), on top of Linux's INIT_RLIMITS
    rlimits: dict[str, str] = field(default_factory=dict)
    policies: dict[str, str] = field(default_factory=dict)
    plugins: list[str] = field(default_factory=list)   # --plugin FILE.py|MODULE (kernel/plugins.py)
    costs: dict[str, int] = field(default_factory=dict)
    cost_file: str | None = None
    max_insns: int | None = None              # stop a runaway guest after this many user insns
    max_cycles: int | None = None             # ... after this much simulated time, kernel work included
    timeout: float | None = None              # ... after this many simulated seconds (kernel work included)
    host_timeout: float | None = None         # ... after this many host (wall-clock) seconds
    mem_limit: int | None = None              # guest memory machine-wide, bytes (None: a share of host RAM; 0: none)
    max_tasks: int = 1024                     # live tasks machine-wide (threads-max; RLIMIT_NPROC)
    quantum: int = 2000                       # SMP lockstep: max cycles a CPU runs ahead of others
    timeslice_ticks: int = 1                  # round-robin's slice, in ticks, before tick preemption
    # the run-queue policy (kernel/sched.py): "fair" is Linux's EEVDF fair class
    # (kernel/sched_fair.py); "rr" the plain round-robin queue emukern used before it
    sched: str = "fair"
    # the vDSO at exec (kernel/vdso: [vvar], [vdso], AT_SYSINFO_EHDR): "on" for every program, as
    # Linux does; "off" keeps the one-page sigreturn trampoline and an auxv without
    # AT_SYSINFO_EHDR; "auto" is "on" for programs a C toolchain linked (a PT_INTERP or a
    # PT_NOTE: glibc, nolibc, Debian's programs) and "off" for hand-written assembly guests
    # (emukern's ld.lld links leave neither), whose stack addresses and records then stay as
    # they were before the vDSO (its auxv entry moves the initial stack down 16 bytes)
    vdso: str = "auto"
    stdin: bytes = b""
    trace_traps: bool = False
    # the guest file system (kernel/fs): a host directory the guest sees as "/", read-only unless
    # root_rw; None = an empty root with only the synthetic /proc and /dev (hermetic)
    root: str | None = None
    root_rw: bool = False
    # CLOCK_REALTIME at boot (--realtime): ISO 8601 UTC ("2026-01-01T00:00:00Z") or "@SECONDS";
    # a fixed default, never the host's clock, so two runs (and two roots) read the same times
    realtime: str = DEFAULT_REALTIME

    def validate(self) -> None:
        """Raise :class:`~emukern.errors.ConfigError` for an invalid option; normalise ``sysctls``.

        The plain-data checks only: :func:`emukern.kernel.boot_checks.validate_for_kernel` adds those
        that need the kernel model."""
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
            ok = [v for v in self.sve_vls if sve_vl_valid_bits(v)]
            fit = [v for v in ok if v <= 512]
            self.sve_vl = max(fit) if fit else (min(ok) if ok else 128)
        for vl in (self.sve_vl, *self.sve_vls):
            if not sve_vl_valid_bits(vl):
                raise ConfigError(f"SVE vector length {vl} is invalid",
                                  hint="use a multiple of 128 between 128 and 2048")
        if self.sve_vl not in self.sve_vls:
            raise ConfigError(f"--sve-vl {self.sve_vl} is not among the machine's vector lengths "
                              f"{list(self.sve_vls)}", hint="add it with --sve-vls")
        if self.freq_hz <= 0 or self.hz <= 0 or self.hz > self.freq_hz:
            raise ConfigError("--freq and --hz must be positive and HZ below the CPU frequency")
        if self.max_insns is not None and self.max_insns <= 0:
            raise ConfigError("--max-insns must be positive")
        if self.riscv_v_ucopy_threshold < 0:
            raise ConfigError("RISCV_ISA_V_UCOPY_THRESHOLD must be >= 0 (0 turns vectorised user copies off)")
        for name in ("max_cycles", "timeout", "host_timeout"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ConfigError(f"--{name.replace('_', '-')} must be positive, got {v}")
        if self.mem_limit is not None and self.mem_limit < 0:
            raise ConfigError(f"--mem-limit must be a size in bytes (0 = no limit), got {self.mem_limit}")
        if not 1 <= self.max_tasks <= MAX_TASKS_LIMIT:
            raise ConfigError(f"--max-tasks must be between 1 and {MAX_TASKS_LIMIT}, got {self.max_tasks}")
        if self.quantum <= 0:
            raise ConfigError("--quantum must be positive")
        if self.vdso not in VDSO_MODES:
            raise ConfigError(f"unknown --vdso {self.vdso!r}", hint="use --vdso auto, on or off")
        if self.sched not in SCHED_POLICIES:
            raise ConfigError(f"unknown --sched {self.sched!r}", hint="use --sched fair or --sched rr")
        self.sysctls = normalize_sysctls(self.sysctls)
        parse_realtime(self.realtime)
        if not isinstance(self.rlimits, dict):
            raise ConfigError("rlimits must be a dict of name -> value", hint='e.g. rlimits={"STACK": "unlimited"}')

    def realtime_ns(self) -> int:
        """CLOCK_REALTIME at boot, in nanoseconds since the Unix epoch (what ``realtime`` names)."""
        return parse_realtime(self.realtime)

    def resolved_mem_limit(self) -> int | None:
        """The machine-wide guest memory limit in bytes (None = unlimited)."""
        if self.mem_limit is None:
            return default_mem_limit()
        return self.mem_limit or None

    def summary(self) -> dict[str, object]:
        d: dict[str, object] = {"arch": self.arch, "cpus": self.cpus, "freq_hz": self.freq_hz, "hz": self.hz,
                                "preempt": self.preempt}
        if self.arch == "riscv64":
            d.update(vlen=self.vlen, dlen=self.dlen or self.vlen, has_v=self.has_v)
        else:
            d.update(sve_vl=self.sve_vl, sve_vls=list(self.sve_vls), idst=self.idst)
            if self.arm64_cpu_model != "qemu-max":
                d.update(cpu_model=self.arm64_cpu_model)
            if not self.has_pac:
                d.update(pac=False)             # (the default, PAC on, leaves the summary as it was)
        if self.root:
            d.update(root=self.root, root_rw=self.root_rw)
        if self.realtime != DEFAULT_REALTIME:
            d.update(realtime=self.realtime)
        return d


def normalize_sysctls(sysctls: object) -> dict[str, str]:
    """Sysctl values as the text a write to /proc/sys would carry.

    The CLI passes strings (``--sysctl KEY=VALUE``); the Python API also takes ints and bools
    (``sysctls={"abi.riscv_v_vstate_discard": 1}`` or ``True``).  Anything else is a ConfigError
    naming the sysctl, rather than an error deep inside the kernel's sysctl table."""
    if not isinstance(sysctls, dict):
        raise ConfigError(f"sysctls must be a dict of name -> value, got {type(sysctls).__name__}",
                          hint='e.g. sysctls={"abi.riscv_v_vstate_discard": 1}')
    out: dict[str, str] = {}
    for key, value in sysctls.items():
        if not isinstance(key, str):
            raise ConfigError(f"sysctl name {key!r} must be a string", hint='e.g. "abi.riscv_v_vstate_discard"')
        if isinstance(value, bool):
            out[key] = "1" if value else "0"
        elif isinstance(value, int):
            out[key] = str(value)
        elif isinstance(value, str):
            out[key] = value
        else:
            raise ConfigError(f"sysctl {key}: value {value!r} ({type(value).__name__}) is not an int, bool or string",
                              hint=f'e.g. sysctls={{"{key}": 1}}')
    return out
# --max-tasks' ceiling: arm64 keeps one SVE save slot per possible task in a fixed kernel area
MAX_TASKS_LIMIT = 4096
MEM_LIMIT_FRACTION = 0.5     # default --mem-limit: half of the host's RAM ...
MEM_LIMIT_CAP = 4 << 30      # ... and never more than 4 GiB


def default_mem_limit() -> int | None:
    """The smaller of half the host's physical memory and 4 GiB, for all guest processes together.

    Half the RAM alone let three children of 2.5 GiB each hold 7.5 GiB of a 16 GiB host; the
    cap makes the default the same on every host with 8 GiB or more, and it is still one whole
    address space's worth (emukern's 4 GiB per process), far above what the real programs the
    tests run (python3, sqlite3) map.  Pass --mem-limit for more, or 0 for none."""
    import os
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return min(int(total * MEM_LIMIT_FRACTION), MEM_LIMIT_CAP) & ~0xFFF if total > 0 else None


def parse_size(text: str) -> int:
    """'512M', '4G', '1.5GiB', '0' or a plain byte count -> bytes (ConfigError when malformed)."""
    import re
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text)
    if m is None:
        raise ConfigError(f"expected a size such as 512M or 4G, got {text!r}")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale) if "." in m.group(1) else int(m.group(1)) * scale
