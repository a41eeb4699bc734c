"""Real RISC-V programs that use V, for the policy study (emukern.bench.policy_study).

Debian's riscv64 userland barely touches the vector unit (glibc reads vlenb and little else), so
a study of the vector-state policies on Debian binaries would measure nothing.  These programs
are built here instead, by a compiler that auto-vectorises for RVV: LLVM through the ``ziglang``
wheel (``python -m ziglang cc``, a self-contained clang with musl for riscv64), at
``-mcpu=baseline_rv64+v``.  GCC 12, the Debian host's, does not vectorise for RVV.

* ``minigzip`` -- zlib's own test program (zlib from Debian trixie's source package, fetched with
  a private apt configuration), compressing and decompressing a text on stdin: slide_hash,
  crc32_z and inflate_fast come out vectorised, and musl's string routines too;
* ``bzip2`` -- bzip2 1.0.8 (Debian trixie's source package), compressing and decompressing the
  same text: LLVM vectorises its block sort, Huffman and MTF loops;
* ``vpipe`` -- a memcpy/strlen-heavy pair of processes: the parent fills, copies and measures
  buffers and writes them into a pipe, the child reads, copies and checks them, so vector use and
  syscalls interleave on two CPUs (the case the discard policies are about).

Builds are cached under ~/.cache/emukern/rvv-programs, keyed by the compiler, flags and sources;
:func:`vector_instructions` counts the vector configuration instructions in a binary
(``llvm-objdump --mattr=+v``), the static check that the compiler really vectorised.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from emukern.bench.stats import Unavailable

TARGET = "riscv64-linux-musl"
MCPU = "baseline_rv64+v"
MCPU_SCALAR = "baseline_rv64"
BUILD_VERSION = "4"          # bump when the build recipe changes (a new cache key)
FETCH = True                 # False: use only what is cached (the tests)
ZLIB_FILES = ("adler32.c", "crc32.c", "deflate.c", "infback.c", "inffast.c", "inflate.c", "inftrees.c",
              "trees.c", "zutil.c", "compress.c", "uncompr.c", "gzclose.c", "gzlib.c", "gzread.c",
              "gzwrite.c", "test/minigzip.c")
BZIP2_FILES = ("blocksort.c", "huffman.c", "crctable.c", "randtable.c", "compress.c", "decompress.c",
               "bzlib.c", "bzip2.c")

# the memcpy/strlen workload: two processes and a pipe (argv[1]: rounds)
VPIPE_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

/* The copies and the length scans are loops of our own (built with -fno-builtin): the
   compiler vectorises them, where musl's memcpy/strlen, built for rv64gc, would be scalar. */
#define CHUNK 4096
#define WORDS (CHUNK / 8)
static uint64_t a[WORDS], b[WORDS], c[WORDS];

static void copy(uint64_t *restrict d, const uint64_t *restrict s)
{
	for (int i = 0; i < WORDS; i++)
		d[i] = s[i];
}

static void fill(uint64_t *p, uint64_t seed)
{
	for (int i = 0; i < WORDS; i++)
		p[i] = (seed ^ ((uint64_t)i << 29) ^ (uint64_t)i) | 0x0101010101010101u;
}

/* strlen by words: the number of words without a zero byte, then a checksum */
static uint64_t scan(const uint64_t *p, uint64_t *sum)
{
	uint64_t n = 0, x = 0;
	for (int i = 0; i < WORDS; i++) {
		uint64_t v = p[i];
		n += ((v - 0x0101010101010101u) & ~v & 0x8080808080808080u) == 0;
		x ^= v;
	}
	*sum ^= x;
	return n;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200, fd[2];
	if (pipe(fd))
		return 2;
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t words = 0, sum = 0;
		close(fd[1]);
		for (;;) {
			size_t got = 0;
			while (got < CHUNK) {
				ssize_t n = read(fd[0], (char *)b + got, CHUNK - got);
				if (n <= 0)
					goto done;
				got += (size_t)n;
			}
			copy(c, b);
			words += scan(c, &sum);
		}
done:
		printf("child %llu %llx\n", (unsigned long long)words, (unsigned long long)sum);
		return 0;
	}
	close(fd[0]);
	uint64_t words = 0, sum = 0;
	for (int r = 0; r < rounds; r++) {
		fill(a, (uint64_t)r * 2654435761u);
		copy(b, a);
		words += scan(b, &sum);
		if (write(fd[1], b, CHUNK) != CHUNK)
			return 4;
	}
	close(fd[1]);
	int st;
	waitpid(pid, &st, 0);
	printf("parent %llu %llx\n", (unsigned long long)words, (unsigned long long)sum);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 5;
}
"""


