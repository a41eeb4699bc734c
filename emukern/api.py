"""The Python API: build a machine, load a program, run it, look inside.

>>> from emukern.api import Machine
>>> m = Machine(arch="riscv64", vlen=512, policies={"riscv-discard": "eager"})
>>> _ = m.load("guest_asm/riscv/hello.S")   # .S is assembled with LLVM, ELF files load directly
>>> r = m.run()
>>> r.exit_status, r.stdout
(0, b'Hello from RISC-V user mode!\\n')
>>> m.read(m.symbol("msg"), 5)
b'Hello'

(``m.kernel.trap_log`` holds the traps, ``m.cpu(0).reg(10)`` reads a register.)
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from emukern.kernel.boot_checks import validate_for_kernel
from emukern.config import MachineConfig
from emukern.errors import ConfigError
from emukern.kernel.kernel import Kernel
from emukern.kernel.result import RunResult

if TYPE_CHECKING:
    from emukern.kernel.kernel import TrapRecord
    from emukern.machine.cpu_base import Cpu

__all__ = ["Machine", "run_program", "resolve_program", "elf_arch", "RunResult", "MachineConfig",
           "result_fields"]


def result_fields(stdout: bytes | str) -> dict[str, int]:
    """The ``name=value`` integers of an example guest's result line, by name.

    The timing guests (null_syscall, lat_ctx_vec, vec_write_loop ...) end with one labelled line
    such as ``cycles=167001 iterations=1000``: readable on a terminal, parsed here by label so
    a reader and a script agree on which number is which.

    >>> result_fields(b"cycles=167001 iterations=1000\\n")
    {'cycles': 167001, 'iterations': 1000}
    """
    import re
    text = stdout.decode(errors="replace") if isinstance(stdout, bytes) else stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\b([A-Za-z_][\w]*)=(-?\d+)\b", text)}


def resolve_program(path: str | Path, arch: str | None = None, *,
                    arch_is_default: bool = False) -> tuple[Path, str | None]:
    """Assemble a .S (cached) or return an ELF path; also report the arch the source implies.

    A source's architecture is, in order: a ``# arch: NAME`` / ``// arch: NAME`` line at its
    top, an ``arm64``/``aarch64`` or ``riscv``/``riscv64`` folder in its path, then ``arch``.
    ``arch_is_default`` says ``arch`` is only the default (no ``--arch``): when assembling under
    it fails, the hint says so, because a file outside an ``arm64/`` folder is assembled as
    riscv64 and an arm64 source then fails on its first instruction."""
    from emukern.errors import AssemblerError
    from emukern.loader.asm import assemble, detect_arch_from_source
    from emukern.resources import find_example
    p = Path(path)
    if not p.exists():
        example = find_example(p)
        if example is None:
            raise ConfigError(f"no such program: {p}",
                              hint="give a .S source or a static ELF64 file; `emukern info examples` "
                                   "lists the example guests shipped with emukern")
        p = example
    if p.suffix in (".S", ".s", ".asm"):
        detected = detect_arch_from_source(p)
        src_arch = detected or arch
        if src_arch is None:
            raise ConfigError(f"cannot tell the architecture of {p}",
                              hint="pass --arch riscv64|arm64 or put '# arch: riscv64' on its first line")
        try:
            return assemble(p, src_arch), src_arch
        except AssemblerError as exc:
            if detected is None and arch_is_default:
                # another arch's source: the fix first, the assembler's output cut (loader/asm.py)
                from emukern.loader.asm import wrong_arch_error
                better = wrong_arch_error(exc, p.name, src_arch)
                if better is not None:
                    raise better from None
            raise
    return p, None


def elf_arch(path: Path) -> str | None:
    """The architecture ("riscv64" or "arm64") an ELF file is built for, from its header."""
    from emukern.loader.elf import load_elf
    return load_elf(path, allow_interp=True).arch


class Machine:
    """One simulated machine: CPUs (Unicorn), memory, and the Python model of the Linux kernel.

    Build it from a :class:`~emukern.config.MachineConfig` or from keyword options named after the
    config's fields (``arch``, ``cpus``, ``vlen``, ``sve_vl``, ``policies``, ``sysctls``,
    ``costs``, ``max_insns`` ...; an unknown name is a :class:`~emukern.errors.ConfigError`)::

        m = Machine(arch="riscv64", vlen=512, policies={"riscv-discard": "eager"},
                    sysctls={"abi.riscv_v_vstate_discard": 1})
        r = m.load("guest_asm/riscv/hello.S").run()

    Then :meth:`load` a program and :meth:`run` it; afterwards (or from a debugger hook) look
    inside with :meth:`cpu`, :meth:`read`, :meth:`symbol` and :attr:`trap_log`.  ``kernel`` is the
    :class:`~emukern.kernel.kernel.Kernel` (None until a program is loaded).

    :param config: a full configuration; keyword ``options`` are applied on top of it.
    :param echo_stdout: also copy the guest's standard output to this binary stream as it is
        written (the CLI passes ``sys.stdout.buffer``); it is always captured in the result.
    :param echo_stderr: the same for the guest's standard error.
    """

    # the arch the user named on a command line (None: not named), checked against the program's
    explicit_arch: str | None = None

    def __init__(self, config: MachineConfig | None = None, *, echo_stdout: BinaryIO | None = None,
                 echo_stderr: BinaryIO | None = None, **options: Any) -> None:
        cfg = config or MachineConfig()
        # an arch from the caller (config or option) is not "the default" for resolve_program
        self._arch_given = (config is not None and config.arch != MachineConfig().arch) or "arch" in options
        known = {f.name for f in fields(MachineConfig)}
        for k, v in options.items():
            if k not in known:
                raise ConfigError(f"unknown machine option {k!r}",
                                  hint="options are emukern.config.MachineConfig's fields: " + ", ".join(sorted(known)))
            setattr(cfg, k, v)
        self.config: MachineConfig = cfg
        self._echo = (echo_stdout, echo_stderr)
        self.kernel: Kernel | None = None
        self.program: Path | None = None
        self.argv: list[str] = []

    def load(self, path: str | Path, argv: list[str] | None = None, envp: list[str] | None = None) -> "Machine":
        """Load a program into a fresh kernel, ready to :meth:`run`.

        :param path: a ``.S`` source (assembled with llvm-mc/ld.lld, cached by content; its
            architecture comes from ``# arch:``/``// arch:`` on its first line or an ``arm64``/``riscv``
            folder in its path) or a static ELF64 for riscv64/aarch64.  A relative path that does
            not exist is looked up among the example guests shipped with emukern
            (``guest_asm/riscv/hello.S``).
        :param argv: ``argv[1:]`` for the guest (``argv[0]`` is ``path``).
        :param envp: the guest's environment (default ``PATH=/bin EMUKERN=1``).
        :returns: the machine itself, so ``Machine(...).load(p).run()`` chains.
        :raises ConfigError: unknown file, assembly error, arch mismatch, invalid option.
        """
        explicit = self.explicit_arch
        prog, src_arch = resolve_program(path, explicit or self.config.arch,
                                         arch_is_default=explicit is None and not self._arch_given)
        arch = src_arch or elf_arch(prog)
        if explicit and arch and explicit != arch:
            raise ConfigError(f"{path} is a {arch} program but --arch {explicit} was given",
                              hint=f"drop --arch or use --arch {arch}")
        if arch is not None:
            self.config.arch = arch
        # the checks that need the kernel model (emukern/kernel/boot_checks.py), after the plain ones as
        # the kernel's boot makes them (Kernel.__init__ validates again: idempotent)
        self.config.validate()
        validate_for_kernel(self.config)
        self.kernel = Kernel(self.config, echo_stdout=self._echo[0], echo_stderr=self._echo[1])
        self.program = prog
        self.argv = [str(path)] + list(argv or [])
        self.kernel.load(str(prog), self.argv, envp or ["PATH=/bin", "EMUKERN=1"])
        return self

    def run(self) -> RunResult:
        """Run the loaded program until every task has exited, a fatal signal, a deadlock or the
        ``max_insns`` budget, and return what happened (output, exit status, counts, time)."""
        k = self._loaded()
        with _young_gc_relaxed():
            return k.runloop.run()

    # --- inspection ---
    def _loaded(self) -> Kernel:
        if self.kernel is None:
            raise ConfigError("nothing loaded", hint="call Machine.load(path) first")
        return self.kernel

    def cpu(self, i: int = 0) -> "Cpu":
        """Simulated CPU number ``i`` (a :class:`~emukern.machine.cpu_base.Cpu`): ``reg(n)`` /
        ``set_reg(n, v)`` for the general registers, ``get_pc()``, ``reg_read(name)``, ``now``
        (its clock in cycles), ``insns``/``user_insns``.

        The vector registers as the CPU holds them now (after :meth:`run`, or from a hook):

        * riscv64 (:class:`~emukern.machine.cpu_riscv.RiscvCpu`): ``vreg(n) -> bytes`` (VLENB
          bytes, element 0 first), ``set_vreg(n, data)``, and the CSRs ``vl``, ``vtype``,
          ``vstart``, ``vlenb``;
        * arm64 (:class:`~emukern.machine.cpu_arm64.Arm64Cpu`): ``sve_z(n)`` (VL/8 bytes),
          ``sve_p(n)`` and ``sve_ffr()`` (VL/64 bytes), ``sve_state()`` (all of them),
          ``set_sve_z``/``set_sve_p``/``set_sve_ffr``, and ``sve_vl`` (bits).

        >>> m = Machine(arch="riscv64", vlen=256).load("guest_asm/riscv/hello.S")
        >>> m.cpu(0).vlenb, len(m.cpu(0).vreg(8))
        (32, 32)
        """
        cpus = self._loaded().cpus
        if not 0 <= i < len(cpus):
            raise ConfigError(f"no CPU {i}: the machine has {len(cpus)}", hint="CPUs are numbered from 0")
        return cpus[i]

    def read(self, addr: int, size: int) -> bytes:
        """``size`` bytes of the first process's memory at virtual address ``addr``."""
        k = self._loaded()
        if k.init_task is None:
            raise ConfigError("nothing loaded", hint="call Machine.load(path) first")
        return bytes(k.init_task.mm.read(addr, size))

    def symbol(self, name: str) -> int:
        """The address of symbol ``name`` in the loaded program (ELF symbol table)."""
        syms = self._loaded().symbols
        if name not in syms:
            raise ConfigError(f"no symbol {name!r} in {self.program}", hint="is it declared .globl?")
        return syms[name]

    @property
    def trap_log(self) -> list[TrapRecord]:
        """The traps the kernel took, oldest first (the most recent ones; the log is bounded):
        kind, CPU, task, pc, syndrome, the handler that ran, what it decided and its cycles."""
        return list(self._loaded().trap_log)




def run_program(path: str | Path, argv: list[str] | None = None, **options: Any) -> RunResult:
    """Build a :class:`Machine` from ``options``, load ``path`` with ``argv`` and run it.

    ``options`` are :class:`~emukern.config.MachineConfig` fields::

        r = run_program("guest_asm/arm64/hello.S", sve_vl=512)
        assert r.exit_status == 0
    """
    return Machine(**options).load(path, argv).run()


@contextlib.contextmanager
def _young_gc_relaxed(threshold: int = 50_000) -> Iterator[None]:
    """Run with Python's young-generation GC threshold raised (700 -> 50,000 allocations).

    Every trap allocates a few objects (the Trap, its trap-log record, register lists), so with
    the default threshold the cyclic collector ran every few dozen traps: measured ~18% of a null
    syscall's CPU time (emukern bench --only syscall; gc disabled 7.6 vs 9.4 us riscv64, 10.5 vs
    12.8 us arm64).  Garbage without reference cycles is still freed at once; the old threshold
    comes back after the run."""
    old = gc.get_threshold()
    if old[0] >= threshold:
        yield
        return
    gc.set_threshold(threshold, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)

