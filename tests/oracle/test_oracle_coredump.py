"""Core files against the real Debian kernels: coredump_probe.c's child dies of SIGSEGV with
RLIMIT_CORE unlimited, and the parent reports the core the kernel wrote (header, program headers,
every note, the NT_PRSTATUS and NT_SIGINFO fields).  The real kernel runs it in the batch boot of
test_oracle_real_kernels.py; emukern runs it with a writable root (a core needs one there).

Every line must be the same (measured: the note order and sizes, the prstatus and siginfo fields,
the header, mode 0600), except:
* NT_FILE, which Linux 6.12 writes on riscv64 (not on arm64 for this program) and emukern never
  (it keeps no file offset per mapping; kernel/coredump.py);
* NT_AUXV's contents, which are the process's auxv: every type comes, in the kernel's order
  (AT_SYSINFO_EHDR too, since emukern maps the vDSO: kernel/vdso); the values differ."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from test_oracle_real_kernels import KERNELS, _batch

NT_FILE, NT_AUXV = 0x46494C45, 0x6
AUXV_NOT_GIVEN: set[int] = set()      # see the module docstring (33 before the vDSO)


def _auxv_types(lines: list[str]) -> list[int]:
    return [int(x) for x in next(x for x in lines if x.startswith("auxv types")).split()[2:]]


@pytest.mark.linux
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_core_matches_the_real_kernel(real_kernel: Any, kernel: str, tmp_path: Path) -> None:
    arch, progs, by_id = _batch(kernel)
    prog, args, _ = by_id["coredump"]
    real = real_kernel.run_many(progs, kernel=kernel).runs[progs.index((prog, args))]
    assert real.exit_status == 0, real.stdout
    theirs = real.stdout.decode().splitlines()
    assert theirs[0] == "signaled 1 sig 11 core 1", theirs        # the oracle did write a core
    from emukern.api import Machine
    from emukern.oracle.compare import emukern_config
    from emukern.oracle.kernels import PROFILES
    cfg = emukern_config(PROFILES[kernel])
    cfg.root, cfg.root_rw = str(tmp_path), True
    m = Machine(cfg)
    m.explicit_arch = arch
    r = m.load(prog, list(args)).run()
    assert r.exit_status == 0, r.stdout
    ours = r.stdout.decode().splitlines()
    why = "\n".join(theirs) + "\n--- emukern:\n" + "\n".join(ours)
    real_auxv, our_auxv = _auxv_types(theirs), _auxv_types(ours)
    missing = [t for t in real_auxv if t not in our_auxv]
    assert set(missing) == AUXV_NOT_GIVEN and [t for t in real_auxv if t in our_auxv] == our_auxv, why
    auxv_note = f"note CORE {NT_AUXV:#x} "
    real_size = int(next(x for x in theirs if x.startswith(auxv_note)).split()[3])
    assert f"{auxv_note}{real_size - 16 * len(missing)}" in ours, why      # 16 bytes a pair
    same = [x for x in theirs if not x.startswith(("auxv types", auxv_note, f"note CORE {NT_FILE:#x} "))]
    assert same == [x for x in ours if not x.startswith(("auxv types", auxv_note))], why
