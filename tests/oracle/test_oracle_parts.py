"""The oracle's parts without booting anything: the cpio writer, the console protocol, the
kernel profiles and their policies, the comparison, and the CLI's answers to bad input."""
from __future__ import annotations

import stat
import struct
import zlib
from pathlib import Path

import pytest

from emukern.cli import main
from emukern.errors import ConfigError
from emukern.kernel.policies import SWITCHES
from emukern.oracle import OracleError
from emukern.oracle.compare import check_policies, diff_stream, emukern_config, render
from emukern.oracle.console import parse_console
from emukern.oracle.cpio import Cpio
from emukern.oracle.kernels import PROFILES, profile
from emukern.oracle.qemu import cpu_option, sve_vls


def _read_newc(data: bytes) -> list[tuple[str, int, bytes, int]]:
    """An independent reader of the newc format (as init/initramfs.c parses it)."""
    out, off = [], 0
    while True:
        assert data[off:off + 6] == b"070701"
        f = [int(data[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rmaj, rmin, nsize = f[1], f[6], f[9], f[10], f[11]
        name = data[off + 110: off + 110 + nsize - 1].decode()
        off = (off + 110 + nsize + 3) & ~3
        body = data[off: off + size]
        off = (off + size + 3) & ~3
        if name == "TRAILER!!!":
            return out
        out.append((name, mode, body, (rmaj << 8) | rmin))


def test_cpio_newc_round_trip() -> None:
    c = Cpio()
    c.file("emukern/0/prog", b"\x7fELF" + bytes(range(7)), 0o755)
    c.chardev("dev/console", 5, 1)
    c.symlink("bin/sh", "/init")
    ents = {n: (m, b, r) for n, m, b, r in _read_newc(c.to_bytes())}
    assert ents["emukern/0/prog"][1] == b"\x7fELF" + bytes(range(7))
    assert stat.S_IMODE(ents["emukern/0/prog"][0]) == 0o755
    assert stat.S_ISDIR(ents["emukern"][0]) and stat.S_ISDIR(ents["emukern/0"][0])
    assert stat.S_ISCHR(ents["dev/console"][0]) and ents["dev/console"][2] == (5 << 8) | 1
    assert stat.S_ISLNK(ents["bin/sh"][0]) and ents["bin/sh"][1] == b"/init"
    # parents come before children, and the same input gives the same bytes
    names = [n for n, *_ in _read_newc(c.to_bytes())]
    assert names.index("emukern") < names.index("emukern/0") < names.index("emukern/0/prog")
    assert c.to_bytes() == c.to_bytes()


@pytest.mark.parametrize("bad", ["../etc/passwd", "a/../../b", "", "/"])
def test_cpio_refuses_paths_outside(bad: str) -> None:
    with pytest.raises(ConfigError):
        Cpio().file(bad, b"x")


def _line(body: str) -> str:
    return f"@@EMUKERN {body} {zlib.crc32(body.encode()):08x}"


def test_console_separates_guest_output_from_kernel_lines() -> None:
    guest = b"hi\n\x00\xff binary\n"
    raw = "\n".join([
        "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x000f0510]",
        _line("BOOT 6.1.0-50-arm64 aarch64 -"),
        _line("BEGIN 0 -"),
        _line(f"OUT 0 1 {guest[:5].hex()}"),
        "[    1.5] random: crng init done",          # a kernel line between two of ours
        _line(f"OUT 0 1 {guest[5:].hex()}"),
        _line(f"OUT 0 2 {b'oops'.hex()}"),
        _line("EXIT 0 139 -"),
        _line("DONE -"),
        "[    2.0] reboot: Power down",
    ]).encode() + b"\r\n"
    log = parse_console(raw)
    assert log.release == "6.1.0-50-arm64" and log.done
    r = log.runs[0]
    assert (r.stdout, r.stderr, r.exit_status) == (guest, b"oops", 139)
    assert any("crng init done" in k for k in log.kernel_lines)
    assert log.bad_lines == []


def test_console_rejects_a_spliced_or_forged_line() -> None:
    good = _line(f"OUT 0 1 {b'abc'.hex()}")
    spliced = good[:20] + "[ 3.1] kernel says" + good[20:]
    forged = "@@EMUKERN OUT 0 1 6869 00000000"
    log = parse_console("\n".join([_line("BOOT r m -"), spliced, forged, good]).encode())
    assert log.runs[0].stdout == b"abc"
    assert len(log.bad_lines) == 2


def test_console_reads_init_exitcode_from_the_panic() -> None:
    log = parse_console(b"[ 5.0] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000b00\n")
    assert log.init_exitcode == 0xB00 and log.release is None


def test_profiles_name_one_value_per_switch_of_their_arch() -> None:
    for p in PROFILES.values():
        mine = {n for n, s in SWITCHES.items() if s.arch == p.arch}
        assert set(p.policies) == mine, p.name
        for n, v in p.policies.items():
            assert v in SWITCHES[n].values
    # Linux 6.1 predates "arm64: rework EL0 MRS emulation" (6.2); 6.12 has it
    assert PROFILES["debian-12-arm64"].policies["arm64-mrs"] == "hook-list"
    assert PROFILES["debian-13-arm64"].policies["arm64-mrs"] == "direct"


def test_profile_lookup_errors() -> None:
    assert profile(None, "riscv64").name == "debian-13-riscv64"
    with pytest.raises(OracleError, match="unknown kernel"):
        profile("debian-99-arm64", None)
    with pytest.raises(OracleError, match="riscv64 kernel but the program is arm64"):
        profile("debian-13-riscv64", "arm64")


def test_policy_the_real_kernel_lacks_is_refused() -> None:
    p = PROFILES["debian-12-arm64"]
    assert check_policies(p, {"arm64-mrs": "hook-list"}) == p.policies
    with pytest.raises(ConfigError, match="only has arm64-mrs=hook-list.*rework EL0 MRS emulation"):
        check_policies(p, {"arm64-mrs": "direct"})
    with pytest.raises(ConfigError, match="is about riscv64"):
        check_policies(p, {"riscv-discard": "eager"})
    with pytest.raises(ConfigError, match="unknown policy"):
        check_policies(p, {"nope": "x"})


def test_emukern_config_follows_the_qemu_cpu() -> None:
    cfg = emukern_config(PROFILES["debian-13-arm64"], sve_vl=512)
    assert cfg.sve_vl == 512 and cfg.sve_vls == (128, 256, 512) and cfg.idst
    assert cfg.policies == {"arm64-mrs": "direct", "arm64-sve": "legacy"}
    cfg.validate()
    assert cpu_option("arm64", sve_vl=512) == "max,sve512=on"
    assert cpu_option("riscv64", vlen=128) == ("rv64,v=true,vlen=128,vext_spec=v1.0,h=false,Zihintpause=false,"
                                               "zba=false,zbb=false,zbc=false,zbs=false,sstc=false")
    assert sve_vls(384) == (128, 256, 384)
    with pytest.raises(OracleError):
        cpu_option("riscv64", vlen=2048)
    with pytest.raises(OracleError):
        cpu_option("arm64", sve_vl=200)


def test_diff_text_and_binary() -> None:
    d = diff_stream("stdout", b"a\nb\nc\n", b"a\nB\nc\n")
    assert (d.agree, d.total, d.equal) == (2, 3, False)
    assert "-b" in d.diff and "+B" in d.diff
    ours = struct.pack("<2Q", 1, 2)
    rows = render(ours, as_text=False)
    assert rows == ["0x0000: 01 00 00 00 00 00 00 00  0x0000000000000001",
                    "0x0008: 02 00 00 00 00 00 00 00  0x0000000000000002"]
    b = diff_stream("stdout", ours, struct.pack("<2Q", 1, 3))
    assert (b.agree, b.total) == (1, 2)
    assert diff_stream("stderr", b"", b"").equal


def test_cli_refuses_a_policy_before_booting(capsys: pytest.CaptureFixture[str], guest_asm: Path) -> None:
    rc = main(["compare", str(guest_asm / "arm64" / "hello.S"), "--kernel", "debian-12-arm64",
               "--policy", "arm64-mrs=direct"])
    err = capsys.readouterr().err
    assert rc == 2 and "only has arm64-mrs=hook-list" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, needle", [
    (["linux", "guest_asm/riscv/hello.S", "--kernel", "debian-12-arm64"], "arm64 kernel but the program is riscv64"),
    (["linux", "guest_asm/riscv/hello.S", "--kernel", "nope"], "unknown kernel"),
    (["linux", "no/such/prog.S"], "no such program"),
    (["linux", "guest_asm/riscv/hello.S", "--vlen", "2048"], "QEMU's RISC-V vector unit"),
])
def test_cli_bad_input_is_a_clear_error(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    # never reach the network: a kernel that would have to be fetched is "not cached"
    import emukern.oracle.kernels as k
    monkeypatch.setattr(k, "fetch_kernel", _fake_image)
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err, err


def _fake_image(p, refresh=False):  # type: ignore[no-untyped-def]
    from emukern.oracle.kernels import KernelImage
    return KernelImage(p, "linux-image-test", "0", Path("/nonexistent/vmlinuz"), None)


def test_cli_without_qemu_says_what_to_install(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch, guest_asm: Path) -> None:
    import shutil as sh
    import emukern.oracle.kernels as k
    import emukern.oracle.qemu as q
    monkeypatch.setattr(k, "fetch_kernel", _fake_image)
    real_which = sh.which
    monkeypatch.setattr(q.shutil, "which", lambda name: None if name.startswith("qemu-system") else real_which(name))
    if real_which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("aarch64-linux-gnu-gcc not installed (the runner is built before qemu is looked for)")
    rc = main(["linux", str(guest_asm / "arm64" / "hello.S")])
    err = capsys.readouterr().err
    assert rc == 2 and "qemu-system-aarch64 not found" in err and "apt-get install qemu-system-arm" in err


def test_cli_without_the_archive_says_so(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path, guest_asm: Path) -> None:
    """No network / no mirror: the fetch fails with a FetchError, shown as a clear message."""
    from emukern.debian import AptFetcher, FetchError
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path))

    def no_network(self, package):  # type: ignore[no-untyped-def]
        raise FetchError("apt-get update failed: Could not resolve host", hint="is the Debian archive reachable?")
    monkeypatch.setattr(AptFetcher, "depends", no_network)
    rc = main(["linux", str(guest_asm / "riscv" / "hello.S")])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot fetch the debian-13-riscv64 kernel" in err and "reachable" in err


