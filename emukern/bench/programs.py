"""Real programs: Debian trixie's own binaries, from one cached guest root per architecture, under
emukern and under qemu-user, alternately; host CPU time of the whole run.

The set is fixed (PROGRAMS): a busybox shell loop, sort of 20,000 lines, python3 -c, sqlite3 on
an in-memory database, gzip and xz of the same lines, bash forking subshells, and a bash
pipeline between two subshells.  Each is a figure: emukern's CPU time, qemu-user's, and their
pairwise ratio; one more figure per architecture gives the median of the programs' ratios.
arm64 has two more columns: qemu-user with pauth-impdef=on, and emukern with pointer
authentication off (``--no-pac``, the same argv, its output checked identical to the PAC run's);
the target's median pairs those two, the figures with PAC on stay beside it (see EMUKERN_NO_PAC).

qemu-user runs the program in a chroot of the same root (its own host libraries copied in,
under paths no arm64 or riscv64 file uses) when emukern runs as root; otherwise with ``-L``,
which falls through to the host's files for paths the root lacks -- the figure's note says
which.  Programs exec nothing (qemu-user without binfmt_misc could not run a foreign exec):
the forks are subshells.

The packages come through emukern.debian.AptFetcher (the Depends closure, cached under
~/.cache/emukern/apt); the unpacked root is cached beside it, keyed by the package set.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from emukern.bench.peers import child_cpu
from emukern.bench.stats import Target, Unavailable, alternate, figure, pairwise_ratios, summary, unavailable

QEMU_BIN = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
QEMU_ARGS = {"riscv64": [], "arm64": ["-cpu", "max"]}
# arm64's second qemu-user column: `-cpu max` signs pointers with QARMA5, which QEMU computes
# in software at a real cost to every glibc function return; pauth-impdef=on gives it the
# cheaper implementation-defined algorithm.  Both columns are shown, so a ratio cannot look
# better only because the peer was made slow by its pointer authentication.
QEMU_IMPDEF = "qemu-user pauth-impdef=on"
QEMU_IMPDEF_ARGS = ["-cpu", "max,pauth-impdef=on"]
# arm64's second emukern column: the same argv with pointer authentication off (--no-pac, Linux's
# arm64.nopauth: glibc's paciasp/autiasp run as NOPs).  With PAC on, Unicorn signs every return
# address with QARMA5 in C, the very cost pauth-impdef=on takes off qemu-user; measured on these
# programs it is 5-55% of emukern's time (busybox sh loop: 1.16 s -> 0.54 s), while traps are a
# handful per program (one emulated MRS, one or two SVE access traps).  So the fair pairing, with
# neither side computing QARMA5, is this column against the impdef one, and issue 30's 4x is
# judged there; the PAC-on columns stay beside it.
EMUKERN_NO_PAC = "emukern --no-pac"
# issue 30's targets for the median of the per-program ratios: arm64 pairs emukern --no-pac with
# the impdef column (see above), riscv64 emukern with qemu-user
TARGET_PROGRAMS_RATIO = {"arm64": (4.0, QEMU_IMPDEF), "riscv64": (6.0, "qemu-user")}
LINES = 20_000

# (name, packages, argv, quick argv or None: the same); paths are inside the guest root
PROGRAMS: list[tuple[str, tuple[str, ...], list[str], list[str] | None]] = [
    ("busybox sh loop", ("busybox",),
     ["/usr/bin/busybox", "sh", "-c", "i=0; s=0; while [ $i -lt 3000 ]; do i=$((i+1)); s=$((s+i)); done; echo $s"],
     ["/usr/bin/busybox", "sh", "-c", "i=0; s=0; while [ $i -lt 300 ]; do i=$((i+1)); s=$((s+i)); done; echo $s"]),
    ("sort 20k lines", ("coreutils",), ["/usr/bin/sort", "-o", "/tmp/bench/sorted.txt", "/tmp/bench/lines.txt"], None),
    ("python3 -c", ("python3.13-minimal", "libpython3.13-minimal"),
     ["/usr/bin/python3.13", "-S", "-c", "print(sum(i * i for i in range(20000)))"], None),
    ("sqlite3 :memory:", ("sqlite3",),
     ["/usr/bin/sqlite3", ":memory:", "with recursive c(x) as (select 1 union all select x + 1 from c limit 20000) "
      "select count(*), sum(x) from c;"], None),
    ("gzip -6", ("gzip",), ["/usr/bin/gzip", "-c", "-6", "/tmp/bench/lines.txt"], None),
    ("xz -3", ("xz-utils",), ["/usr/bin/xz", "-c", "-3", "/tmp/bench/lines.txt"], None),
    ("bash forks", ("bash",), ["/usr/bin/bash", "-c", "for i in {1..40}; do (:); done; echo forked"],
     ["/usr/bin/bash", "-c", "for i in {1..5}; do (:); done; echo forked"]),
    ("bash pipeline", ("bash",),
     ["/usr/bin/bash", "-c", "i=0; while ((i < 2000)); do echo $i; ((i++)); done | "
      "{ n=0; while read -r x; do ((n++)); done; echo $n; }"],
     ["/usr/bin/bash", "-c", "i=0; while ((i < 200)); do echo $i; ((i++)); done | "
      "{ n=0; while read -r x; do ((n++)); done; echo $n; }"]),
]
QUICK_SET = ("busybox sh loop", "bash pipeline")      # --quick: two programs, smaller loops

# Depends not needed to run the programs (maintainer scripts, data, configuration)
_SKIP = {"debconf", "base-files", "debianutils", "perl-base", "dpkg", "libc-bin", "init-system-helpers",
         "tzdata", "media-types", "readline-common", "sensible-utils", "libpam-runtime", "debconf-2.0",
         "awk", "mawk", "gcc-14-base", "libdebconfclient0"}
# Pre-Depends (apt-cache depends reports them apart)
_PRE = {"coreutils": ("libacl1", "libattr1", "libgmp10", "libselinux1", "libssl3t64", "libcap2", "libpcre2-8-0"),
        "bash": ("libtinfo6",), "xz-utils": ("liblzma5",), "gzip": (), "busybox": ()}


def _closure(fetcher: Any, roots: list[str]) -> list[str]:
    seen: list[str] = []
    todo = list(roots) + ["libc6"]
    while todo:
        p = todo.pop()
        if p in seen or p in _SKIP or p.startswith("<"):
            continue
        seen.append(p)
        todo.extend(fetcher.depends(p))
        todo.extend(_PRE.get(p, ()))
    return sorted(seen)


def guest_root(arch: str) -> Path:
    """The cached guest root with every program's packages for ``arch`` (built once)."""
    from emukern.debian import AptFetcher, FetchError, cache_root, extract
    if shutil.which("dpkg-deb") is None and shutil.which("apt-get") is None:
        raise Unavailable("apt-get is not installed (the programs are Debian's)")
    wanted = sorted({p for _n, pkgs, _a, _q in PROGRAMS for p in pkgs})
    key = hashlib.sha256(f"{arch} {' '.join(wanted)} {LINES}".encode()).hexdigest()[:16]
    root = cache_root() / "bench-roots" / f"programs-{arch}-{key}"
    if (root / ".complete").exists():
        return root
    fetcher = AptFetcher("trixie", "arm64" if arch == "arm64" else "riscv64")
    try:
        debs = [fetcher.download(p) for p in _closure(fetcher, wanted)]
    except FetchError as exc:
        raise Unavailable(f"Debian trixie's packages for {arch} could not be had: {exc}") from None
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for deb in debs:
        _extract(extract, deb, tmp)
    for d in ("lib", "bin", "sbin"):
        if not (tmp / d).exists():
            (tmp / d).symlink_to(f"usr/{d}")
    (tmp / "tmp" / "bench").mkdir(parents=True, exist_ok=True)
    # 20k lines, the same every time: a linear-congruential sequence, as text
    x, out = 12345, []
    for _ in range(LINES):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(f"{x:010d} line {x % 977}\n")
    (tmp / "tmp" / "bench" / "lines.txt").write_text("".join(out))
    (tmp / ".complete").touch()
    shutil.rmtree(root, ignore_errors=True)
    tmp.replace(root)
    return root


