"""A built wheel works from outside the source tree: the examples (guest_asm/ and its include
files) are packaged, `emukern run` finds a packaged example by its repository path,
`emukern reproduce --quick --only kernel_core` writes its results, `emukern --version` answers,
and a pytest file using the plugin's fixtures (guest_asm included) passes.

The wheel is built with --no-build-isolation and installed with --no-deps into a fresh venv made
without pip; the already-installed dependencies (unicorn, capstone, pytest ...) are made visible
through a .pth line naming this interpreter's site-packages, so the test needs no network.  Only
the emukern code comes from the wheel: the test checks that `emukern.__file__` is the fresh
venv's, and nothing from the repository is on the path (PYTHONPATH removed, cwd outside).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("ld.lld") is None and shutil.which("ld.lld-14") is None,
                                 reason="needs LLVM (llvm-mc, ld.lld) to assemble guests")]

PLUGIN_TEST = '''
from pathlib import Path

import emukern


def test_fixture_paths_exist(guest_asm):
    assert (guest_asm / "include" / "syscalls.inc").is_file()
    assert (guest_asm / "riscv" / "hello.S").is_file()
    assert "site-packages" in emukern.__file__


def test_run_packaged_example(run_guest, guest_asm):
    r, m = run_guest(guest_asm / "arm64" / "hello.S")
    assert r.exit_status == 0 and b"Hello" in r.stdout


def test_run_inline(run_guest):
    r, _ = run_guest("""
        .globl _start
        _start: li a0, 7
                li a7, 93
                ecall""", arch="riscv64")
    assert r.exit_status == 7
'''


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    env = _clean_env()
    base = tmp_path_factory.mktemp("wheel")
    build_dir = base / "src"
    # build from a copy so the checkout gets no build/ or egg-info (and parallel builds don't race)
    shutil.copytree(REPO, build_dir, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "reproduce-out", "tests", "out"))
    wheels = base / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "--disable-pip-version-check", "-q", "-w", str(wheels), str(build_dir)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = wheels.glob("emukern-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    vpy = venv / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "--no-deps", "-q",
                        "--disable-pip-version-check", str(whl)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    site = Path(subprocess.run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_emukern_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = base / "elsewhere"
    work.mkdir()
    return {"venv": venv, "py": vpy, "bin": venv / "bin", "work": work, "whl": whl}


def _clean_env() -> dict[str, str]:
    """The environment without anything that would put the checkout's emukern on the path."""
    return {k: val for k, val in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _run(v: dict[str, Path], *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = _clean_env()
    env["PATH"] = f"{v['bin']}{os.pathsep}{env.get('PATH', '')}"
    if argv[0] == "emukern":
        argv = (str(v["bin"] / "emukern"),) + argv[1:]      # the wheel's console script
    return subprocess.run(list(argv), cwd=v["work"], env=env, capture_output=True, text=True, timeout=timeout)


def test_wheel_carries_the_examples(wheel_venv):
    import zipfile
    names = zipfile.ZipFile(wheel_venv["whl"]).namelist()
    src = sorted(p.relative_to(REPO / "guest_asm").as_posix() for p in (REPO / "guest_asm").rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts)
    packaged = sorted(n[len("emukern/_guest_asm/"):] for n in names if n.startswith("emukern/_guest_asm/"))
    assert packaged == src
    assert "emukern/machine/native/counter.c" in names


def test_version_and_import_from_the_wheel(wheel_venv):
    r = _run(wheel_venv, "emukern", "--version")
    assert r.returncode == 0 and r.stdout.strip().startswith("emukern ")
    r = _run(wheel_venv, str(wheel_venv["py"]), "-c", "import emukern; print(emukern.__version__, emukern.__file__)")
    version, where = r.stdout.split()
    assert r_version_line(wheel_venv) == f"emukern {version}"
    assert where.startswith(str(wheel_venv["venv"])), r.stdout + r.stderr


def r_version_line(v: dict[str, Path]) -> str:
    return _run(v, "emukern", "--version").stdout.strip()


def test_run_packaged_example_by_repository_path(wheel_venv):
    r = _run(wheel_venv, "emukern", "run", "guest_asm/riscv/hello.S", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Hello from RISC-V user mode!\n"


def test_reproduce_quick_one_experiment(wheel_venv):
    out = wheel_venv["work"] / "rep"
    r = _run(wheel_venv, "emukern", "reproduce", "--quick", "--only", "kernel_core", "--out", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    results = json.loads((out / "quick" / "results.json").read_text())   # quick runs live in OUT/quick
    assert "kernel_core" in json.dumps(results)


def test_pytest_plugin_outside_the_tree(wheel_venv):
    f = wheel_venv["work"] / "test_with_emukern.py"
    f.write_text(PLUGIN_TEST)
    r = _run(wheel_venv, str(wheel_venv["py"]), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
             str(f))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "3 passed" in r.stdout