@pytest.mark.parametrize("argv", [
    ["linux", "p.S", "--timeout", "2", "--", "1", "-x"],
    ["linux", "--timeout", "2", "p.S", "--", "1", "-x"],
    ["compare", "p.S", "1", "-x", "--timeout", "2"][:3] + ["--timeout", "2", "--", "-x"],
])
def test_cli_options_around_prog_and_args_after_dashdash(argv: list[str]) -> None:
    from emukern.cli import make_parser
    a = make_parser().parse_args(argv)
    assert a.program == "p.S" and a.timeout == 2 and a.args[-1] == "-x"


def test_kernel_config_check(tmp_path: Path) -> None:
    from emukern.oracle.kernels import KernelImage, check_bootable
    cfg = tmp_path / "config-x"
    cfg.write_text("CONFIG_BLK_DEV_INITRD=y\nCONFIG_DEVTMPFS=y\nCONFIG_PID_NS=y\n"
                   "CONFIG_SERIAL_8250_CONSOLE=y\n# CONFIG_RISCV_ISA_V is not set\n")
    img = KernelImage(PROFILES["debian-13-riscv64"], "linux-image-x", "1", tmp_path / "vmlinux", cfg)
    with pytest.raises(OracleError, match="lacks CONFIG_RISCV_ISA_V"):
        check_bootable(img)
    cfg.write_text(cfg.read_text() + "CONFIG_RISCV_ISA_V=y\n")
    check_bootable(img)


