"""Random file-system syscalls (fixed seed) straight into the kernel's dispatch: no Python
exception may escape (every outcome is a return value), and with a writable root nothing outside
the root directory changes."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.kernel.fs import FS_SYSCALL_NAMES
from emukern.pytest_plugin import GUEST_ASM
from emukern.kernel.syscalls import table as syscalls_table

NRS = sorted(set(FS_SYSCALL_NAMES) | {23, 24, 25, 56, 57, 62, 63, 64, 65, 66, 78, 79, 80, 215, 222, 226})
PATHS = [b"/data/hello.txt", b"/proc/self/maps", b"/dev/zero", b"/dev/urandom", b"/", b"..", b"/data/up/x",
         b"/proc/self/fd/0", b"/sys/devices/system/cpu/online", b"/proc/sys", b"/data/fifo", b"x" * 5000,
         b"/proc/1/root/../../etc", b"", b"/data/new", b"/data/sub/../sub/n", b"../../../../tmp"]


def snapshot(d: Path) -> list[str]:
    return sorted(str(p) for p in d.rglob("*"))


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
@pytest.mark.parametrize("rw", [False, True])
def test_random_fs_syscalls(tmp_path, arch, rw):
    root = tmp_path / "root"
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "hello.txt").write_text("hello\n")
    os.mkfifo(root / "data" / "fifo")
    os.symlink("../../../..", root / "data" / "up")
    (tmp_path / "outside").write_text("host file\n")
    before_outside = snapshot(tmp_path)
    m = Machine(root=str(root), root_rw=rw).load(GUEST_ASM / ("riscv" if arch == "riscv64" else arch) / "hello.S")
    k = m.kernel
    task, cpu = k.init_task, k.cpus[0]
    k.percpu[0].curr = task
    cpu.attach_mm(task.mm)
    base = task.mm.find_free(1 << 16)
    rnd = random.Random(13)
    escaped = 0
    for i in range(3000):
        if task.mm.find(base) is None or "w" not in task.mm.find(base).perms:
            task.mm.unmap(base, 1 << 16)
            task.mm.map(base, 1 << 16, "rw-", "[anon]")
        task.mm.write(base, rnd.choice(PATHS) + b"\0")

        def arg() -> int:
            c = rnd.random()
            if c < 0.35:
                return base
            if c < 0.45:
                return base + rnd.randrange(1 << 16)
            if c < 0.65:
                return rnd.randrange(64)
            if c < 0.75:
                return (1 << 64) - rnd.randrange(1, 200)
            if c < 0.9:
                return rnd.choice([0, 1, 2, 0x100, 0x200, 0x1000, 0o100, 0o1000, 0o2000000, (1 << 64) - 100])
            return rnd.getrandbits(64)
        nr = rnd.choice(NRS)
        try:
            name, ret = syscalls_table._call_syscall(k, cpu, task, nr, tuple(arg() for _ in range(6)))
        except Exception as e:                      # noqa: BLE001 - the point of the test
            pytest.fail(f"syscall {nr} raised {type(e).__name__}: {e}")
        assert isinstance(ret, int), (nr, ret)
        for fd in [fd for fd in task.files.fds if fd > 40]:
            task.files.close(fd)
    after = snapshot(tmp_path)
    outside = [p for p in after if not p.startswith(str(root))]
    assert outside == [p for p in before_outside if not p.startswith(str(root))]
    assert (tmp_path / "outside").read_text() == "host file\n"
    if not rw:
        assert after == before_outside                # a read-only root stays as it was
    else:
        assert len(after) > len(before_outside)       # the fuzz did create things, inside the root