def _extract(extract: Any, deb: Path, dest: Path) -> None:
    """extract(), leaving out members the confined unpacking refuses (links to absolute paths,
    e.g. python's sitecustomize.py into /etc): no program here reads them."""
    import tarfile
    skip: set[str] = set()
    while True:
        try:
            extract(deb, dest, lambda n: n not in skip)
            return
        except tarfile.FilterError as exc:
            name = exc.tarinfo.name.lstrip("./")
            if name in skip:
                raise
            skip.add(name)


def _emukern_cpu(root: Path, argv: list[str], outputs: dict[str, set[str]] | None = None,
                 who: str = "emukern", **options: Any) -> float:
    """CPU time of one emukern run of ``argv`` (``options``: MachineConfig fields, e.g.
    ``has_pac=False``); the digest of what it printed goes into ``outputs[who]``."""
    from emukern.api import Machine
    m = Machine(root=str(root), root_rw=True, max_insns=None, **options)
    m.load(root / argv[0].lstrip("/"), argv[1:])
    t = time.process_time()
    r = m.run()
    dt = time.process_time() - t
    if r.exit_status != 0:
        raise RuntimeError(f"{argv[0]} exited with {r.exit_status} under emukern: {r.stderr[-300:]!r}")
    if outputs is not None:
        outputs.setdefault(who, set()).add(_output_digest(root, argv, r.stdout))
    return dt


