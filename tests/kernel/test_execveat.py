"""execveat (281) with tests/kernel/data/execveat_probe.c, in a writable root holding the probe
as /probe (it is its own script interpreter, #!/probe, so the name binfmt_script passes on is
visible): dirfd-relative, AT_FDCWD and absolute paths, AT_EMPTY_PATH with a regular, O_PATH,
O_CLOEXEC and unlinked file's descriptor, the errors (ELOOP under AT_SYMLINK_NOFOLLOW, EINVAL,
ENOENT, EFAULT, EBADF, ENOTDIR, EACCES), the /dev/fd/N[/path] name (AT_EXECFN and a script's
argv) and ENOENT for a script behind a close-on-exec descriptor.

The expected output is the same probe built for the host and run in a chroot under Linux 6.18
(the host's descriptor numbers from 10 on were one higher there: its shell left fd 10 open).
Under a 6.12 kernel (--kernel debian-13-*) the comm of a program run from a bare descriptor is
the descriptor's number, as Linux before 6.14 named it after /dev/fd/N."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from emukern.api import Machine

DATA = Path(__file__).parent / "data"


def _run(cguest, tmp_path: Path, arch: str, kernel: str | None = None) -> str:
    shutil.copy2(cguest(DATA / "execveat_probe.c", arch), tmp_path / "probe")
    kw = {"kernel": kernel} if kernel else {}
    r = Machine(arch=arch, root=str(tmp_path), root_rw=True, **kw).load(tmp_path / "probe", []).run()
    assert r.exit_status == 0, r.message
    return r.stdout.decode()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_execveat_matches_linux(cguest, tmp_path, arch):
    assert _run(cguest, tmp_path, arch) == (DATA / "execveat_probe.expected").read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_execveat_comm_before_6_14(cguest, tmp_path, arch):
    want = (DATA / "execveat_probe.expected").read_text()
    for fd, name in (("6", "probe"), ("8", "probe"), ("7", "probe"), ("11", "copy"), ("9", "probe")):
        want = want.replace(f"execfn '/dev/fd/{fd}' comm '{name}'", f"execfn '/dev/fd/{fd}' comm '{fd}'")
    assert _run(cguest, tmp_path, arch, kernel=f"debian-13-{arch}") == want