def cache_dir() -> Path:
    from emukern.debian import cache_root
    return cache_root() / "rvv-programs"


def zig_cc() -> list[str]:
    """The command that runs LLVM's C compiler from the ziglang wheel (Unavailable: none).

    Looked for as the installed ``ziglang`` module (``pip install -e '.[study]'``, which
    tools/setup.sh does), then as a wheel unpacked under ~/.cache/emukern/tools/ziglang
    (``pip install --target``: no change to the environment), then ``zig`` on PATH."""
    if importlib.util.find_spec("ziglang") is not None:
        return [sys.executable, "-m", "ziglang", "cc"]
    from emukern.debian import cache_root
    unpacked = cache_root() / "tools" / "ziglang" / "ziglang" / "zig"
    if unpacked.exists():
        return [str(unpacked), "cc"]
    zig = shutil.which("zig")
    if zig:
        return [zig, "cc"]
    raise Unavailable("no RVV-vectorising C compiler: `pip install ziglang` (the 'study' extra: "
                      "pip install -e '.[study]') gives LLVM for riscv64")


def _zig_version(cc: list[str]) -> str:
    p = subprocess.run([*cc[:-1], "version"], capture_output=True, text=True, timeout=120)
    return p.stdout.strip() or "unknown"


def zlib_tarball() -> Path:
    """zlib's upstream tarball from Debian trixie's source package (downloaded once)."""
    return debian_tarball("zlib")


def bzip2_tarball() -> Path:
    """bzip2's upstream tarball from Debian trixie's source package (downloaded once)."""
    return debian_tarball("bzip2")


def debian_tarball(pkg: str) -> Path:
    """The upstream (.orig) tarball of Debian trixie's source package ``pkg``, downloaded once.

    The source comes through apt-get source in a configuration of its own (apt-src, beside the
    binary caches), whose sources list carries deb-src lines: the binary fetchers' lists and the
    system's stay untouched.  Only the .orig tarball is needed: some mirrors do not serve the
    .dsc (a failed apt-get source with the tarball in place is enough)."""
    from emukern.debian import AptFetcher, FetchError, cache_root
    dest = cache_root() / "src"
    got = sorted(dest.glob(f"{pkg}_*.orig.tar.*"))
    if got:
        return got[-1]
    if not FETCH:
        raise Unavailable(f"{pkg}'s source is not cached (and fetching is off)")
    if shutil.which("apt-get") is None:
        raise Unavailable(f"apt-get is not installed ({pkg} comes from Debian's source package)")
    dest.mkdir(parents=True, exist_ok=True)
    fetcher = AptFetcher("trixie", "all", cache=cache_root() / "apt-src")
    try:
        fetcher._write_config()
        lst = fetcher.root / "sources.list"
        text = lst.read_text()
        lst.write_text(text + "".join(line.replace("deb ", "deb-src ", 1) + "\n"
                                      for line in text.splitlines() if line.startswith("deb ")))
        fetcher._apt("apt-get", "update", "-q")
        fetcher._apt("apt-get", "source", "--download-only", "-q", pkg, cwd=dest)
    except FetchError as exc:
        if not sorted(dest.glob(f"{pkg}_*.orig.tar.*")):
            raise Unavailable(f"Debian's {pkg} source could not be had: {exc}") from None
    got = sorted(dest.glob(f"{pkg}_*.orig.tar.*"))
    if not got:
        raise Unavailable(f"apt-get source {pkg} left no .orig tarball")
    return got[-1]


def _unpack(tarball: Path, into: Path, marker: str) -> Path:
    """Unpack ``tarball`` under ``into`` once; the top directory (the one holding ``marker``)."""
    if not (into / ".complete").exists():
        shutil.rmtree(into, ignore_errors=True)
        with tarfile.open(tarball) as tf:
            tf.extractall(into, filter="data")
        (into / ".complete").touch()
    return next(p for p in into.iterdir() if p.is_dir() and (p / marker).exists())


