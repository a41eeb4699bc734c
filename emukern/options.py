"""The one place a machine configuration is built from a command line.

Every command that runs a guest (``emukern run``, ``debug``, ``gdbserver``, ``selftests``, the
points of ``sweep``) takes the same machine options (:func:`machine_options`) and turns them into a
:class:`~emukern.config.MachineConfig` with :func:`config_from_args`; ``emukern run``'s own
arguments are :func:`add_run_arguments` (and :func:`run_parser`, a parser of them alone, is what a
sweep point's options mean).  This module sits below the command lines (:mod:`emukern.cli`) and
imports nothing from them."""
from __future__ import annotations

import argparse
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from emukern.errors import ConfigError

RUN_EPILOG = """\
which architecture a .S is assembled for, first match wins:
  1. --arch riscv64|arm64
  2. a '# arch: riscv64' or '// arch: arm64' line at the top of the source
  3. a folder named arm64/aarch64 or riscv/riscv64/rv64 in its path (guest_asm/arm64/hello.S)
  4. otherwise riscv64 -- an arm64 source elsewhere needs 1 or 2
ELF files carry their architecture in their header.

guest arguments: everything after the program goes to the guest, but words that look like
emukern options are still taken by emukern; put `--` before them to pass them through:
  emukern run prog.elf --cpus 2 -- --verbose -n 3      # the guest sees argv[1:] = --verbose -n 3

example guests: `emukern info examples`; a guest_asm/... path that does not exist where you
are is looked up among the examples shipped with emukern, so `emukern run guest_asm/riscv/hello.S`
works from any directory.
"""



def parse_int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


# --kconfig NAME=VALUE: the kernel build options the model reads -> MachineConfig field
KCONFIG = {"RISCV_ISA_V_UCOPY_THRESHOLD": "riscv_v_ucopy_threshold",
           "RISCV_ISA_V_VSTATE_DISCARD": "vstate_discard_default",
           "RISCV_ISA_V_DEFAULT_ENABLE": "riscv_v_default_allow",
           "HZ": "hz", "PREEMPT": "preempt", "RISCV_ISA_V_PREEMPTIVE": "riscv_v_preemptive"}


def apply_kconfig(cfg: Any, items: list[str]) -> None:
    from emukern.kernel.policies import parse_assignments
    for name, value in parse_assignments(items, "kconfig").items():
        key = name.removeprefix("CONFIG_")
        field = KCONFIG.get(key)
        if field is None:
            raise ConfigError(f"--kconfig {name}: not a build option emukern models",
                              hint="known: " + ", ".join(KCONFIG))
        if field == "preempt":              # the preemption model: a choice, not a number
            cfg.preempt = value.lower()     # (validated with the rest: kernel/preempt.py)
            continue
        v = {"y": 1, "n": 0}.get(value.lower(), None)
        try:
            v = int(value, 0) if v is None else v
        except ValueError:
            raise ConfigError(f"--kconfig {name} expects an integer or y/n, got {value!r}") from None
        cur = getattr(cfg, field)
        setattr(cfg, field, bool(v) if isinstance(cur, bool) or field == "riscv_v_preemptive" else v)


DEFAULT_MAX_INSNS = 20_000_000_000
# `emukern run`'s wall-clock backstop.  --max-insns counts user instructions only, so a guest
# that spends its time in the kernel (a fork bomb retrying a refused fork, a syscall loop) could
# hold the host for hours inside it; no deterministic count bounds every kind of kernel work in
# host time, so the last bound is the host's clock.  A run that ends before it is unchanged.
DEFAULT_HOST_TIMEOUT = 600.0


def _max_insns(a: argparse.Namespace) -> int | None:
    """--max-insns: as given (0: none), else the default budget unless another bound was given."""
    if a.max_insns is not None:
        return a.max_insns or None
    if any(getattr(a, name, None) for name in ("timeout", "max_cycles", "host_timeout")):
        return None
    return DEFAULT_MAX_INSNS


