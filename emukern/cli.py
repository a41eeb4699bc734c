"""emukern's command line.  `emukern --help` and `emukern COMMAND --help` teach the rest."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from emukern.errors import ConfigError, EmukernError

DESCRIPTION = """\
emukern runs real RISC-V (RV64GCV) and AArch64 (with SVE) Linux user programs inside Unicorn,
at user privilege, and takes every trap into a Python model of the Linux kernel. Instruction
counts are the clock, so every figure is deterministic.

The kernel models four real Linux changes, each switchable with --policy (and at run time
with the debugger's `policy NAME VALUE`; your own values: --plugin FILE.py):
  riscv-vstate-sysctl=absent|present  "riscv: Add sysctl to control discard of vstate during
                                      syscall" (Drew Fustini, 2025-07-18)
  riscv-discard=eager|deferred        "riscv: vector: treat VS_INITIAL as discard"
                                      (Andy Chiu, 2026-04-01)
  arm64-mrs=hook-list|direct          "arm64: rework EL0 MRS emulation" (Mark Rutland; v5.10
                                      backport by Jinjie Ruan, 2023-10-11)
  arm64-sve=legacy|p1|p1+p2           "arm64/sve: Performance improvements with SVE state
                                      saving" (Mark Brown, v11, 2026)
  (message ids: `emukern info policies`)

examples:
  emukern run guest_asm/riscv/hello.S
  emukern run guest_asm/riscv/null_syscall.S --vlen 512 --sysctl abi.riscv_v_vstate_discard=1
  emukern run prog.elf --cpus 4 --policy arm64-mrs=hook-list --json out.json
  emukern reproduce            # every experiment, with the published figures beside ours
  emukern info policies        # switches, costs, sysctls
"""


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


def _int(text: str) -> int:
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


def machine_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("machine options (the same on every command that runs a guest)")
    g.add_argument("--arch", choices=["riscv64", "arm64"], help="guest architecture (default: from the program)")
    g.add_argument("--cpus", type=_int, default=1, metavar="N", help="simulated CPUs, 1..64 (default 1)")
    g.add_argument("--freq", type=_int, default=1_000_000_000, metavar="HZ",
                   help="CPU frequency in Hz: converts cycles to time (default 1e9)")
    g.add_argument("--hz", type=_int, default=250, metavar="N", help="timer ticks per second, CONFIG_HZ (default 250)")
    g.add_argument("--vlen", type=_int, default=256, metavar="BITS", help="RISC-V VLEN (default 256)")
    g.add_argument("--dlen", type=_int, default=None, metavar="BITS",
                   help="RISC-V vector datapath width for the cost model (default VLEN)")
    g.add_argument("--no-v", action="store_true", help="RISC-V without the V extension")
    g.add_argument("--sve-vl", type=_int, default=None, metavar="BITS",
                   help="arm64 default SVE vector length (default: as Linux boots, the largest of --sve-vls "
                        "up to 512; /proc/sys/abi/sve_default_vector_length)")
    g.add_argument("--sve-vls", default="128,256,512", metavar="LIST",
                   help="SVE vector lengths the machine supports, the set a guest enumerates with "
                        "PR_SVE_SET_VL (default 128,256,512)")
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
    g.add_argument("--max-insns", type=_int, default=2_000_000_000, metavar="N",
                   help="stop a runaway guest after N user instructions (default 2e9; 0 = no limit)")
    g.add_argument("--max-cycles", type=_int, default=None, metavar="N",
                   help="stop after N cycles of simulated time, kernel work included (default: no limit)")
    g.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop after this much simulated time, kernel work included (default: no limit)")
    g.add_argument("--host-timeout", type=float, default=None, metavar="SECONDS",
                   help="stop after this many host (wall-clock) seconds; where it stops depends on the host")
    g.add_argument("--mem-limit", default=None, metavar="SIZE",
                   help="guest memory for the whole machine, e.g. 2G (past it: ENOMEM to the guest; "
                        "default half the host's RAM; 0 = no limit)")
    g.add_argument("--quantum", type=_int, default=2000, metavar="CYCLES",
                   help="SMP lock-step: how far one CPU may run ahead of the others (default 2000)")
    g.add_argument("--stdin", metavar="FILE", help="file the guest reads as standard input")
    g.add_argument("--root", metavar="DIR",
                   help="the guest's root directory (like qemu-user -L): paths, execve and dynamic "
                        "programs' interpreter and libraries resolve inside it, e.g. --root /usr/aarch64-linux-gnu "
                        "(default: an empty root with only /proc and /dev)")
    g.add_argument("--root-rw", action="store_true",
                   help="let the guest write to --root (default read-only: EROFS)")


def config_from_args(a: argparse.Namespace) -> Any:
    from emukern.config import MachineConfig
    from emukern.kernel.policies import parse_assignments
    try:
        vls = tuple(int(x) for x in a.sve_vls.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--sve-vls expects a comma-separated list of bits, got {a.sve_vls!r}") from None
    cfg = MachineConfig(
        arch=a.arch or "riscv64", cpus=a.cpus, freq_hz=a.freq, hz=a.hz, vlen=a.vlen, dlen=a.dlen,
        has_v=not a.no_v, sve_vl=a.sve_vl, sve_vls=vls, idst=a.idst,
        arm64_cpu_model=getattr(a, "cpu_model", "qemu-max"),
        sysctls=parse_assignments(a.sysctl, "sysctl"), policies=parse_assignments(a.policy, "policy"),
        rlimits=parse_assignments(getattr(a, "rlimit", []), "rlimit"),
        costs={}, cost_file=a.cost_file, vstate_discard_default=a.vstate_discard_default,
        max_insns=a.max_insns or None, quantum=a.quantum, kernel=getattr(a, "kernel_version", None),
        root=getattr(a, "root", None), root_rw=getattr(a, "root_rw", False),
        max_cycles=getattr(a, "max_cycles", None), timeout=getattr(a, "timeout", None),
        host_timeout=getattr(a, "host_timeout", None),
    )
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
    if a.stdin:
        try:
            cfg.stdin = Path(a.stdin).read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read --stdin file {a.stdin}: {exc.strerror}") from None
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
    return cfg


def build_machine(a: argparse.Namespace, echo: bool = True) -> Any:
    from emukern.api import Machine
    cfg = config_from_args(a)
    m = Machine(cfg, echo_stdout=sys.stdout.buffer if echo else None,
                echo_stderr=sys.stderr.buffer if echo else None)
    m.explicit_arch = a.arch
    m.load(a.program, a.args)
    warn_other_arch_options(a, m.config.arch)
    return m


# ---- commands ---------------------------------------------------------------------------------
def check_output_file(path: str, option: str) -> None:
    """A file the run will write must be writable *before* the guest runs, so a typo in the
    path is a usage error at once, not a failure after a long run."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise ConfigError(f"{option} {path}: is a directory", hint=f"give a file name, e.g. {option} out.json")
    if not parent.is_dir():
        raise ConfigError(f"{option} {path}: directory {parent} does not exist",
                          hint=f"create it first (mkdir -p {parent}) or pick another path")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ConfigError(f"{option} {path}: not writable", hint="pick a path you can write")


# options that only mean something on one architecture: (dest, flag, the arch they belong to)
ARCH_ONLY_OPTIONS = [
    ("vlen", "--vlen", "riscv64"), ("dlen", "--dlen", "riscv64"), ("no_v", "--no-v", "riscv64"),
    ("vstate_discard_default", "--vstate-discard-default", "riscv64"),
    ("sve_vl", "--sve-vl", "arm64"), ("sve_vls", "--sve-vls", "arm64"), ("idst", "--idst", "arm64"),
    ("cpu_id", "--cpu-id", "arm64"), ("cpu_model", "--cpu-model", "arm64"),
]


def warn_other_arch_options(a: argparse.Namespace, arch: str) -> list[str]:
    """Warn (on stderr) about options given for the other architecture, e.g. --sve-vl on a riscv64
    guest: they are accepted (the same command line can serve both) but change nothing."""
    defaults = vars(_machine_option_defaults())
    wasted = [flag for dest, flag, only in ARCH_ONLY_OPTIONS
              if only != arch and getattr(a, dest, defaults.get(dest)) != defaults.get(dest)]
    if wasted:
        print(f"emukern: warning: {', '.join(wasted)} {'is' if len(wasted) == 1 else 'are'} "
              f"for {'arm64' if arch == 'riscv64' else 'riscv64'} guests and ignored on this {arch} guest",
              file=sys.stderr)
    return wasted


def _machine_option_defaults() -> argparse.Namespace:
    p = argparse.ArgumentParser(add_help=False)
    machine_options(p)
    return p.parse_args([])


def cmd_run(a: argparse.Namespace) -> int:
    if a.json:
        check_output_file(a.json, "--json")
    from emukern.machine.supervise import run_supervised
    # a native crash inside Unicorn still ends in a report (and the --json file)
    return run_supervised(lambda: _run(a), what=str(a.program), json_path=a.json)


def _run(a: argparse.Namespace) -> int:
    m = build_machine(a)
    sys.stdout.flush()
    r = m.run()
    if a.json:
        Path(a.json).write_text(json.dumps(r.to_json(), indent=2, sort_keys=True) + "\n")
    # (the report module, rich's tables, is imported only when something is printed: -q runs
    # start faster)
    if not a.quiet:
        from emukern.report import print_run_summary
        print_run_summary(r, m.kernel, trace=a.trace)
    elif a.trace == "traps":
        from emukern.report import print_trap_trace
        print_trap_trace(m.kernel)         # -q drops the summary, not a trace asked for explicitly
    return r.exit_status


def cmd_info(a: argparse.Namespace) -> int:
    if a.what == "examples":
        return print_examples()
    if a.what == "kernels":
        from emukern.kernel.versions import format_kernels
        print("\n".join(format_kernels()))
        return 0
    from emukern.kernel.plugins import load_plugin
    from emukern.report import print_info
    for spec in getattr(a, "plugin", []):
        load_plugin(spec)
    print_info(a.what)
    return 0


def print_examples() -> int:
    """The example guests shipped with emukern (the repository's guest_asm/, packaged in the wheel).
    `emukern run guest_asm/riscv/hello.S` finds them from any directory."""
    from emukern.resources import guest_asm_dir
    root = guest_asm_dir()
    print(f"example guests in {root} (run one with: emukern run guest_asm/<arch>/<file>):")
    for sub in sorted(d for d in root.iterdir() if d.is_dir() and d.name != "include"):
        files = sorted(p.name for p in sub.iterdir() if p.suffix in (".S", ".c"))
        if files:
            print(f"  guest_asm/{sub.name}/: {' '.join(files)}")
    return 0


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1, with a message that says so."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (give 1 or more)") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is less than 1 (give 1 or more)")
    return n


