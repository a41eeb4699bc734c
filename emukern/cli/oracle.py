"""`emukern linux` and `emukern compare`: the command lines of the oracle (:mod:`emukern.oracle`)."""
from __future__ import annotations

from emukern.options import DEFAULT_MAX_INSNS

import argparse
import sys
from pathlib import Path
from typing import Any

from emukern.oracle import TIMING_NOTE

LINUX_HELP = """\
Boots a real Debian Linux kernel under qemu-system with PROG in its initramfs and prints exactly
what PROG wrote (stdout to stdout, stderr to stderr); the exit status is PROG's.  A summary goes
to stderr (-q drops it).

PROG runs as pid 1 of its own pid namespace under a small /init (emukern's runner), which relays
its output over the serial console as framed, CRC-checked lines, so the kernel's own messages are
never mixed into it (see README, "Real kernels").

kernels (--kernel):
  debian-12-arm64     Debian 12, Linux 6.1   (before "arm64: rework EL0 MRS emulation")
  debian-13-arm64     Debian 13, Linux 6.12  (default for arm64)
  debian-13-riscv64   Debian 13, Linux 6.12  (default for riscv64)
  riscv64-6.12-optimize-restore
                      Debian's linux-source 6.12 built here with "riscv: optimize Vector context
                      restore on syscall" + abi.riscv_v_vstate_discard (not downloadable: build it
                      once with `python -m emukern.oracle.build riscv64-6.12-optimize-restore`)
Images come from Debian's linux-image packages (apt-get download through a private apt
configuration; the local build from `python -m emukern.oracle.build NAME`) and are cached in ~/.cache/emukern/kernels/.  Needs qemu-system-arm /
qemu-system-misc and the GCC cross compiler of the architecture (tools/setup.sh).

examples:
  emukern linux guest_asm/arm64/sve_syscall.S --kernel debian-12-arm64 | xxd | head
  emukern linux guest_asm/riscv/vabi_state.S -- 1
"""

COMPARE_HELP = f"""\
Runs PROG under emukern with the policies of the real kernel's profile and under that real kernel
(as `emukern linux`), then reports per line whether stdout and stderr agree, the exit statuses,
and a unified diff (emukern first).  Binary output is compared in rows of 8 bytes.  Exit status
0 when everything agrees, 1 when something differs.

{TIMING_NOTE}.

--policy values the real kernel does not have are refused (a real kernel has one behaviour per
change); --sysctl is applied in both (written to /proc/sys in the real kernel).  --root DIR is
the guest's / in both: emukern's guest root (read-only: writes get EROFS) and the real kernel's
initramfs (a writable copy), so compare what a program reads there, not what it writes.
"""


def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


class _Intermixed(argparse.ArgumentParser):
    _inside = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        if self._inside:                       # parse_known_intermixed_args calls us back
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return super().parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def _common(p: argparse.ArgumentParser) -> None:
    # options may come before or after PROG, and `-- ARGS` after them: parse intermixed, or
    # argparse would have bound the empty ARGS before it reached the `--`
    p.__class__ = _Intermixed
    p.add_argument("program", help="a .S file (assembled with LLVM), or a static or dynamic aarch64/riscv64 ELF")
    p.add_argument("args", nargs="*", help="arguments for the program (after --)")
    p.add_argument("--arch", choices=["riscv64", "arm64"], help="architecture (default: from the program)")
    p.add_argument("--kernel", metavar="NAME", help="debian-12-arm64 | debian-13-arm64 | debian-13-riscv64"
                   " | riscv64-6.12-optimize-restore (built locally)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--vlen", type=_int, default=256, metavar="BITS", help="RISC-V VLEN (default 256)")
    g.add_argument("--sve-vl", type=_int, default=256, metavar="BITS",
                   help="arm64 SVE vector length: QEMU's sve<BITS>=on, and the default VL (default 256)")
    p.add_argument("--cpus", type=_int, default=1, metavar="N", help="CPUs (qemu -smp; default 1)")
    p.add_argument("--root", metavar="DIR", help="a directory tree to add to the initramfs (the guest's /)")
    p.add_argument("--timeout", type=_int, default=60, metavar="SECONDS",
                   help="kill PROG after this many seconds inside the real machine (default 60)")
    p.add_argument("--refresh", action="store_true",
                   help="re-read Debian's archive index first (a newer kernel build may be out)")


