"""File times and the realtime clock (emukern/kernel/fs/meta.py, syscalls/time.py).

tests/kernel/fs/filetimes_probe.c reads CLOCK_REALTIME/MONOTONIC, gettimeofday and time(), stats a
root file whose host times the test set (stat and statx must give them to the nanosecond), /proc,
/dev and a pipe (the boot time), makes and writes files (the guest's clock, not the host's), sets
times with utimensat and sleeps until an absolute CLOCK_REALTIME instant."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.config import DEFAULT_REALTIME, MachineConfig, parse_realtime
from emukern.errors import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cguests import build_cguest  # noqa: E402

PROBE = Path(__file__).with_name("filetimes_probe.c")
OLD_ATIME, OLD_MTIME = 1_600_000_000_111_222_333, 1_700_000_000_444_555_666
JAN_2026 = 1_767_225_600


def _ns(text: str) -> int:
    s, _, frac = text.partition(".")
    return int(s) * 10**9 + int(frac or 0)


def _probe(arch: str, tmp_path: Path, **options) -> dict[str, list[int]]:
    exe = build_cguest(PROBE, arch)
    (tmp_path / "data").mkdir()
    old = tmp_path / "data" / "old.txt"
    old.write_text("x\n")
    os.utime(old, ns=(OLD_ATIME, OLD_MTIME))
    shutil.copy(exe, tmp_path / "probe")
    r = Machine(arch=arch, root=str(tmp_path), root_rw=True, **options).load(tmp_path / "probe", []).run()
    out = r.stdout.decode()
    assert r.exit_code == 0, out
    return {k: [_ns(v) for v in rest.split()] for k, _, rest in (ln.partition(": ") for ln in out.splitlines())}


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_times_default_epoch(arch, tmp_path):
    v = _probe(arch, tmp_path)
    boot = JAN_2026 * 10**9
    rt, mono = v["realtime"][0], v["monotonic"][0]
    assert boot < rt < boot + 10**9 and 0 < mono < 10**9          # realtime = boot instant + monotonic
    assert v["gettimeofday"][0] == v["time"][0] == JAN_2026 * 10**9
    assert v["host"][:2] == [OLD_ATIME, OLD_MTIME]                 # the host's times, ns included
    assert v["statx"] == [OLD_MTIME]
    assert v["proc"] == v["devnull"] == [boot] * 3                 # synthetic: the boot time
    assert v["pipe"] == [boot]
    made = v["new"]
    assert all(v["before_create"][0] <= t < boot + 10**9 for t in made)
    assert v["dir"][1:] == [made[0], made[0]]                      # the create changed the directory
    written = v["written"]
    assert written[0] == OLD_ATIME and written[1] == written[2] > made[2]    # a write: mtime/ctime
    assert v["utimensat"][:2] == [1_000_000_000 * 10**9 + 5, 1_234_567_890_123_456_789]
    assert v["abs_sleep"][0] == 0 and 10**6 <= v["abs_sleep"][1] // 10**9 < 2 * 10**6     # (ns, read as s)


def test_times_settable_epoch(tmp_path):
    v = _probe("arm64", tmp_path, realtime="@1000.5")
    assert 1000_500_000_000 < v["realtime"][0] < 1001_500_000_000
    assert v["proc"] == [1000_500_000_000] * 3
    assert v["host"][:2] == [OLD_ATIME, OLD_MTIME]               # host files keep their own times


@pytest.mark.parametrize("text, secs", [
    ("2026-01-01T00:00:00Z", JAN_2026), ("2026-01-01", JAN_2026), ("2026-01-01T02:00:00+02:00", JAN_2026),
    ("2026-01-01T00:00:00.25Z", JAN_2026 * 10**9 + 25 * 10**7), ("@0", 0), ("@1767225600", JAN_2026), (12, 12)])
def test_parse_realtime(text, secs):
    assert parse_realtime(text) == (secs if secs > 10**12 else secs * 10**9)


@pytest.mark.parametrize("bad", ["yesterday", "@x", "1969-12-31T23:59:59Z", "@-1", None])
def test_parse_realtime_errors(bad):
    with pytest.raises(ConfigError):
        MachineConfig(realtime=bad).validate()


def test_default_and_option():
    from emukern.options import config_from_args, run_parser
    assert MachineConfig().realtime == DEFAULT_REALTIME == "2026-01-01T00:00:00Z"
    a = run_parser().parse_args(["--realtime", "@42", "prog.elf"])
    assert config_from_args(a).realtime_ns() == 42 * 10**9
    a = run_parser().parse_args(["prog.elf"])
    assert config_from_args(a).realtime == DEFAULT_REALTIME