def cmd_reproduce(a: argparse.Namespace) -> int:
    from emukern.bench.reproduce import reproduce
    return reproduce(out_dir=Path(a.out), quick=a.quick, only=a.only, full=getattr(a, "full", False),
                     jobs=a.jobs)


def cmd_bench(a: argparse.Namespace) -> int:
    from emukern.bench.selfbench import main as bench_main
    return bench_main(quick=a.quick, reps=a.reps, only=a.only, profile=a.profile, json_path=a.json)


def cmd_selftests(a: argparse.Namespace) -> int:
    from emukern.selftests.suite import main as selftests_main
    return selftests_main(a)


def add_selftests_command(sub: Any) -> None:
    """`emukern selftests`: Linux's own arm64/riscv selftests, built from a real release, run under
    every relevant policy x vector length; kept in one function (emukern/selftests/ owns the rest)."""
    s = sub.add_parser("selftests", help="build and run Linux's own arm64/riscv selftests under every policy x VL",
                       description="Fetches linux-source-6.12 from Debian (cached under ~/.cache/emukern), "
                       "builds tools/testing/selftests/{arm64,riscv} with their Makefiles (static, Debian "
                       "cross compilers, the release's UAPI headers) and runs each test under every value of "
                       "the switches it exercises and every VL/VLEN, printing test x configuration -> the "
                       "test's own verdict, and for a failure the first cause emukern names. Exit status 1 "
                       "when any outcome differs from emukern/selftests/expected.toml.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--only", action="append", default=[], metavar="NAMES",
                   help="run only these tests (comma-separated, repeatable): sve-test, fp/sve-test, arm64/fp/sve-test")
    s.add_argument("--kernel", metavar="NAME",
                   help="pin every switch to one kernel profile: before | after its patch, or model a "
                        "release (`emukern info kernels`); a real one (debian-13-arm64 ...) also runs on "
                        "qemu-system's CPU and fails any test its recorded real kernel passes")
    s.add_argument("--real", metavar="KERNEL",
                   help="also boot this real kernel (debian-12-arm64 | debian-13-arm64 | debian-13-riscv64) "
                        "under qemu-system once per --vl (default 256) with every built test, and compare "
                        "verdicts with emukern --kernel KERNEL (results cached under ~/.cache/emukern)")
    s.add_argument("--record", action="store_true",
                   help="with --real: write the real verdicts to emukern/selftests/real_kernel.json")
    s.add_argument("--real-file", metavar="FILE", help="the recorded real verdicts (default: real_kernel.json)")
    s.add_argument("--vl", action="append", type=_int, default=[], metavar="BITS",
                   help="run vector tests only at this SVE VL / RVV VLEN (repeatable; default every one)")
    s.add_argument("--time-limit", type=float, default=120.0, metavar="S", help="host seconds per run (default 120)")
    s.add_argument("--stress-seconds", type=float, default=0.001, metavar="S",
                   help="simulated seconds a stress test runs before its SIGTERM (default 0.001)")
    s.add_argument("--linux-src", metavar="DIR", help="use this kernel tree instead of Debian's linux-source")
    s.add_argument("--expected", metavar="FILE", help="expected-results table (default: the built-in expected.toml)")
    s.add_argument("--json", metavar="FILE", help="also write every outcome as JSON")
    s.add_argument("--list", action="store_true", help="list the tests and their switches, run nothing")
    s.add_argument("-v", "--verbose", action="store_true", help="print each build and run as it starts")
    machine_options(s)
    s.set_defaults(func=cmd_selftests)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="emukern", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    from emukern import __version__
    p.add_argument("--version", action="version", version=f"emukern {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="run a guest program (.S source or static ELF64)",
                       description="Run a guest program and print its output, its exit status and a "
                       "summary (instructions, kernel cost, cycles, simulated time, traps by kind) on stderr. "
                       "The exit status is the guest's (128+N when killed by signal N).",
                       epilog=RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("program", help="a .S file (assembled with LLVM, cached) or a static ELF64 for riscv64/aarch64")
    r.add_argument("args", nargs="*", help="arguments passed to the guest as argv[1:]")
    machine_options(r)
    r.add_argument("--kernel", dest="kernel_version", metavar="NAME",
                   help="the Linux release to model (`emukern info kernels`), e.g. debian-12-arm64; "
                        "default: the newest with the four changes (linux-7.3-ARCH+changes)")
    r.add_argument("--json", metavar="FILE", help="also write the summary as JSON")
    r.add_argument("--trace", choices=["traps"], help="print every trap the kernel took")
    r.add_argument("-q", "--quiet", action="store_true", help="no summary, only the guest's output")
    r.set_defaults(func=cmd_run)

    i = sub.add_parser("info", help="list policies, cost-model constants, sysctls or the example guests")
    i.add_argument("--plugin", action="append", default=[], metavar="FILE.py|MODULE",
                   help="load a policy plug-in first, so its values are listed")
    i.add_argument("what", choices=["policies", "costs", "sysctls", "examples", "kernels", "all"], nargs="?",
                   default="all")
    i.set_defaults(func=cmd_info)

    rp = sub.add_parser("reproduce", help="run every experiment and print our figures beside the published ones",
                        description="Runs the emulator self-benchmark and the experiment of each modelled "
                        "Linux change, prints tables, writes PNG plots and results.json into --out "
                        "(--quick runs into OUT/quick; results.json is merged per experiment and says "
                        "which runs were quick, partial, failed or interrupted).")
    rp.add_argument("--out", default="reproduce-out", help="directory for plots and results (default reproduce-out)")
    rp.add_argument("--quick", action="store_true", help="smaller iteration counts (for smoke tests), written to OUT/quick")
    rp.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this experiment (repeatable)")
    rp.add_argument("--full", action="store_true",
                    help="real iteration counts: the upstream fp-pidbench's 2,560,000 getpid calls per loop (slow)")
    rp.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                    help="run the independent experiments in N worker processes (default: one per CPU, "
                    f"{os.cpu_count() or 1} here); the host-speed benchmarks always run first and alone; "
                    "--jobs 1 runs everything in this process, in order")
    rp.set_defaults(func=cmd_reproduce)

    b = sub.add_parser("bench", help="emulator self-benchmark: speed vs raw Unicorn, qemu-user (and Qiling)",
                       description="Runs emukern and its baselines (raw Unicorn, qemu-user, Qiling when installed) "
                       "alternately on the same guest loops, REPS rounds each, and prints min/median/max and "
                       "the median of the pairwise ratios, each of issue 19's targets marked met or MISSED.")
    b.add_argument("--quick", action="store_true", help="small iteration counts (smoke test)")
    b.add_argument("--reps", type=_int, default=None, metavar="N", help="rounds per figure (default 5)")
    b.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="run only this measurement (repeatable): mips, syscall, pidbench, rvv, vsetvli, mrs-sweep")
    b.add_argument("--profile", action="store_true",
                   help="also cProfile the null-syscall path on both arches: top entries printed and in the JSON")
    b.add_argument("--json", metavar="FILE", help="write every figure (samples, medians, ratios, targets) as JSON")
    b.set_defaults(func=cmd_bench)

    from emukern.sweep.cli import add_sweep_command
    add_sweep_command(sub)
    add_selftests_command(sub)
    from emukern.oracle.cli import add_oracle_commands
    add_oracle_commands(sub)

    try:
        from emukern.debug.cli import add_debug_commands
        add_debug_commands(sub, machine_options)
    except ImportError:
        pass
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    guest_extra: list[str] = []
    if "--" in words:
        # `--` ends emukern's options: the rest goes to the guest verbatim.  (argparse alone
        # cannot do this once the positional `args` has been matched, so split here.)
        cut = words.index("--")
        words, guest_extra = words[:cut], words[cut + 1:]
    a = parser.parse_args(words)
    if guest_extra:
        if not hasattr(a, "args"):
            parser.error(f"unrecognized arguments: -- {' '.join(guest_extra)}")
        a.args = list(a.args) + guest_extra
    if not getattr(a, "command", None):
        parser.print_help()
        return 0
    try:
        return int(a.func(a) or 0)
    except EmukernError as exc:
        print(f"emukern: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("emukern: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 141
    except Exception as exc:  # noqa: BLE001 - last line of defence: no tracebacks for users
        if os.environ.get("EMUKERN_DEBUG"):
            raise
        print(f"emukern: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  hint: this is a bug in emukern; rerun with EMUKERN_DEBUG=1 for a traceback and report it",
              file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