def _output_digest(root: Path, argv: list[str], stdout: bytes) -> str:
    """What a run printed: its stdout and, for a program told to write a file (``-o FILE``, sort),
    that file as the run left it."""
    h = hashlib.sha256(stdout)
    for i, a in enumerate(argv[:-1]):
        if a == "-o":
            out = root / argv[i + 1].lstrip("/")
            h.update(out.read_bytes() if out.exists() else b"(no file)")
    return h.hexdigest()[:16]


def _chroot_ready(root: Path, qemu: str) -> Path | None:
    """``root`` with qemu-user and its host libraries copied in (None: chroot not possible)."""
    if os.geteuid() != 0 or shutil.which("ldd") is None:
        return None
    exe = Path(shutil.which(qemu) or "")
    dest = root / "qemu-user" / exe.name
    if not dest.exists():
        ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True)
        libs = [w for line in ldd.stdout.splitlines() for w in line.split() if w.startswith("/")]
        for lib in libs:                 # x86-64 paths: no arm64/riscv64 file is there
            to = root / lib.lstrip("/")
            to.parent.mkdir(parents=True, exist_ok=True)
            if not to.exists():
                shutil.copy2(Path(lib).resolve(), to)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(exe, dest)
    return dest


def _qemu_cpu(arch: str, root: Path, argv: list[str], qargs: list[str] | None = None) -> float:
    qemu = QEMU_BIN[arch]
    if shutil.which(qemu) is None:
        raise Unavailable(f"{qemu} not installed")
    inside = _chroot_ready(root, qemu)
    qa = QEMU_ARGS[arch] if qargs is None else qargs
    if inside is not None:
        cmd = ["chroot", str(root), "/" + str(inside.relative_to(root)), *qa, *argv]
    else:
        cmd = [qemu, *qa, "-L", str(root), str(root / argv[0].lstrip("/")), *argv[1:]]
    cpu, rc, err = child_cpu(cmd, timeout=600)
    if rc != 0:
        raise Unavailable(f"{qemu} exited with {rc}: {err[-200:]!r}")
    return cpu


def how_qemu_runs(root: Path, arch: str) -> str:
    return "chroot of the guest root" if os.geteuid() == 0 else "-L guest root (not root: no chroot)"


