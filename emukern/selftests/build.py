"""Build the selftests as their own Makefiles do, static, with the Debian cross compilers.

Each program is one ``make`` of its Makefile's own target (so its rule, flags and nolibc use are
the Makefile's), with what the parent ``selftests/<arch>/Makefile`` would export: ``CFLAGS``
(``-Wall -O2 -g``, the selftests include dir, the release's UAPI headers as ``KHDR_INCLUDES``, and
for arm64 tools/include) and ``top_srcdir``.  Two things are ours, both on the command line:
``OUTPUT`` (a cache directory, so the tree is left alone) and ``CC="<triple>-gcc -static"``: the
selftests link dynamically by default and several custom rules (``$(CC) -nostdlib $^ -o $@``) never
see ``LDFLAGS``, so ``-static`` has to ride on ``CC`` for every program to come out static.

A selftest newer than the tree (``SelfTest.upstream``: the RISC-V ptrace tests, which 6.12 lacks)
is compiled from a stored upstream copy under ``UPSTREAM_DIR`` ($EMUKERN_UPSTREAM_SRC, by default
the project's seeds-upstream folder; emukern ships no kernel source) as the vector Makefile builds
its C tests: ``$(CC) -static $(CFLAGS)`` with the release's headers, beside the tree's
``riscv/vector`` directory so its ``../../kselftest.h`` resolves, plus ``selftests/include/`` for
the ``v_helpers.h`` the 6.12 tree does not have (emukern's own three helpers).

A program that does not build is reported with the compiler's first error line as its reason.

Two kinds of library have no static cross build to link, and are supplied so that the Makefile's
own rule still links the program: a Debian ``-dev`` package of the test's architecture
(``SelfTest.deb_libs``: libpopt for mqueue, libcap-ng for capabilities, libcap for clone3) is fetched
with :class:`emukern.debian.AptFetcher`, unpacked under the build cache, and named to make through
lib.mk's ``USERCFLAGS``/``USERLDFLAGS`` (-I/-L: the linker takes its ``.a`` under ``-static``); and
a library the directory builds from its own source as a shared object (``SelfTest.static_lib``:
rseq's ``librseq.so`` from ``rseq.c``) is compiled with the same flags into ``lib<name>.a`` in
``OUTPUT`` -- the Makefile already passes ``-L$(OUTPUT) -l<name>`` -- so the code is linked into each
test instead (the test's make_vars then drop the ``.so`` from its prerequisites).

fp-pidbench is also built with a smaller iteration count: the one documented substitution is its
``mov x20, #10000`` (then ``lsl x20, x20, #8``: 2,560,000 getpid calls per loop) becoming
``mov x20, #PIDBENCH_ITERS``, compiled with the very command its Makefile rule uses.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from emukern.selftests.catalog import SelfTest
from emukern.selftests.source import LinuxSource

TRIPLES = {"arm64": "aarch64-linux-gnu", "riscv64": "riscv64-linux-gnu"}
PIDBENCH_ITERS = 100                   # -> 100 << 8 = 25,600 getpid calls per loop
PIDBENCH_REAL = 10000                  # upstream: 10000 << 8 = 2,560,000 per loop
UPSTREAM_DIR = Path(os.environ.get("EMUKERN_UPSTREAM_SRC", "/work/shared/seeds-upstream"))
_OWN_INCLUDE = Path(__file__).with_name("include")
# trixie's .a files were compiled against glibc 2.41, whose headers turn sscanf/strtol & co. into
# their C23 entry points (__isoc23_*: they also accept "0b" binary input); the cross toolchains'
# glibc 2.36 has only the C99 ones.  Each C23 name is linked to the C99 function (libcap-ng's and
# libcap's /proc/self/status parsing and popt's option numbers never meet a "0b" prefix).
_C23_ALIASES = [f"-Wl,--defsym=__isoc23_{n}={c99}" for n, c99 in
                (("sscanf", "__isoc99_sscanf"), ("strtol", "strtol"), ("strtoul", "strtoul"),
                 ("strtoll", "strtoll"), ("strtoull", "strtoull"))]
_PIDBENCH_LINE = re.compile(r"^(\s*mov\s+x20,\s*#)10000(\s*)$", re.M)


# Generic directories that live below a directory too large to unpack whole (net/ is hundreds of
# files of network-namespace scripts; only its AF_UNIX programs run here).  They are unpacked one
# by one when a test of theirs is first built, leaving source.ensure_generic's stamp alone: that
# stamp is shared by every checkout using the same cache, and a different list there would make
# each of them unpack everything again.
EXTRA_DIRS = ("net/af_unix",)


def unpack_extra(src: LinuxSource, srcdir: str) -> None:
    """Unpack tools/testing/selftests/``srcdir`` from Debian's linux-source into ``src``'s tree
    (a --linux-src tree is the user's own: it has the directory or it does not)."""
    if not src.origin.startswith("Debian "):
        return
    from emukern.debian import AptFetcher
    from emukern.selftests.source import DEBIAN_RELEASE, PACKAGE, _tarball
    deb = AptFetcher(DEBIAN_RELEASE, "all").download(PACKAGE)
    work = src.tree.parent
    tarball = _tarball(deb, work)
    subprocess.run(["tar", "-xJf", str(tarball), "-C", str(work), "--wildcards",
                    f"{src.tree.name}/tools/testing/selftests/{srcdir}/*"],
                   capture_output=True, text=True, timeout=600)
    shutil.rmtree(work / "deb", ignore_errors=True)


@dataclass
class Built:
    test: SelfTest
    path: Path | None                  # the static ELF, or None
    reason: str = ""                   # why it did not build
    log: str = ""

    @property
    def ok(self) -> bool:
        return self.path is not None


def build_root(src: LinuxSource) -> Path:
    from emukern.debian import cache_root
    key = hashlib.sha256(str(src.tree).encode()).hexdigest()[:10]
    return cache_root() / "selftests" / f"{src.version}-{key}"


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "error:" in line or "Error" in line or "No rule" in line or "undefined reference" in line:
            return line.strip()[:200]
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "make failed without a message"


class Builder:
    def __init__(self, src: LinuxSource, root: Path | None = None) -> None:
        self.src = src
        self.root = root or build_root(src)
        self._headers: dict[str, Path] = {}

    def compiler(self, arch: str) -> str | None:
        return shutil.which(f"{TRIPLES[arch]}-gcc")

    def headers(self, arch: str) -> Path:
        if arch not in self._headers:
            self._headers[arch] = self.src.headers(arch, self.root)
        return self._headers[arch]

    def outdir(self, t: SelfTest) -> Path:
        # generic tests have their own tree (generic mm/ and riscv's mm/ are different directories)
        return self.root / t.arch / ("generic" if t.generic else "") / t.dir

    def _env(self, t: SelfTest) -> dict[str, str]:
        st = self.src.selftests
        hdr = self.headers(t.arch)
        cflags = f"-Wall -O2 -g -I{st}/ -isystem {hdr}"
        if t.karch == "arm64":
            cflags += f" -I{self.src.tree}/tools/include"      # arm64/Makefile adds it, riscv's not
        env = dict(os.environ)
        env.update(CFLAGS=cflags, top_srcdir=str(self.src.tree), LC_ALL="C")
        if t.generic:
            # the top selftests/Makefile exports no CFLAGS to the generic directories: each
            # Makefile's own flags (KHDR_INCLUDES comes on the command line)
            env.pop("CFLAGS")
        env.pop("MAKEFLAGS", None)
        env.pop("MFLAGS", None)
        return env

    def deb_lib_root(self, arch: str, package: str) -> Path:
        """``package`` (a Debian -dev package of ``arch``) unpacked under the build cache."""
        from emukern.debian import AptFetcher, extract
        dest = self.root / "deb" / arch / package
        stamp = dest / ".emukern-unpacked"
        if not stamp.exists():
            deb = AptFetcher("trixie", arch).download(package)
            extract(deb, dest, lambda n: n.startswith("usr/include/") or n.startswith("usr/lib/"))
            stamp.touch()
        return dest

    def _lib_vars(self, t: SelfTest) -> list[str]:
        """make variables that point its link at the Debian libraries it needs."""
        if not t.deb_libs:
            return []
        inc, lib = [], []
        for pkg in t.deb_libs:
            d = self.deb_lib_root(t.arch, pkg)
            inc.append(f"-I{d}/usr/include")
            lib.append(f"-L{d}/usr/lib/{TRIPLES[t.arch]}")
        return [f"USERCFLAGS={' '.join(inc)}", f"USERLDFLAGS={' '.join(lib + _C23_ALIASES)}"]

    def _static_lib(self, t: SelfTest) -> subprocess.CompletedProcess[str] | None:
        """Build ``t.static_lib`` into lib<name>.a in its OUTPUT (None: nothing to build)."""
        if not t.static_lib:
            return None
        out = self.outdir(t)
        name = Path(t.static_lib).stem
        lib = out / f"lib{name}.a"
        if lib.exists():
            return None
        triple = TRIPLES[t.arch]
        d = self.src.selftests / t.srcdir
        obj = out / f"{name}.o"
        # the flags of the directory's own shared-library rule (rseq: -O2 -Wall -g -I./ and the
        # headers), without -shared -fPIC
        cmd = [f"{triple}-gcc", "-O2", "-Wall", "-g", "-I./", "-isystem", str(self.headers(t.arch)),
               f"-I{self.src.tree}/tools/include", "-D_GNU_SOURCE=", "-c", t.static_lib, "-o", str(obj)]
        p = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            return p
        return subprocess.run([f"{triple}-ar", "rcs", str(lib), str(obj)], capture_output=True, text=True,
                              timeout=60)

    def _make(self, t: SelfTest, target: str) -> subprocess.CompletedProcess[str]:
        triple = TRIPLES[t.arch]
        out = self.outdir(t)
        out.mkdir(parents=True, exist_ok=True)
        pre = self._static_lib(t)
        if pre is not None and pre.returncode != 0:
            return pre
        cmd = ["make", "-C", str(self.src.selftests / t.srcdir), f"ARCH={t.karch}",
               f"CROSS_COMPILE={triple}-", f"CC={triple}-gcc -static", f"OUTPUT={out}",
               f"KHDR_INCLUDES=-isystem {self.headers(t.arch)}", *t.make_vars, *self._lib_vars(t), target]
        return subprocess.run(cmd, env=self._env(t), capture_output=True, text=True, timeout=600)

    def build(self, t: SelfTest) -> Built:
        """Build ``t`` (answered from the cache when its program is there)."""
        d = self.src.selftests / t.srcdir
        if t.srcdir in EXTRA_DIRS and not (d / "Makefile").exists():
            unpack_extra(self.src, t.srcdir)
        if not (d / "Makefile").exists():
            return Built(t, None, f"not in this tree: no {t.srcdir}/Makefile in Linux {self.src.version}")
        out = self.outdir(t) / t.name
        if out.exists():
            return Built(t, out)
        if self.compiler(t.arch) is None:
            return Built(t, None, f"no {TRIPLES[t.arch]}-gcc (install gcc-{TRIPLES[t.arch].replace('_', '-')})")
        if t.upstream:
            return self._build_upstream(t, d, out)
        from emukern.debian import FetchError
        try:
            return self._build_make(t, d, out)
        except FetchError as exc:
            return Built(t, None, f"its static library could not be fetched: {exc.message}")

    def _build_make(self, t: SelfTest, d: Path, out: Path) -> Built:
        if t.make_target:
            p = self._make(t, t.make_target)
            made = d / t.make_target
            if p.returncode == 0 and made.exists():
                shutil.copy2(made, out)             # the signal Makefile's own `cp $(PROGS) $(OUTPUT)/`
        else:
            p = self._make(t, str(out))
        log = p.stdout + p.stderr
        if p.returncode != 0 or not out.exists():
            if "No rule to make target" in log and t.name in log:
                return Built(t, None, f"not in this tree: its Makefile has no {t.name} "
                                      f"(Linux {self.src.version})", log)
            return Built(t, None, _first_error(log), log)
        return Built(t, out, "", log)

    def _build_upstream(self, t: SelfTest, d: Path, out: Path) -> Built:
        src = UPSTREAM_DIR / t.upstream
        if not src.exists():
            return Built(t, None, f"not in this tree, and no upstream copy at {src} (set EMUKERN_UPSTREAM_SRC)")
        copy = d / f".emukern-{t.name}.c"          # beside the tree's sources: ../../kselftest.h
        shutil.copyfile(src, copy)
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [f"{TRIPLES[t.arch]}-gcc", "-static", *self._env(t)["CFLAGS"].split(), f"-I{_OWN_INCLUDE}",
               str(copy), "-o", str(out)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        copy.unlink(missing_ok=True)
        log = p.stdout + p.stderr
        if p.returncode != 0 or not out.exists():
            return Built(t, None, _first_error(log), log)
        return Built(t, out, "", log)

    def build_all(self, tests: list[SelfTest]) -> dict[str, Built]:
        done: dict[str, Built] = {}
        for t in tests:
            done[t.id] = self.build(t)
        return done

    def pidbench(self, iters: int = PIDBENCH_ITERS, source: Path | None = None, tag: str = "") -> Built:
        """fp-pidbench with ``mov x20, #<iters>`` (``iters`` == 10000 is the unmodified source).

        ``source``: a newer fp-pidbench.S than the tree's (a stored upstream copy, named by ``tag``
        in the output file), assembled against this tree's assembler.h and asm-utils.o."""
        from emukern.selftests.catalog import BY_ID
        t = BY_ID["arm64/fp/fp-pidbench"]
        if iters == PIDBENCH_REAL and source is None:
            return self.build(t)
        out = self.outdir(t) / f"fp-pidbench{'-' + tag if tag else ''}-{iters}"
        if out.exists():
            return Built(t, out)
        fpdir = self.src.selftests / "arm64" / "fp"
        try:
            text = (source or fpdir / "fp-pidbench.S").read_text()
        except OSError as exc:
            return Built(t, None, f"not in this tree: {exc.strerror}")
        new, n = _PIDBENCH_LINE.subn(rf"\g<1>{iters}\g<2>", text)
        if n != 1:
            return Built(t, None, "fp-pidbench.S has no single 'mov x20, #10000' to substitute")
        # asm-utils.o comes from the Makefile's own rule
        asm = self.outdir(t) / "asm-utils.o"
        if not asm.exists():
            p = self._make(t, str(asm))
            if p.returncode != 0:
                return Built(t, None, _first_error(p.stdout + p.stderr))
        srcf = out.with_name(out.name + ".S")
        srcf.write_text(new)
        triple = TRIPLES["arm64"]
        # the Makefile rule: $(CC) -nostdlib $^ -o $@ (-I: the copy is not beside assembler.h)
        p = subprocess.run([f"{triple}-gcc", "-static", "-nostdlib", f"-I{fpdir}", str(srcf), str(asm),
                            "-o", str(out)], capture_output=True, text=True)
        if p.returncode != 0:
            return Built(t, None, _first_error(p.stderr))
        return Built(t, out)