def _host_timeout(a: argparse.Namespace) -> float | None:
    """--host-timeout: as given (0: none), else the command's default (`emukern run`'s
    backstop; none for the commands that wait on a person, such as the debugger)."""
    given = getattr(a, "host_timeout", None)
    if given is not None:
        return given or None
    return getattr(a, "default_host_timeout", None)


def machine_options(p: argparse.ArgumentParser, *, guest_stdin: bool = True) -> None:
    """The machine options every command that runs a guest shares; ``guest_stdin=False`` leaves
    out --stdin for a command whose guests never read the user's input (selftests)."""
    g = p.add_argument_group("machine options (the same on every command that runs a guest)")
    g.add_argument("--arch", choices=["riscv64", "arm64"], help="guest architecture (default: from the program)")
    g.add_argument("--cpus", type=parse_int, default=1, metavar="N", help="simulated CPUs, 1..64 (default 1)")
    g.add_argument("--freq", type=parse_int, default=1_000_000_000, metavar="HZ",
                   help="CPU frequency in Hz: converts cycles to time (default 1e9)")
    g.add_argument("--hz", type=parse_int, default=250, metavar="N", help="timer ticks per second, CONFIG_HZ (default 250)")
    g.add_argument("--vlen", type=parse_int, default=256, metavar="BITS", help="RISC-V VLEN (default 256)")
    g.add_argument("--dlen", type=parse_int, default=None, metavar="BITS",
                   help="RISC-V vector datapath width for the cost model (default VLEN)")
    g.add_argument("--no-v", action="store_true", help="RISC-V without the V extension")
    g.add_argument("--sve-vl", type=parse_int, default=None, metavar="BITS",
                   help="arm64 default SVE vector length (default: as Linux boots, the largest of --sve-vls "
                        "up to 512; /proc/sys/abi/sve_default_vector_length)")
    g.add_argument("--sve-vls", default="128,256,512", metavar="LIST",
                   help="SVE vector lengths the machine supports, the set a guest enumerates with "
                        "PR_SVE_SET_VL (default 128,256,512)")
    g.add_argument("--no-pac", action="store_true",
                   help="arm64 without pointer authentication (Linux's arm64.nopauth): no PACA/PACG "
                        "hwcaps, ID registers without PAuth, paciasp/autiasp run as NOPs (faster)")
    g.add_argument("--idst", action="store_true",
                   help="arm64 FEAT_IDST: EL0 ID-register reads trap as EC 0x18 (do_el0_sys)")
    g.add_argument("--cpu-model", choices=["qemu-max", "unicorn-max"], default="qemu-max",
                   help="arm64 ID registers: qemu-max (default) are QEMU 7.2's max CPU, byte for byte what "
                        "Debian's kernels report under qemu-system, but they advertise SVE2, which "
                        "Unicorn 2.1.4 cannot execute (SIGILL); unicorn-max advertises only what this "
                        "CPU executes (Linux's abi/hwcap selftest then passes)")
    g.add_argument("--cpu-id", action="append", default=[], metavar="CPU:REG[.FIELD]=VALUE",
                   help="arm64: give one CPU another ID-register value or field, e.g. "
                        "1:ID_AA64ISAR0_EL1.AES=0 or 2:MIDR_EL1=0x410fd0c0 (repeatable; heterogeneous machine)")
    g.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                   help="set a sysctl at boot, e.g. abi.riscv_v_vstate_discard=1 (repeatable)")
    g.add_argument("--rlimit", action="append", default=[], metavar="NAME=VALUE",
                   help="the first process's resource limit, like the shell's ulimit before it runs: "
                        "e.g. STACK=unlimited (legacy bottom-up mmap layout), NOFILE=256, STACK=SOFT:HARD "
                        "(bytes; repeatable)")
    g.add_argument("--policy", action="append", default=[], metavar="NAME=VALUE",
                   help="pick the before/after value of a modelled Linux change, e.g. riscv-discard=eager "
                        "(repeatable; `emukern info policies`)")
    g.add_argument("--plugin", action="append", default=[], metavar="FILE.py|MODULE",
                   help="load a policy plug-in: your own switch values or kernel-function overrides "
                        "(repeatable; see emukern/kernel/plugins.py)")
    g.add_argument("--cost", action="append", default=[], metavar="KEY=CYCLES",
                   help="override a cost-model constant (repeatable; `emukern info costs`)")
    g.add_argument("--cost-file", metavar="FILE", help="cost overrides, one 'key = cycles' per line")
    g.add_argument("--kconfig", action="append", default=[], metavar="NAME=VALUE",
                   help="a kernel build option: " + ", ".join(KCONFIG) + " (repeatable)")
    g.add_argument("--vstate-discard-default", action="store_true",
                   help="model CONFIG_RISCV_ISA_V_VSTATE_DISCARD=y (sysctl boots at 1)")
    g.add_argument("--max-insns", type=parse_int, default=None, metavar="N",
                   help="stop a runaway guest after N user instructions (0 = no limit; default 2e10 — "
                        "about a minute of host time, far above what a real program such as xz -6 on a "
                        "few MB needs — or no limit when --timeout, --max-cycles or --host-timeout "
                        "bounds the run instead)")
    g.add_argument("--max-cycles", type=parse_int, default=None, metavar="N",
                   help="stop after N cycles of simulated time, kernel work included (default: no limit)")
    g.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop after this much simulated time, kernel work included (default: no limit)")
    g.add_argument("--host-timeout", type=float, default=None, metavar="SECONDS",
                   help="stop after this many host (wall-clock) seconds; where it stops depends on the host "
                        f"(default under `emukern run`: {DEFAULT_HOST_TIMEOUT:g}, whatever --max-insns "
                        "says, since kernel work is not instructions; 0 = no limit)")
    g.add_argument("--mem-limit", default=None, metavar="SIZE",
                   help="guest memory for the whole machine, every process's mappings counted, e.g. 2G "
                        "(past it: ENOMEM to the guest; default the smaller of half the host's RAM and "
                        "4 GiB; 0 = no limit)")
    g.add_argument("--max-tasks", type=parse_int, default=None, metavar="N",
                   help="live tasks (processes and threads) the machine holds, Linux's threads-max; "
                        "also the first process's RLIMIT_NPROC and RLIMIT_SIGPENDING (default 1024: "
                        "fork and clone give EAGAIN past it)")
    g.add_argument("--sched", choices=("fair", "rr"), default="fair",
                   help="the run-queue policy: fair (Linux's EEVDF fair class: vruntime, nice weights, "
                        "virtual deadlines; the default) or rr (the plain round-robin queue, a whole tick "
                        "each, that emukern used before)")
    g.add_argument("--vdso", choices=("auto", "on", "off"), default="auto",
                   help="map the vDSO at exec ([vvar], [vdso], AT_SYSINFO_EHDR) as Linux does: glibc then "
                        "calls its clock_gettime & co. (which make the syscall). auto (the default): for "
                        "programs a C toolchain linked (an interpreter or ELF notes), not for hand-written "
                        "assembly guests, whose stack addresses stay as before; on: every program; off: none "
                        "(only the sigreturn trampoline page)")
    g.add_argument("--quantum", type=parse_int, default=2000, metavar="CYCLES",
                   help="SMP lock-step: how far one CPU may run ahead of the others (default 2000)")
    if guest_stdin:
        g.add_argument("--stdin", metavar="FILE|-|none",
                       help="the guest's standard input: FILE, '-' (the host's own, even a terminal) or "
                            "'none' (/dev/null). Default under `emukern run`: the host's input when it is a "
                            "pipe or a file (`echo 1 2 | emukern run prog`, `< in.txt`), /dev/null when it "
                            "is a terminal, so a script never hangs on a guest waiting for a tty")
    g.add_argument("--root", metavar="DIR",
                   help="the guest's root directory (like qemu-user -L): paths, execve and dynamic "
                        "programs' interpreter and libraries resolve inside it, e.g. --root /usr/aarch64-linux-gnu "
                        "(default: an empty root with only /proc and /dev)")
    g.add_argument("--root-rw", action="store_true",
                   help="let the guest write to --root (default read-only: EROFS)")
    g.add_argument("--realtime", metavar="WHEN", default=None,
                   help="CLOCK_REALTIME at boot: ISO 8601 (2026-01-01T00:00:00Z; UTC unless an offset "
                        "is given) or @SECONDS since 1970 (default 2026-01-01T00:00:00Z, a fixed "
                        "instant: never the host's clock, so runs repeat; CLOCK_MONOTONIC starts at 0)")