def add_oracle_commands(sub: Any) -> None:
    lx = sub.add_parser("linux", help="run a program under a real Linux kernel (qemu-system)",
                        description=LINUX_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(lx)
    lx.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="write this sysctl through /proc/sys before the program runs, e.g. "
                         "abi.riscv_v_vstate_discard=1 (repeatable)")
    lx.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    lx.add_argument("--console", action="store_true",
                    help="also print the kernel's own console lines (boot log, panics) on stderr")
    lx.set_defaults(func=cmd_linux)

    cp = sub.add_parser("compare", help="emukern vs the real kernel on one program (values, not timing)",
                        description=COMPARE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(cp)
    cp.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                    help="set in emukern and, through /proc/sys, in the real kernel (repeatable)")
    cp.add_argument("--policy", action="append", default=[], metavar="NAME=VALUE",
                    help="must match the real kernel's (refused otherwise)")
    cp.add_argument("--max-insns", type=_int, default=DEFAULT_MAX_INSNS, metavar="N",
                    help="emukern's runaway budget (default 2e10)")
    cp.set_defaults(func=cmd_compare)


def _prepare(a: argparse.Namespace) -> tuple[Any, Path, str]:
    from emukern.api import elf_arch, resolve_program
    from emukern.oracle.kernels import PROFILES, profile
    arch = a.arch or (PROFILES[a.kernel].arch if a.kernel in PROFILES else None)
    prog, src_arch = resolve_program(a.program, arch)
    arch_found = src_arch or elf_arch(prog)
    if a.arch and arch_found and a.arch != arch_found:
        from emukern.errors import ConfigError
        raise ConfigError(f"{a.program} is a {arch_found} program but --arch {a.arch} was given",
                          hint=f"drop --arch or use --arch {arch_found}")
    return profile(a.kernel, arch_found or arch), prog, arch_found or arch


def _real(a: argparse.Namespace, prof: Any, prog: Path, sysctls: dict[str, str] | None = None) -> Any:
    from emukern.oracle.initramfs import Program
    from emukern.oracle.kernels import fetch_kernel
    from emukern.oracle.qemu import boot
    img = fetch_kernel(prof, refresh=a.refresh)
    res = boot(img, [Program(prog, list(a.args), timeout=a.timeout, label=a.program)], cpus=a.cpus,
               vlen=a.vlen, sve_vl=a.sve_vl, root=Path(a.root) if a.root else None, sysctls=sysctls)
    return img, res


def cmd_linux(a: argparse.Namespace) -> int:
    from emukern.kernel.policies import parse_assignments
    sysctls = parse_assignments(a.sysctl, "sysctl")
    prof, prog, _ = _prepare(a)
    img, res = _real(a, prof, prog, sysctls=sysctls or None)
    run = res.log.runs.get(0)
    if a.console:
        for line in res.log.kernel_lines:
            print("console| " + "".join(ch if ch.isprintable() else "?" for ch in line), file=sys.stderr)
    if run is None or run.errors:
        from emukern.oracle import OracleError
        from emukern.oracle.compare import START_HINT, explain_errors
        raise OracleError(f"the runner could not start {a.program} under the real kernel: "
                          + (explain_errors(run.errors) if run else "no report"), hint=START_HINT)
    sys.stdout.buffer.write(run.stdout)
    sys.stdout.flush()
    sys.stderr.buffer.write(run.stderr)
    sys.stderr.flush()
    if not a.quiet:
        how = "killed after --timeout" if run.timed_out else f"exit status {run.exit_status}"
        print(f"emukern linux: {a.program} under Linux {res.log.release} ({prof.name}, "
              f"{img.package} {img.version}) on {Path(res.command[0]).name} -cpu {res.command[res.command.index('-cpu') + 1]}"
              f" -smp {a.cpus}: {how}; boot and run took {res.seconds:.1f} s wall", file=sys.stderr)
    return 124 if run.timed_out else int(run.exit_status if run.exit_status is not None else 255)


def cmd_compare(a: argparse.Namespace) -> int:
    from emukern.kernel.policies import parse_assignments
    from emukern.oracle.compare import check_policies, compare_runs, emukern_config, run_emukern
    prof, prog, _ = _prepare(a)
    check_policies(prof, parse_assignments(a.policy, "policy"))
    sysctls = parse_assignments(a.sysctl, "sysctl")
    cfg = emukern_config(prof, cpus=a.cpus, vlen=a.vlen, sve_vl=a.sve_vl, sysctls=sysctls,
                         max_insns=a.max_insns or None)
    if a.root:
        # one tree for both sides: emukern's guest root and the initramfs of the real kernel
        # (which writes only to its in-memory copy; emukern keeps DIR read-only, never root_rw)
        if not Path(a.root).is_dir():
            from emukern.errors import ConfigError
            raise ConfigError(f"--root {a.root} is not a directory",
                              hint="give the directory tree the program should see as /")
        cfg.root = str(Path(a.root).resolve())
    out, err, status = run_emukern(cfg, prog, list(a.args))
    img, res = _real(a, prof, prog, sysctls=sysctls)
    c = compare_runs(prof, res.log.release or "?", a.program, out, err, status, res.log.runs[0])
    print(c.report())
    return 0 if c.agree else 1