def _run_cc(cc: list[str], args: list[str], cwd: Path, what: str) -> None:
    p = subprocess.run([*cc, "-target", TARGET, "-O2", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=1800)
    if p.returncode != 0:
        raise Unavailable(f"building {what} failed: {p.stderr[-400:]}")


def _objects(cc: list[str], sources: list[str], cwd: Path, out: Path, defines: list[str]) -> None:
    """Compile each source with V into ``out``.  Every source stays vectorised: a vector
    instruction emukern's RVV unit refuses would stop the program with SIGILL, so finding one
    fails the build (it names the instructions) instead of quietly building that file scalar."""
    for src in sources:
        obj = out / (Path(src).stem + ".o")
        _run_cc(cc, [f"-mcpu={MCPU}", *defines, "-c", src, "-o", str(obj)], cwd, src)
        missing = unimplemented(obj)
        if missing:
            raise Unavailable(f"{src} built for {MCPU} uses vector instructions emukern's RVV unit "
                              f"does not implement: {missing}")


def build() -> dict[str, Path]:
    """{name: static riscv64 ELF} for ``minigzip``, ``bzip2`` and ``vpipe`` (built once, then
    cached); a ``build.json`` beside them lists the sources compiled with V."""
    cc = zig_cc()
    tarball = zlib_tarball()
    bz_tarball = bzip2_tarball()
    key = hashlib.sha256(" ".join([_zig_version(cc), TARGET, MCPU, MCPU_SCALAR, tarball.name, bz_tarball.name,
                                   VPIPE_C, BUILD_VERSION]).encode()).hexdigest()[:16]
    d = cache_dir() / key
    bins = {"minigzip": d / "minigzip", "bzip2": d / "bzip2", "vpipe": d / "vpipe"}
    if all(p.exists() for p in bins.values()) and (d / "build.json").exists():
        return bins
    d.mkdir(parents=True, exist_ok=True)
    top = _unpack(tarball, d / "src", "zlib.h")
    bz_top = _unpack(bz_tarball, d / "src-bzip2", "bzlib.h")
    report: dict[str, Any] = {}
    for name, sources, cwd, defines in (
            ("minigzip", list(ZLIB_FILES), top, ["-DHAVE_UNISTD_H", "-DHAVE_STDARG_H", "-D_LARGEFILE64_SOURCE=1", "-I."]),
            ("bzip2", list(BZIP2_FILES), bz_top, ["-D_FILE_OFFSET_BITS=64"]),
            ("vpipe", ["vpipe.c"], d, ["-fno-builtin"])):
        if name == "vpipe":
            (d / "vpipe.c").write_text(VPIPE_C)
        objdir = d / f"obj-{name}"
        objdir.mkdir(exist_ok=True)
        _objects(cc, sources, cwd, objdir, defines)
        objs = [str(objdir / (Path(s).stem + ".o")) for s in sources]
        tmp = bins[name].with_name(name + ".tmp")
        # linked for rv64gc: musl itself stays scalar (zig builds it for the link's CPU), so
        # every vector instruction comes from the sources compiled with V above
        _run_cc(cc, [f"-mcpu={MCPU_SCALAR}", "-static", *objs, "-o", str(tmp)], d, name)
        tmp.replace(bins[name])
        report[name] = {"vector_sources": list(sources)}
    (d / "build.json").write_text(json.dumps(report, indent=1, sort_keys=True))
    return bins


def build_report() -> dict[str, Any]:
    """What :func:`build` recorded: per program, the sources compiled with V (all of them)."""
    bins = build()
    return json.loads((bins["minigzip"].parent / "build.json").read_text())


def _vector_words(elf: Path) -> list[tuple[str, int]] | None:
    objdump = shutil.which("llvm-objdump")
    if objdump is None:
        return None
    p = subprocess.run([objdump, "-d", "--mattr=+v", str(elf)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "LC_ALL": "C"})
    out = []
    for line in p.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not parts[1].startswith("v") or ":" not in parts[0]:
            continue
        hexes = parts[0].split(":", 1)[1].split()
        if len(hexes) == 4:                      # a 32-bit instruction (no compressed V forms)
            out.append((parts[1], int.from_bytes(bytes.fromhex("".join(hexes)), "little")))
    return out


def unimplemented(elf: Path) -> dict[str, int]:
    """The vector instructions in ``elf`` that emukern's RVV unit would refuse (its own decoder
    says so), by name: {} when every one runs (or when there is no llvm-objdump to look)."""
    from emukern.machine.rvv.decode import NOT_IMPL, decode
    words = _vector_words(elf)
    out: dict[str, int] = {}
    for name, w in words or []:
        if (w & 0x7F) in (0x57, 0x07, 0x27) and NOT_IMPL in (decode(w).reason or ""):
            out[name] = out.get(name, 0) + 1
    return out


def vector_instructions(elf: Path) -> int | None:
    """How many vset{i}vl{i} instructions the binary holds (None: no llvm-objdump here)."""
    objdump = shutil.which("llvm-objdump")
    if objdump is None:
        return None
    p = subprocess.run([objdump, "-d", "--mattr=+v", str(elf)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "LC_ALL": "C"})
    return sum(1 for line in p.stdout.splitlines() if "\tvset" in line)


__all__ = ["build", "build_report", "bzip2_tarball", "debian_tarball", "unimplemented", "vector_instructions",
           "zig_cc", "zlib_tarball"]