def config_from_args(a: argparse.Namespace) -> Any:
    from emukern.config import MachineConfig
    from emukern.kernel.policies import parse_assignments
    try:
        vls = tuple(int(x) for x in a.sve_vls.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--sve-vls expects a comma-separated list of bits, got {a.sve_vls!r}") from None
    cfg = MachineConfig(
        arch=a.arch or "riscv64", cpus=a.cpus, freq_hz=a.freq, hz=a.hz, vlen=a.vlen, dlen=a.dlen,
        has_v=not a.no_v, sve_vl=a.sve_vl, sve_vls=vls, idst=a.idst, has_pac=not a.no_pac,
        arm64_cpu_model=getattr(a, "cpu_model", "qemu-max"),
        sysctls=parse_assignments(a.sysctl, "sysctl"), policies=parse_assignments(a.policy, "policy"),
        rlimits=parse_assignments(getattr(a, "rlimit", []), "rlimit"),
        costs={}, cost_file=a.cost_file, vstate_discard_default=a.vstate_discard_default,
        max_insns=_max_insns(a), quantum=a.quantum, sched=getattr(a, "sched", "fair"), vdso=getattr(a, "vdso", "auto"), kernel=getattr(a, "kernel_version", None),
        root=getattr(a, "root", None), root_rw=getattr(a, "root_rw", False),
        max_cycles=getattr(a, "max_cycles", None), timeout=getattr(a, "timeout", None),
        host_timeout=_host_timeout(a),
    )
    if getattr(a, "max_tasks", None) is not None:
        cfg.max_tasks = a.max_tasks
    if getattr(a, "realtime", None) is not None:
        cfg.realtime = a.realtime
    if getattr(a, "mem_limit", None) is not None:
        from emukern.config import parse_size
        cfg.mem_limit = parse_size(a.mem_limit)
    for k, v in parse_assignments(a.cost, "cost").items():
        try:
            cfg.costs[k] = int(v, 0)
        except ValueError:
            raise ConfigError(f"--cost {k} must be an integer number of cycles, got {v!r}") from None
    apply_kconfig(cfg, getattr(a, "kconfig", []))
    for item in getattr(a, "cpu_id", []):
        from emukern.kernel.arch.arm64.cpufeature import parse_cpu_id_override
        try:
            cpu_i, key, value = parse_cpu_id_override(item)
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"--cpu-id: {exc.args[0] if exc.args else exc}",
                              hint="e.g. --cpu-id 1:ID_AA64ISAR0_EL1.AES=0") from None
        cfg.cpu_id_overrides.setdefault(cpu_i, {})[key] = value
    stdin = getattr(a, "stdin", None)
    if stdin and stdin not in ("-", "none"):      # (the host's own input: emukern run attaches it)
        try:
            cfg.stdin = Path(stdin).read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read --stdin file {stdin}: {exc.strerror}") from None
    cfg.plugins = list(getattr(a, "plugin", []))
    from emukern.kernel.plugins import load_plugin
    for spec in cfg.plugins:
        load_plugin(spec)       # before validating --policy: a plug-in may add the value it names
    from emukern.kernel.policies import Policies
    Policies(cfg.policies)      # validate names/values before anything runs
    from emukern.kernel.cost import CostTable
    ct = CostTable()
    for k, v in cfg.costs.items():
        ct.override(k, v)
    from emukern.kernel.boot_checks import validate_for_kernel
    validate_for_kernel(cfg)    # --kernel, --kconfig PREEMPT, --rlimit: refused before anything runs
    return cfg


