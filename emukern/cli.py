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

The kernel models four real Linux changes, each switchable with --policy:
  riscv-vstate-sysctl=absent|present  seed 000: abi.riscv_v_vstate_discard sysctl
  riscv-discard=eager|deferred        seed 003: VS_INITIAL as discard
  arm64-mrs=hook-list|direct          seed 001: EL0 MRS emulation without undef_lock
  arm64-sve=legacy|p1|p1+p2           seed 004: SVE access trap with sve_timeout

examples:
  emukern run guest_asm/riscv/hello.S
  emukern run guest_asm/riscv/null_syscall.S --vlen 512 --sysctl abi.riscv_v_vstate_discard=1
  emukern run prog.elf --cpus 4 --policy arm64-mrs=hook-list --json out.json
  emukern reproduce            # every experiment, with the seeds' figures beside ours
  emukern info policies        # switches, costs, sysctls
"""


def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


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
    g.add_argument("--sve-vl", type=_int, default=256, metavar="BITS", help="arm64 default SVE vector length (default 256)")
    g.add_argument("--sve-vls", default="128,256,512", metavar="LIST",
                   help="SVE vector lengths the machine supports (default 128,256,512)")
    g.add_argument("--idst", action="store_true",
                   help="arm64 FEAT_IDST: EL0 ID-register reads trap as EC 0x18 (do_el0_sys)")
    g.add_argument("--cpu-id", action="append", default=[], metavar="CPU:REG[.FIELD]=VALUE",
                   help="arm64: give one CPU another ID-register value or field, e.g. "
                        "1:ID_AA64ISAR0_EL1.AES=0 or 2:MIDR_EL1=0x410fd0c0 (repeatable; heterogeneous machine)")
    g.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                   help="set a sysctl at boot, e.g. abi.riscv_v_vstate_discard=1 (repeatable)")
    g.add_argument("--policy", action="append", default=[], metavar="NAME=VALUE",
                   help="pick a seed switch, e.g. riscv-discard=eager (repeatable; `emukern info policies`)")
    g.add_argument("--cost", action="append", default=[], metavar="KEY=CYCLES",
                   help="override a cost-model constant (repeatable; `emukern info costs`)")
    g.add_argument("--cost-file", metavar="FILE", help="cost overrides, one 'key = cycles' per line")
    g.add_argument("--vstate-discard-default", action="store_true",
                   help="model CONFIG_RISCV_ISA_V_VSTATE_DISCARD=y (sysctl boots at 1)")
    g.add_argument("--max-insns", type=_int, default=2_000_000_000, metavar="N",
                   help="stop a runaway guest after N user instructions (default 2e9; 0 = no limit)")
    g.add_argument("--quantum", type=_int, default=2000, metavar="CYCLES",
                   help="SMP lock-step: how far one CPU may run ahead of the others (default 2000)")
    g.add_argument("--stdin", metavar="FILE", help="file the guest reads as standard input")


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
        sysctls=parse_assignments(a.sysctl, "sysctl"), policies=parse_assignments(a.policy, "policy"),
        costs={}, cost_file=a.cost_file, vstate_discard_default=a.vstate_discard_default,
        max_insns=a.max_insns or None, quantum=a.quantum,
    )
    for k, v in parse_assignments(a.cost, "cost").items():
        try:
            cfg.costs[k] = int(v, 0)
        except ValueError:
            raise ConfigError(f"--cost {k} must be an integer number of cycles, got {v!r}") from None
    for item in getattr(a, "cpu_id", []):
        from emukern.kernel.arm64.cpufeature import parse_cpu_id_override
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
    from emukern.kernel.policies import Policies
    Policies(cfg.policies)      # validate names/values before anything runs
    from emukern.machine.cost import CostTable
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
    return m


# ---- commands ---------------------------------------------------------------------------------
def cmd_run(a: argparse.Namespace) -> int:
    from emukern.machine.supervise import run_supervised
    # a native crash inside Unicorn still ends in a report (and the --json file)
    return run_supervised(lambda: _run(a), what=str(a.program), json_path=a.json)


def _run(a: argparse.Namespace) -> int:
    from emukern.report import print_run_summary
    m = build_machine(a)
    sys.stdout.flush()
    r = m.run()
    if a.json:
        Path(a.json).write_text(json.dumps(r.to_json(), indent=2, sort_keys=True) + "\n")
    if not a.quiet:
        print_run_summary(r, m.kernel, trace=a.trace)
    return r.exit_status


def cmd_info(a: argparse.Namespace) -> int:
    from emukern.report import print_info
    print_info(a.what)
    return 0


def cmd_reproduce(a: argparse.Namespace) -> int:
    from emukern.bench.reproduce import reproduce
    return reproduce(out_dir=Path(a.out), quick=a.quick, only=a.only)


def cmd_bench(a: argparse.Namespace) -> int:
    from emukern.bench.selfbench import main as bench_main
    return bench_main(quick=a.quick)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="emukern", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="run a guest program (.S source or static ELF64)",
                       description="Run a guest program and print its output, its exit status and a "
                       "summary (instructions, kernel cost, cycles, simulated time, traps by kind) on stderr. "
                       "The exit status is the guest's (128+N when killed by signal N).",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("program", help="a .S file (assembled with LLVM, cached) or a static ELF64 for riscv64/aarch64")
    r.add_argument("args", nargs="*", help="arguments passed to the guest as argv[1:]")
    machine_options(r)
    r.add_argument("--json", metavar="FILE", help="also write the summary as JSON")
    r.add_argument("--trace", choices=["traps"], help="print every trap the kernel took")
    r.add_argument("-q", "--quiet", action="store_true", help="no summary, only the guest's output")
    r.set_defaults(func=cmd_run)

    i = sub.add_parser("info", help="list policies, cost-model constants or sysctls")
    i.add_argument("what", choices=["policies", "costs", "sysctls", "all"], nargs="?", default="all")
    i.set_defaults(func=cmd_info)

    rp = sub.add_parser("reproduce", help="run every experiment and print our figures beside the seeds'",
                        description="Runs the emulator self-benchmark and each seed experiment, prints "
                        "tables, writes PNG plots and a JSON file into --out.")
    rp.add_argument("--out", default="reproduce-out", help="directory for plots and results (default reproduce-out)")
    rp.add_argument("--quick", action="store_true", help="smaller iteration counts (for smoke tests)")
    rp.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this experiment (repeatable)")
    rp.set_defaults(func=cmd_reproduce)

    b = sub.add_parser("bench", help="emulator self-benchmark: speed vs raw Unicorn (and qemu-user)")
    b.add_argument("--quick", action="store_true")
    b.set_defaults(func=cmd_bench)

    try:
        from emukern.debug.cli import add_debug_commands
        add_debug_commands(sub, machine_options)
    except ImportError:
        pass
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    a = parser.parse_args(argv)
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
