"""The Python API: build a machine, load a program, run it, look inside.

    from emukern.api import Machine
    m = Machine(arch="riscv64", vlen=512, policies={"riscv-discard": "eager"})
    m.load("guest_asm/riscv/hello.S")          # .S is assembled with LLVM, ELF files load directly
    r = m.run()
    assert r.exit_status == 0 and r.stdout == b"hello\\n"
    m.kernel.trap_log, m.cpu(0).reg(10), m.read(addr, n)
"""
from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, BinaryIO

from emukern.config import MachineConfig
from emukern.errors import ConfigError
from emukern.kernel.kernel import Kernel
from emukern.kernel.result import RunResult


def resolve_program(path: str | Path, arch: str | None = None) -> tuple[Path, str | None]:
    """Assemble a .S (cached) or return an ELF path; also report the arch the source implies."""
    from emukern.loader.asm import assemble, detect_arch_from_source
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"no such program: {p}", hint="give a .S source or a static ELF64 file")
    if p.suffix in (".S", ".s", ".asm"):
        src_arch = detect_arch_from_source(p) or arch
        if src_arch is None:
            raise ConfigError(f"cannot tell the architecture of {p}",
                              hint="pass --arch riscv64|arm64 or put '# arch: riscv64' on its first line")
        return assemble(p, src_arch), src_arch
    return p, None


def elf_arch(path: Path) -> str | None:
    from emukern.loader.elf import load_elf
    return load_elf(path, allow_interp=True).arch


class Machine:
    def __init__(self, config: MachineConfig | None = None, *, echo_stdout: BinaryIO | None = None,
                 echo_stderr: BinaryIO | None = None, **options: Any) -> None:
        cfg = config or MachineConfig()
        known = {f.name for f in fields(MachineConfig)}
        for k, v in options.items():
            if k not in known:
                raise ConfigError(f"unknown machine option {k!r}", hint="see emukern.config.MachineConfig")
            setattr(cfg, k, v)
        self.config = cfg
        self._echo = (echo_stdout, echo_stderr)
        self.kernel: Kernel | None = None
        self.program: Path | None = None
        self.argv: list[str] = []

    def load(self, path: str | Path, argv: list[str] | None = None, envp: list[str] | None = None) -> "Machine":
        explicit = getattr(self, "explicit_arch", None)
        prog, src_arch = resolve_program(path, explicit or self.config.arch)
        arch = src_arch or elf_arch(prog)
        if explicit and arch and explicit != arch:
            raise ConfigError(f"{path} is a {arch} program but --arch {explicit} was given",
                              hint=f"drop --arch or use --arch {arch}")
        if arch is not None:
            self.config.arch = arch
        self.kernel = Kernel(self.config, echo_stdout=self._echo[0], echo_stderr=self._echo[1])
        self.program = prog
        self.argv = [str(path)] + list(argv or [])
        self.kernel.load(str(prog), self.argv, envp or ["PATH=/bin", "EMUKERN=1"])
        return self

    def run(self) -> RunResult:
        if self.kernel is None:
            raise ConfigError("nothing loaded", hint="call Machine.load(path) first")
        return self.kernel.run()

    # --- inspection ---
    def cpu(self, i: int = 0) -> Any:
        assert self.kernel is not None
        return self.kernel.cpus[i]

    def read(self, addr: int, size: int) -> bytes:
        assert self.kernel is not None and self.kernel.init_task is not None
        return self.kernel.init_task.mm.read(addr, size)

    def symbol(self, name: str) -> int:
        assert self.kernel is not None
        return self.kernel.symbols[name]

    @property
    def trap_log(self) -> list[Any]:
        assert self.kernel is not None
        return list(self.kernel.trap_log)


def run_program(path: str | Path, argv: list[str] | None = None, **options: Any) -> RunResult:
    return Machine(**options).load(path, argv).run()
