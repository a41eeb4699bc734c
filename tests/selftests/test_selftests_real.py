"""`emukern selftests --real`: how a selftest is put in the initramfs and judged, the per-test cache,
the recorded table and the target check — without booting (qemu's boot is replaced by a stub that
answers through the runner's console protocol; tests/oracle/test_oracle_selftests.py boots)."""
from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from emukern.oracle.console import ProgramRun, parse_console
from emukern.oracle.initramfs import Program
from emukern.selftests import real
from emukern.selftests.build import Built
from emukern.selftests.catalog import BY_ID
from emukern.selftests.runner import Outcome


def _line(body: str) -> str:
    return f"@@EMUKERN {body} {zlib.crc32(body.encode()):08x}\n"


def test_program_options_mirror_the_kselftest_runner(tmp_path: Path) -> None:
    elf = tmp_path / "sve-test"
    elf.write_bytes(b"\x7fELF")
    prog, files = real.program_for(BY_ID["arm64/fp/sve-test"], Built(BY_ID["arm64/fp/sve-test"], elf), 45)
    assert prog.argv0(3) == "./sve-test" and prog.cwd == "/selftests/arm64/fp"
    assert prog.timeout == 45 and prog.stop == (15, real.REAL_STRESS_SECONDS) and not prog.own_pid_ns
    assert prog.opts() == f"cwd /selftests/arm64/fp\nnopidns\nstop 15 {real.REAL_STRESS_SECONDS}\n"
    assert files == {"/selftests/arm64/fp/sve-test": elf}
    # vlset needs ./rdvl-sve beside it; riscv mm/mmap_bottomup runs with the stack unlimited
    (tmp_path / "vlset").write_bytes(b"v")
    (tmp_path / "rdvl-sve").write_bytes(b"r")
    t = BY_ID["arm64/fp/vlset"]
    prog, files = real.program_for(t, Built(t, tmp_path / "vlset"), 120)
    assert sorted(files) == ["/selftests/arm64/fp/rdvl-sve", "/selftests/arm64/fp/vlset"]
    assert prog.args == ["--inherit", "256", "./rdvl-sve"] and prog.stop is None
    t = BY_ID["riscv64/mm/mmap_bottomup"]
    prog, _ = real.program_for(t, Built(t, tmp_path / "vlset"), 120)
    assert "stack unlimited\n" in prog.opts()