def test_fetch_kernel_uses_the_cache_and_falls_back_when_offline(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import json, os
    import emukern.oracle.kernels as k
    from emukern.debian import AptFetcher, FetchError
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path))
    img = tmp_path / "kernels" / "x" / "vmlinux"
    img.parent.mkdir(parents=True)
    img.write_bytes(b"MZ")
    rec = tmp_path / "kernels" / "debian-13-riscv64.json"
    rec.write_text(json.dumps({"package": "linux-image-x", "version": "1", "image": str(img), "config": None}))
    calls = []

    def offline(self, *a):  # type: ignore[no-untyped-def]
        calls.append(a)
        raise FetchError("no network")
    monkeypatch.setattr(AptFetcher, "update", offline)
    p = PROFILES["debian-13-riscv64"]
    assert k.fetch_kernel(p).image == img and calls == []           # fresh: no archive access
    old = rec.stat().st_mtime - k.MAX_AGE - 10
    os.utime(rec, (old, old))
    assert k.fetch_kernel(p).image == img and len(calls) == 1        # stale: tried, fell back
    with pytest.raises(OracleError, match="cannot fetch"):
        k.fetch_kernel(p, refresh=True)                              # explicit refresh: an error


def _greeting_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "data" / "greeting").write_text("hello from the root\n")
    (root / "data" / "greeting").chmod(0o640)
    return root


