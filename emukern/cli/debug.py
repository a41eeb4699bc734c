"""`emukern debug` and `emukern gdbserver`: the command lines of the debugger (the engine, REPL
and GDB stub are :mod:`emukern.debug`).  Both take exactly `run`'s machine options."""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

DEBUG_EPILOG = """\
examples:
  emukern debug guest_asm/riscv/hello.S
  emukern debug prog.S --vlen 512 --policy riscv-discard=eager
  emukern debug prog.S --script cmds.txt        # run commands, echo each with its output
  emukern debug prog.S --ex 'break trap first-use' --ex continue --ex finish --batch

inside:  break trap syscall write | break trap first-use | break when vs=Dirty | continue |
         trap | finish | step | stepi 5 | info regs | info kernel | x/8xw $sp | traps | help
"""

GDB_EPILOG = """\
example:
  emukern gdbserver guest_asm/arm64/hello.S --port 1234 &
  gdb-multiarch -ex 'target remote :1234' -ex 'break *0x210130' -ex continue \\
                -ex 'monitor trap' -ex 'monitor info kernel'

`monitor CMD` runs any of `emukern debug`'s non-run-control commands (trap, traps, info kernel,
break trap KIND, sysctl, policy ...); a stop at a trap breakpoint is reported as SIGTRAP.
gdb gets the ELF itself (qXfer:exec-file; no `file` needed), arm64 SVE registers ($z0 $p0 $ffr
$vg at --sve-vl), riscv CSRs ($vl $vtype $vstart $vlenb $cycle ...), every task as a thread
(`info threads`, `thread N`) and watch/rwatch/awatch on guest memory.
"""


def machine_factory(a: argparse.Namespace) -> Callable[[], Any]:
    """A function that builds and loads a fresh machine from the parsed options (for restart)."""
    from emukern.api import Machine
    from emukern.options import config_from_args, warn_other_arch_options
    from emukern.debug.repl import GuestEcho

    config_from_args(a)              # validate everything once, before any prompt appears
    out, err = GuestEcho(sys.stdout), GuestEcho(sys.stderr)

    warned: list[bool] = []

    def make() -> Any:
        cfg = config_from_args(a)
        m = Machine(cfg, echo_stdout=out, echo_stderr=err)   # type: ignore[arg-type]
        m.explicit_arch = a.arch
        m.load(a.program, a.args)
        if not warned:               # once, not again at every `restart`
            warned.append(True)
            warn_other_arch_options(a, m.config.arch)
        return m
    return make


def cmd_debug(a: argparse.Namespace) -> int:
    from emukern.debug.engine import Debugger
    from emukern.debug.repl import run_debugger
    dbg = Debugger(machine_factory(a))
    return run_debugger(dbg, script=a.script, commands=a.ex, batch=a.batch)


def _port(text: str) -> int:
    try:
        port = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is not in 0..65535 (0 picks a free one)")
    return port


def cmd_gdbserver(a: argparse.Namespace) -> int:
    from emukern.debug.engine import Debugger
    from emukern.debug.gdbstub import serve
    dbg = Debugger(machine_factory(a))
    return serve(dbg, host=a.host, port=a.port, verbose=a.verbose)


def add_debug_commands(sub: Any) -> None:
    from emukern.options import machine_options
    d = sub.add_parser("debug", help="step-debug a guest and the kernel's trap handling (REPL)",
                       description="Load a guest and stop at its first instruction.  Step guest "
                       "instructions, stop where it traps, see why (syndrome, instruction), step through "
                       "what the kernel decides and continue.  `help` inside lists the commands.",
                       epilog=DEBUG_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("program", help="a .S file, or a static or dynamic riscv64/aarch64 ELF (a dynamic one loads its interpreter from --root)")
    d.add_argument("args", nargs="*", help="arguments passed to the guest as argv[1:]")
    machine_options(d)
    g = d.add_argument_group("debugger options")
    g.add_argument("--script", metavar="FILE",
                   help="run the commands in FILE ('-' = stdin), echoing each with its output, then exit "
                   "(status 1 if a command failed)")
    g.add_argument("--ex", action="append", default=[], metavar="CMD",
                   help="run CMD first (repeatable), then continue interactively unless --batch")
    g.add_argument("--batch", action="store_true", help="exit after --ex commands instead of prompting")
    d.set_defaults(func=cmd_debug)

    s = sub.add_parser("gdbserver", help="serve a guest to gdb (GDB remote serial protocol over TCP)",
                       description="Load a guest, stop at its first instruction and wait for one gdb "
                       "(`target remote :PORT`).  Prints 'listening on HOST:PORT' on stderr (port 0 picks "
                       "a free one).  Exits when gdb kills or detaches.",
                       epilog=GDB_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("program", help="a .S file, or a static or dynamic riscv64/aarch64 ELF (a dynamic one loads its interpreter from --root)")
    s.add_argument("args", nargs="*", help="arguments passed to the guest as argv[1:]")
    machine_options(s)
    g = s.add_argument_group("gdbserver options")
    g.add_argument("--port", type=_port, default=1234, metavar="N", help="TCP port (default 1234; 0 = any free)")
    g.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    g.add_argument("--verbose", action="store_true", help="log every packet on stderr")
    s.set_defaults(func=cmd_gdbserver)