def read_newc(data: bytes) -> list[tuple[str, int, bytes, int]]:
    """The newc entries (name, mode, body, 0), read independently of emukern's writer."""
    out, off = [], 0
    while True:
        assert data[off:off + 6] == b"070701"
        f = [int(data[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        mode, size, nsize = f[1], f[6], f[11]
        name = data[off + 110: off + 110 + nsize - 1].decode()
        off = (off + 110 + nsize + 3) & ~3
        body = data[off: off + size]
        off = (off + size + 3) & ~3
        if name == "TRAILER!!!":
            return out
        out.append((name, mode, body, 0))


def test_initramfs_holds_the_tree_and_the_opts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import emukern.oracle.initramfs as ini
    runner = tmp_path / "runner"
    runner.write_bytes(b"RUNNER")
    monkeypatch.setattr(ini, "build_runner", lambda arch: runner)
    elf = tmp_path / "sve-test"
    elf.write_bytes(b"ELF!")
    p = Program(elf, [], timeout=9, exe="./sve-test", cwd="/selftests/arm64/fp", own_pid_ns=False, stop=(15, 2))
    entries = {n: body for n, _, body, _ in read_newc(ini.build_initramfs("arm64", [p], files={
        "/selftests/arm64/fp/sve-test": elf}))}
    assert entries["selftests/arm64/fp/sve-test"] == b"ELF!"
    assert "emukern/0/sve-test" not in entries          # run from the tree, not copied
    assert entries["emukern/0/argv"] == b"./sve-test\0"
    assert entries["emukern/0/opts"] == b"cwd /selftests/arm64/fp\nnopidns\nstop 15 2\n"
    # a plain program (emukern linux / compare) gets no opts file and its own copy, as before
    entries = {n for n, *_ in read_newc(ini.build_initramfs("arm64", [Program(elf)]))}
    assert "emukern/0/sve-test" in entries and "emukern/0/opts" not in entries


def test_console_reads_stop_and_killed() -> None:
    log = parse_console((_line("BOOT 6.12.0 aarch64 -") + _line("BEGIN 0 -") + _line("STOP 0 15 -")
                         + _line("KILLED 0 15 -") + _line("EXIT 0 143 -") + _line("DONE -")).encode())
    r = log.runs[0]
    assert (r.stopped, r.signal, r.exit_status) == (15, 15, 143)


def _run(out: str = "", status: int = 0, signal: int = 0, stopped: int = 0, timed_out: bool = False) -> ProgramRun:
    return ProgramRun(0, out.encode(), b"", status, timed_out, [], signal, stopped)


TAP_OK = "TAP version 13\n1..2\nok 1 a\nok 2 b\n# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0\n"


@pytest.mark.parametrize("tid, run, verdict, counts, cause", [
    ("arm64/abi/syscall-abi", _run(TAP_OK), "pass", "2/0/0", ""),
    ("arm64/abi/syscall-abi", _run(TAP_OK.replace("ok 2", "not ok 2").replace("pass:2 fail:0", "pass:1 fail:1"), 1),
     "fail", "1/1/0", "b"),
    ("arm64/abi/tpidr2", _run("1..1\nok 1 x # SKIP no SME\n", 4), "skip", "0/0/1", ""),
    ("arm64/signal/sve_regs", _run("", 128 + 11, signal=11), "fail", "", "fatal SIGSEGV"),
    ("arm64/fp/sve-test", _run("Terminated by signal 15, no error, iterations=9\n", 0, stopped=15), "pass", "", ""),
    ("arm64/fp/sve-test", _run("", 128 + 15, signal=15, stopped=15), "fail", "",
     "killed by the SIGTERM that should end it"),
    ("arm64/fp/sve-test", _run("Bad vector\n", 1), "fail", "", "ended before the SIGTERM that stops it: exit 1"),
    ("arm64/fp/vlset", _run("", 0, timed_out=True), "timeout", "", "still running at the per-test time limit"),
    ("riscv64/vector/vstate_exec_nolibc", _run("", 2), "pass", "", ""),
])
def test_real_verdicts_follow_emukern_s_rules(tid: str, run: ProgramRun, verdict: str, counts: str,
                                              cause: str) -> None:
    o = real.verdict_of(BY_ID[tid], 256, run)
    assert (o.verdict, o.counts) == (verdict, counts)
    assert o.cause.startswith(cause) if cause else o.cause == ""


def _fake_boot(calls: list[Any], answers: dict[str, str]) -> Any:
    from emukern.oracle.qemu import BootResult

    def boot(img: Any, programs: list[Program], vlen: int = 256, sve_vl: int = 256, files: Any = None,
             **kw: Any) -> BootResult:
        calls.append((sve_vl, [p.exe for p in programs], sorted(files or {})))
        text = _line("BOOT 6.12.99-test aarch64 -")
        for n, p in enumerate(programs):
            text += _line(f"BEGIN {n} -") + _line(f"OUT {n} 1 {answers[p.exe].encode().hex()}")
            if p.stop:
                text += _line(f"STOP {n} {p.stop[0]} -")
            text += _line(f"EXIT {n} 0 -")
        return BootResult(parse_console((text + _line("DONE -")).encode()), 1.5, ["qemu"], 0)
    return boot


@pytest.fixture
def fake_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    import emukern.oracle.kernels as kernels
    import emukern.oracle.qemu as qemu
    from emukern.oracle.session import RealKernel
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(RealKernel, "unavailable", lambda self, p: None)
    monkeypatch.setattr(kernels, "fetch_kernel", lambda p, refresh=False: kernels.KernelImage(
        p, "linux-image-test", "6.12.99-1", tmp_path / "vmlinuz", None))
    calls: list[Any] = []
    monkeypatch.setattr(qemu, "boot", _fake_boot(calls, {
        "./syscall-abi": TAP_OK, "./sve-test": "Terminated by signal 15, no error, iterations=1\n"}))
    return calls


def _built(tmp_path: Path, name: str, data: bytes = b"ELF") -> tuple[Any, Built]:
    t = BY_ID[f"arm64/{'abi' if name == 'syscall-abi' else 'fp'}/{name}"]
    p = tmp_path / "bin" / name
    p.parent.mkdir(exist_ok=True)
    p.write_bytes(data)
    return t, Built(t, p)


def test_run_real_boots_once_then_answers_from_the_cache(tmp_path: Path, fake_kernel: list[Any]) -> None:
    tests = [_built(tmp_path, "syscall-abi"), _built(tmp_path, "sve-test")]
    not_built = BY_ID["arm64/fp/vec-syscfg"]
    tests.append((not_built, Built(not_built, None, "no compiler")))
    r = real.run_real("debian-13-arm64", tests, 512, 60)
    assert r.boots == 1 and len(fake_kernel) == 1
    sve_vl, exes, files = fake_kernel[0]
    assert sve_vl == 512 and exes == ["./syscall-abi", "./sve-test"]
    assert files == ["/selftests/arm64/abi/syscall-abi", "/selftests/arm64/fp/sve-test"]
    assert (r.release, r.cpu, r.package) == ("6.12.99-test", "max,sve512=on", "linux-image-test")
    assert {k: o.verdict for k, o in r.outcomes.items()} == {
        "arm64/abi/syscall-abi": "pass", "arm64/fp/sve-test": "pass", "arm64/fp/vec-syscfg": "not built"}
    again = real.run_real("debian-13-arm64", tests, 512, 60)
    assert again.boots == 0 and len(fake_kernel) == 1 and again.date == r.date
    assert {k: o.verdict for k, o in again.outcomes.items()} == {k: o.verdict for k, o in r.outcomes.items()}
    # another binary, another VL or another time limit is another question: only it boots again
    tests[1] = _built(tmp_path, "sve-test", b"ELF2")
    real.run_real("debian-13-arm64", tests, 512, 60)
    assert fake_kernel[-1][1] == ["./sve-test"]
    real.run_real("debian-13-arm64", tests, 256, 60)
    assert fake_kernel[-1][0] == 256 and len(fake_kernel[-1][1]) == 2


def test_recorded_table_and_the_target_check(tmp_path: Path, fake_kernel: list[Any]) -> None:
    r = real.run_real("debian-13-arm64", [_built(tmp_path, "syscall-abi"), _built(tmp_path, "sve-test")], 256, 60)
    table = real.RealTable({"kernels": {}})
    table.record(r, "emukern selftests --real debian-13-arm64 --vl 256")
    path = tmp_path / "real.json"
    table.save(path)
    again = real.RealTable.load(path)
    rec = again.kernel("debian-13-arm64")
    assert rec is not None and rec["release"] == "6.12.99-test" and rec["date"] == r.date
    assert rec["vls"]["256"]["cpu"] == "max,sve256=on"
    assert rec["vls"]["256"]["command"] == "emukern selftests --real debian-13-arm64 --vl 256"
    assert again.lookup("debian-13-arm64", 256, "arm64/abi/syscall-abi")["verdict"] == "pass"
    assert again.lookup("debian-13-arm64", 512, "arm64/abi/syscall-abi") is None
    # a later run of one test (--only) replaces its verdict and keeps the others', naming both commands
    r2 = real.run_real("debian-13-arm64", [_built(tmp_path, "sve-test", b"ELF2")], 256, 60)
    r2.outcomes["arm64/fp/sve-test"].verdict = "fail"
    again.record(r2, "emukern selftests --real debian-13-arm64 --vl 256 --only sve-test")
    rec = again.kernel("debian-13-arm64")
    assert set(rec["vls"]["256"]["tests"]) == {"arm64/abi/syscall-abi", "arm64/fp/sve-test"}
    assert again.lookup("debian-13-arm64", 256, "arm64/fp/sve-test")["verdict"] == "fail"
    assert again.lookup("debian-13-arm64", 256, "arm64/abi/syscall-abi")["verdict"] == "pass"
    assert rec["vls"]["256"]["command"] == ("emukern selftests --real debian-13-arm64 --vl 256; "
                                             "emukern selftests --real debian-13-arm64 --vl 256 --only sve-test")
    ok, bad, other = (Outcome("arm64/abi/syscall-abi", "vl=256", v) for v in ("pass", "fail", "skip"))
    real.mark(ok, {"verdict": "pass"})
    real.mark(bad, {"verdict": "pass"})
    real.mark(other, {"verdict": "fail"})
    assert (ok.real_regression, bad.real_regression, other.real_regression) == (False, True, False)
    assert other.real == "fail"
    # beside a real kernel, the real verdict is the reference: a skip the default matrix does not
    # expect, but the real kernel gives too, is no surprise; a different verdict still is
    same, differs = (Outcome("arm64/signal/x", "vl=128", "skip") for _ in range(2))
    for o in (same, differs):
        o.expected, o.unexpected = "pass", True
    real.mark(same, {"verdict": "skip"})
    real.mark(differs, {"verdict": "pass"})
    assert (same.unexpected, differs.unexpected) == (False, True)
    assert "as on the real kernel" in same.expect_reason


def test_recorded_table_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    from emukern.errors import ConfigError
    p = tmp_path / "real.json"
    p.write_text("{not json")
    with pytest.raises(ConfigError, match="--record"):
        real.RealTable.load(p)
    assert real.RealTable.load(tmp_path / "missing.json").kernel("debian-13-arm64") is None


@pytest.mark.parametrize("argv, needle", [
    (["--record"], "--record writes the verdicts of a real kernel"),
    (["--real", "debian-11-arm64"], "not a real kernel emukern can boot"),
    (["--real", "debian-13-arm64", "--kernel", "debian-12-arm64"], "drop --kernel"),
    (["--kernel", "debian-13-arm64", "--arch", "riscv64"], "is an arm64 kernel"),
    (["--kernel", "nonsense"], "unknown kernel profile"),
    (["--real", "debian-13-arm64", "--policy", "arm64-sve=p1+p2"], "only has arm64-sve=legacy"),
])
def test_selftests_kernel_options_bad_input(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    from emukern.cli import main
    rc = main(["selftests", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err, err


def test_the_shipped_record_names_its_kernels() -> None:
    """real_kernel.json is data a command wrote: every kernel in it says what it booted and when."""
    doc = json.loads(real.REAL_FILE.read_text())
    assert doc["kernels"], "no kernel recorded"
    for name, k in doc["kernels"].items():
        assert k["release"] and k["package"].startswith("linux-image-") and k["date"]
        for vl, rec in k["vls"].items():
            assert rec["tests"] and rec["cpu"] and int(vl) in (128, 256, 512)
            # the whole suite's command first, then any --only run that added tests since
            cmds = rec["command"].split("; ")
            assert cmds[0] == f"emukern selftests --real {name} --vl {vl} --record" and rec["date"]
            assert all(c.startswith(cmds[0] + " --only ") for c in cmds[1:])
            assert all(t["verdict"] in ("pass", "fail", "skip", "timeout", "not built") for t in rec["tests"].values())