def m_programs(cfg: Any, arches: tuple[str, ...], raw_floor: Callable[[str], float] | None = None) -> list[dict[str, Any]]:
    """The programs on each architecture (``cfg``: selfbench.Settings); then per architecture
    the median of the per-program ratios and, when given, the raw-Unicorn MIPS floor."""
    out: list[dict[str, Any]] = []
    for arch in arches:
        try:
            root: Path | None = guest_root(arch)
        except Unavailable as exc:
            root, why = None, str(exc)
        ratios: list[float] = []
        impdef: list[float] = []
        fair: list[float] = []          # arm64: emukern --no-pac / qemu-user pauth-impdef=on
        for name, _pkgs, argv, quick_argv in PROGRAMS:
            if cfg.quick and name not in QUICK_SET:
                continue
            args = quick_argv if cfg.quick and quick_argv else argv
            cfg.say(f"{arch} {name}")
            outputs: dict[str, set[str]] = {}
            if root is None:
                runners: dict[str, Callable[[], float]] = {"emukern": unavailable(why)}
            else:
                runners = {"emukern": lambda r=root, a=args, o=outputs: _emukern_cpu(r, a, o),
                           "qemu-user": lambda r=root, a=args, ar=arch: _qemu_cpu(ar, r, a)}
                if arch == "arm64":
                    runners[QEMU_IMPDEF] = lambda r=root, a=args, ar=arch: _qemu_cpu(ar, r, a, QEMU_IMPDEF_ARGS)
                    runners[EMUKERN_NO_PAC] = lambda r=root, a=args, o=outputs: _emukern_cpu(
                        r, a, o, EMUKERN_NO_PAC, has_pac=False)
            samples, notes = alternate(runners, cfg.reps)
            extra: dict[str, Any] = {}
            if arch == "arm64":
                nopac, imp = samples.get(EMUKERN_NO_PAC, []), samples.get(QEMU_IMPDEF, [])
                if nopac and imp:
                    extra["no_pac_vs_impdef"] = summary(pairwise_ratios(nopac, imp))
                    fair.append(extra["no_pac_vs_impdef"]["median"])
                # the two emukern columns must have printed the same bytes, every run
                extra["no_pac_same_output"] = (len(outputs.get("emukern", ())) == 1
                                               and outputs.get("emukern") == outputs.get(EMUKERN_NO_PAC))
                if not extra["no_pac_same_output"] and nopac:
                    raise RuntimeError(f"{arch} {name}: emukern --no-pac printed other bytes than emukern "
                                       f"({sorted(outputs.get(EMUKERN_NO_PAC, ()))} vs {sorted(outputs.get('emukern', ()))})")
            f = figure(f"{arch} {name} (CPU of the whole run)", "s", "emukern", samples, notes, None,
                       qemu_runs=how_qemu_runs(root, arch) if root is not None else None,
                       key=f"{arch}.program.{name.split()[0]}{'_' + name.split()[1] if len(name.split()) > 1 else ''}",
                       arch=arch, argv=args, **extra)
            out.append(f)
            r = f["contenders"].get("qemu-user", {}).get("ratio")
            if r:
                ratios.append(r["median"])
            r = f["contenders"].get(QEMU_IMPDEF, {}).get("ratio")
            if r:
                impdef.append(r["median"])
        goal, against = TARGET_PROGRAMS_RATIO[arch]
        med = {"emukern": [statistics.median(ratios)]} if ratios else {}
        out.append(figure(f"{arch} programs: median of the per-program ratios emukern/qemu-user", "×", "emukern",
                          med, {} if ratios else {"emukern": "no program ran under both"},
                          Target("<=", goal, "value") if against == "qemu-user" else None,
                          key=f"{arch}.programs_ratio", arch=arch, ratios=ratios))
        if arch == "arm64":
            # PAC on here (Unicorn's QARMA5 against qemu's impdef algorithm): shown, not judged
            med = {"emukern": [statistics.median(impdef)]} if impdef else {}
            out.append(figure(f"{arch} programs: median of the per-program ratios emukern/{QEMU_IMPDEF}", "×",
                              "emukern", med, {} if impdef else {"emukern": "no program ran under both"},
                              None, key=f"{arch}.programs_ratio_impdef", arch=arch, ratios=impdef,
                              note="emukern with pointer authentication on (QARMA5 in Unicorn) against "
                                   f"{QEMU_IMPDEF}: not the target's pairing (see {arch}.programs_ratio_no_pac)"))
            med = {EMUKERN_NO_PAC: [statistics.median(fair)]} if fair else {}
            out.append(figure(f"{arch} programs: median of the per-program ratios {EMUKERN_NO_PAC}/{QEMU_IMPDEF} "
                              "(neither computes QARMA5: the target's pairing)", "×", EMUKERN_NO_PAC, med,
                              {} if fair else {EMUKERN_NO_PAC: "no program ran under both"},
                              Target("<=", goal, "value"), key=f"{arch}.programs_ratio_no_pac", arch=arch,
                              ratios=fair,
                              note=f"{EMUKERN_NO_PAC}: the same argv with pointer authentication off "
                                   "(Linux's arm64.nopauth; the output checked identical to the PAC run's) "
                                   f"against {QEMU_IMPDEF}; each program's ratio is its figure's no_pac_vs_impdef"))
        if raw_floor is not None:
            cfg.say(f"{arch} raw Unicorn MIPS (cksum.S)")
            fs, fn = alternate({"raw Unicorn": lambda a=arch: raw_floor(a)}, cfg.reps)
            out.append(figure(f"{arch} raw Unicorn floor (cksum.S, no hooks)", "MIPS", "raw Unicorn", fs, fn, None,
                              higher_is_better=True, key=f"{arch}.raw_floor", arch=arch))
    return out


__all__ = ["PROGRAMS", "guest_root", "m_programs", "summary"]
