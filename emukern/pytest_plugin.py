"""pytest fixtures for emukern (registered through the ``pytest11`` entry point).

Installing emukern makes them available to every test suite, nothing to import::

    def test_getpid(run_guest):
        r, m = run_guest('''
            .globl _start
            _start: li a7, 172
                    ecall
                    li a7, 93
                    ecall''', arch="riscv64")
        assert r.exit_status == 1          # getpid() of init is 1, passed to exit

After the run, ``m`` looks inside: ``m.trap_log`` (the traps, as ``TrapRecord``), ``m.read(addr,
n)`` (guest memory), ``m.cpu(0)`` (registers; the vector state with ``vreg(n)``, ``vl``,
``vtype``, ``vstart``, ``vlenb`` on riscv64 and ``sve_z(n)``, ``sve_p(n)``, ``sve_ffr()``,
``sve_vl`` on arm64).  A guest whose vector registers a test reads spins when it is done
(``1: j 1b``) and the test gives ``max_insns=10_000``: the run stops on that budget with the
registers live (an exit syscall lets the kernel discard vector state, as Linux does)::

    def test_vid(run_guest):
        r, m = run_guest('''
            .globl _start
            _start: vsetvli t0, zero, e8, m1, ta, ma
                    vid.v v1
            1:      j 1b''', arch="riscv64", vlen=128, max_insns=10_000)
        assert m.cpu(0).vreg(1) == bytes(range(16))

The guide's "pytest and the Python API" page has more examples, all run by emukern's own tests.

Fixtures (``pytest --fixtures`` shows them too):

* ``machine_factory(**options) -> Machine``: an unloaded machine (options: MachineConfig fields)
* ``run_guest(src, arch=None, argv=(), **options) -> (RunResult, Machine)``: ``src`` is a path
  (.S or ELF) or assembly text (written to a temporary .S)
* ``guest_asm``: the example guests' directory (Path; the packaged copy outside a checkout)
* ``real_kernel`` (session): runs guests under a real Debian kernel in qemu-system and compares
  them with emukern: ``real_kernel.compare(prog, kernel="debian-13-riscv64").agree``; skips the
  test when qemu-system, the cross compiler or the kernel package cannot be had.  Mark such tests
  ``@pytest.mark.linux`` (emukern.oracle.session has the details).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from emukern.api import Machine
from emukern.kernel.result import RunResult

from emukern.resources import guest_asm_dir

GUEST_ASM = guest_asm_dir()


@pytest.fixture
def guest_asm() -> Path:
    """The example guests' directory (``guest_asm/``: riscv/, arm64/, c/, include/) as a Path.

    The repository's folder in a source checkout, the copy packaged in the wheel otherwise, e.g.
    ``run_guest(guest_asm / "riscv" / "hello.S")``.
    """
    return GUEST_ASM


@pytest.fixture
def machine_factory() -> Callable[..., Machine]:
    """A function ``make(**options) -> Machine`` that builds an unloaded machine.

    ``options`` are :class:`emukern.config.MachineConfig` fields (``arch``, ``cpus``, ``vlen``,
    ``sve_vl``, ``policies``, ``sysctls`` ...); load and run it yourself::

        m = machine_factory(arch="arm64", sve_vl=512).load(path); r = m.run()
    """
    def make(**options: Any) -> Machine:
        return Machine(**options)
    return make


@pytest.fixture
def run_guest(tmp_path: Path) -> Callable[..., tuple[RunResult, Machine]]:
    """A function ``run(src, arch=None, argv=(), **options) -> (RunResult, Machine)``.

    ``src`` is a path (a .S source or a static ELF) or assembly text, which is written to a .S
    under ``tmp_path`` (give ``arch`` for text).  ``argv`` is the guest's ``argv[1:]``;
    ``options`` are :class:`emukern.config.MachineConfig` fields.  Returns the run's result
    (exit status, stdout, counts, traps) and the machine, to look inside afterwards.
    """
    counter = [0]

    def run(src: str | Path, arch: str | None = None, argv: tuple[str, ...] | list[str] = (),
            **options: Any) -> tuple[RunResult, Machine]:
        path = Path(src) if isinstance(src, Path) or (isinstance(src, str) and "\n" not in src
                                                        and Path(src).exists()) else None
        if path is None:
            counter[0] += 1
            path = tmp_path / f"guest{counter[0]}.S"
            text = str(src)
            if arch:
                text = f"# arch: {arch}\n" + text
            path.write_text(text + "\n")
        m = Machine(**options)
        if arch:
            m.explicit_arch = arch
        m.load(path, list(argv))
        return m.run(), m
    return run


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "linux: compares emukern with a real Linux kernel booted under "
                            "qemu-system (the real_kernel fixture; skips without qemu-system)")


@pytest.fixture(scope="session")
def real_kernel() -> Any:
    """A real Debian kernel booted under qemu-system, to check emukern against (session scope).

    ``real_kernel.compare(prog, kernel="debian-13-riscv64")`` runs ``prog`` under emukern with
    that kernel's policies and under the real kernel, and tells whether they agree
    (``.agree``, with a per-line diff); ``.run``/``.run_many`` give the real kernel's answers.
    Skips the test when qemu-system, the cross compiler or the kernel package cannot be had.
    Mark such tests ``@pytest.mark.linux``."""
    from emukern.oracle.session import RealKernel, Unavailable

    class _Skipping(RealKernel):
        def run_many(self, *a: Any, **kw: Any) -> Any:
            try:
                return super().run_many(*a, **kw)
            except Unavailable as exc:
                pytest.skip(f"real kernel unavailable: {exc.message}")
    return _Skipping()