def _runner_from_initramfs(entries: list[tuple[str, int, bytes, int]], paths: list[str]) -> bytes:
    """What tests/oracle/guests/readroot.c prints under a kernel whose / is this cpio image."""
    files = {"/" + name: (mode, body) for name, mode, body, _ in entries if stat.S_ISREG(mode)}
    out = []
    for p in paths:
        if p not in files:
            out.append(f"{p}: No such file or directory\n")
            continue
        mode, body = files[p]
        out.append(f"{p}: mode {mode & 0o7777:o} size {len(body)}\n{p}: {body.decode()}")
    return "".join(out).encode()


def test_compare_root_gives_both_sides_the_same_tree(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """emukern reads DIR as its guest root; the real side gets DIR in its initramfs (the boot is
    stubbed: the "real" output is what readroot prints over that initramfs's files)."""
    import importlib.util            # this folder's conftest by path: "conftest" may be another folder's
    spec = importlib.util.spec_from_file_location("oracle_conftest", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    oracle_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle_conftest)
    build_c_guest = oracle_conftest.build_c_guest
    import emukern.oracle.kernels as k
    import emukern.oracle.qemu as q
    from emukern.oracle.console import ConsoleLog, ProgramRun
    from emukern.oracle.initramfs import build_initramfs
    prog = build_c_guest("readroot", "riscv64")
    root = _greeting_root(tmp_path)
    paths = ["/data/greeting", "/data/missing"]
    seen: dict[str, object] = {}

    def fake_boot(img, programs, cpus=1, vlen=256, sve_vl=256, root=None, timeout=None, sysctls=None):  # type: ignore[no-untyped-def]
        seen["root"] = root
        entries = _read_newc(build_initramfs("riscv64", programs, root=root))
        log = ConsoleLog(release="6.12.0-test")
        log.runs[0] = ProgramRun(0, stdout=_runner_from_initramfs(entries, programs[0].args), exit_status=0)
        return q.BootResult(log, 0.0, ["qemu-system-riscv64", "-cpu", "rv64"], 0)

    monkeypatch.setattr(k, "fetch_kernel", _fake_image)
    monkeypatch.setattr(q, "boot", fake_boot)
    rc = main(["compare", str(prog), "--root", str(root), "--kernel", "debian-13-riscv64", "--", *paths])
    report = capsys.readouterr().out
    assert seen["root"] == root
    assert rc == 0, report
    # and emukern really read the file from DIR (not merely agreed on two ENOENTs)
    from emukern.oracle.compare import emukern_config, run_emukern
    cfg = emukern_config(PROFILES["debian-13-riscv64"])
    cfg.root = str(root)
    out, _, status = run_emukern(cfg, prog, paths)
    assert status == 0
    assert out == b"/data/greeting: mode 640 size 20\n/data/greeting: hello from the root\n" \
                  b"/data/missing: No such file or directory\n"


def test_compare_root_must_be_a_directory(capsys: pytest.CaptureFixture[str], guest_asm: Path,
                                          tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for bad in (tmp_path / "file", tmp_path / "absent"):
        rc = main(["compare", str(guest_asm / "riscv" / "hello.S"), "--root", str(bad)])
        err = capsys.readouterr().err
        assert rc == 2 and f"--root {bad} is not a directory" in err and "Traceback" not in err, err


@pytest.mark.parametrize("has_v, isa", [
    # printed by Debian 13's 6.12.117 on qemu-system-riscv64 -cpu rv64,v=true,vlen=128,<RISCV_OFF>
    # (`emukern linux tests/oracle/guests/hwcaps_cpuinfo.c`): riscv_isa_ext[] order, Zihpm included
    (True, "rv64imafdcv_zicntr_zicsr_zifencei_zihpm_zca_zcd_zve32f_zve32x_zve64d_zve64f_zve64x"),
    # --no-v: the same rules without V and the Zve* subsets it implies (not measured on a kernel)
    (False, "rv64imafdc_zicntr_zicsr_zifencei_zihpm_zca_zcd"),
])
def test_riscv_isa_line_is_the_one_linux_prints_for_the_same_cpu(has_v: bool, isa: str) -> None:
    from types import SimpleNamespace
    from emukern.kernel.arch.riscv.hwprobe import riscv_isa_string
    assert riscv_isa_string(SimpleNamespace(config=SimpleNamespace(has_v=has_v))) == isa  # type: ignore[arg-type]
    # and QEMU's CPU is told to drop what emukern's hart lacks, so Linux sees the same ISA
    for ext in ("h", "Zihintpause", "zba", "zbb", "zbc", "zbs", "sstc"):
        assert f",{ext}=false" in cpu_option("riscv64", vlen=256)