# options that only mean something on one architecture: (dest, flag, the arch they belong to)
ARCH_ONLY_OPTIONS = [
    ("vlen", "--vlen", "riscv64"), ("dlen", "--dlen", "riscv64"), ("no_v", "--no-v", "riscv64"),
    ("vstate_discard_default", "--vstate-discard-default", "riscv64"),
    ("sve_vl", "--sve-vl", "arm64"), ("sve_vls", "--sve-vls", "arm64"), ("idst", "--idst", "arm64"),
    ("no_pac", "--no-pac", "arm64"),
    ("cpu_id", "--cpu-id", "arm64"), ("cpu_model", "--cpu-model", "arm64"),
]


def warn_other_arch_options(a: argparse.Namespace, arch: str) -> list[str]:
    """Warn (on stderr) about options given for the other architecture, e.g. --sve-vl on a riscv64
    guest: they are accepted (the same command line can serve both) but change nothing."""
    defaults = vars(machine_option_defaults())
    wasted = [flag for dest, flag, only in ARCH_ONLY_OPTIONS
              if only != arch and getattr(a, dest, defaults.get(dest)) != defaults.get(dest)]
    wasted += [f"--policy {item}" for item in _other_arch_policies(getattr(a, "policy", []) or [], arch)]
    if wasted:
        print(f"emukern: warning: {', '.join(wasted)} {'is' if len(wasted) == 1 else 'are'} "
              f"for {'arm64' if arch == 'riscv64' else 'riscv64'} guests and ignored on this {arch} guest",
              file=sys.stderr)
    return wasted


def _other_arch_policies(items: list[str], arch: str) -> list[str]:
    """The --policy NAME=VALUE items whose switch belongs to the other architecture."""
    from emukern.kernel.policies import SWITCHES
    out = []
    for item in items:
        name = item.split("=", 1)[0].strip()
        sw = SWITCHES.get(name)
        if sw is not None and sw.arch not in (None, arch):
            out.append(item)
    return out


def machine_option_defaults() -> argparse.Namespace:
    """The machine options' defaults, as a namespace."""
    p = argparse.ArgumentParser(add_help=False)
    machine_options(p)
    return p.parse_args([])


RUN_DESCRIPTION = ("Run a guest program and print its output, its exit status and a "
                   "summary (instructions, kernel cost, cycles, simulated time, traps by kind) on stderr. "
                   "The exit status is the guest's (128+N when killed by signal N).")


def add_run_arguments(r: argparse.ArgumentParser) -> None:
    """`emukern run`'s arguments: the program, its arguments, the machine options and run's own."""
    r.add_argument("program", help="a .S file (assembled with LLVM, cached), or a static or dynamic riscv64/aarch64 ELF (a dynamic one loads its interpreter and libraries from --root)")
    r.add_argument("args", nargs="*", help="arguments passed to the guest as argv[1:]")
    machine_options(r)
    r.set_defaults(default_host_timeout=DEFAULT_HOST_TIMEOUT)
    r.add_argument("--kernel", dest="kernel_version", metavar="NAME",
                   help="the Linux release to model (`emukern info kernels`), e.g. debian-12-arm64; "
                        "default: the newest with the four changes (linux-7.3-ARCH+changes)")
    r.add_argument("--json", metavar="FILE", help="also write the summary as JSON")
    r.add_argument("--trace", choices=["traps"], help="print every trap the kernel took")
    r.add_argument("-q", "--quiet", action="store_true", help="no summary, only the guest's output")


@lru_cache(maxsize=1)
def run_parser() -> argparse.ArgumentParser:
    """A parser of `emukern run`'s arguments alone (the same as the `run` command's), so a sweep
    point's options mean what they mean on the command line."""
    p = argparse.ArgumentParser(prog="emukern run", description=RUN_DESCRIPTION, epilog=RUN_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(p)
    return p
