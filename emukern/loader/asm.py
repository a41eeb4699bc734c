"""Assemble guest ``.S`` sources into static ELF executables.

RISC-V (with RVV) and AArch64 (with SVE) guest programs are assembled with LLVM's ``llvm-mc`` and
linked with ``ld.lld``; keystone-engine can do neither RISC-V nor SVE.  Keystone is still used for
small in-process AArch64 base-ISA snippets (:func:`assemble_arm64_snippet`), which need no
external tool.

Outputs are cached by content: the key hashes the source, every file it ``.include``\\ s or
``.incbin``\\ s (found by scanning, recursively), the architecture, the flags and the versions of
both tools.  The cache lives in ``$EMUKERN_CACHE/asm`` (or ``~/.cache/emukern/asm``) and is written
atomically, so parallel test workers can share it.

Sources are GNU-as syntax without the C preprocessor: use ``.include``/``.equ``/``.macro``.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Sequence

from emukern.errors import AssemblerError

__all__ = [
    "ARCHES",
    "MC_FLAGS",
    "LD_FLAGS",
    "assemble",
    "assemble_arm64_snippet",
    "assemble_shared",
    "assemble_snippet",
    "cache_dir",
    "default_include_dirs",
    "detect_arch_from_source",
    "find_tools",
]

ARCHES = ("riscv64", "arm64")

#: llvm-mc flags per architecture (``-filetype=obj`` is added by the callers).
MC_FLAGS: dict[str, tuple[str, ...]] = {
    "riscv64": ("-triple=riscv64", "-mattr=+m,+a,+f,+d,+c,+v"),
    "arm64": ("-triple=aarch64", "-mattr=+sve,+sve2,+sve2-aes,+sve2-bitperm,+sve2-sha3,+sve2-sm4,+i8mm,+f32mm,+f64mm,+bf16"),
}

#: ld.lld flags (the same for both architectures).  lld's default image bases are fixed
#: (0x10000 for RISC-V, 0x200000 for AArch64) and its output is deterministic.
LD_FLAGS: tuple[str, ...] = ("-static", "--no-dynamic-linker", "-e", "_start", "--build-id=none")

_MISSING_HINT = "apt-get install llvm lld   (or set EMUKERN_LLVM_MC / EMUKERN_LD_LLD)"
_MISSING_MSG = (
    "llvm-mc (LLVM's assembler) is needed to assemble RISC-V and SVE sources: "
    "keystone-engine has neither"
)
_MISSING_LD_MSG = "ld.lld (LLVM's linker) is needed to link guest programs into static ELFs"

_ARCH_ALIASES = {
    "riscv64": "riscv64", "riscv": "riscv64", "rv64": "riscv64",
    "arm64": "arm64", "aarch64": "arm64",
}


def _norm_arch(arch: str) -> str:
    a = _ARCH_ALIASES.get(str(arch).lower())
    if a is None:
        raise AssemblerError(
            f"unknown guest architecture {arch!r}",
            hint="use 'riscv64' or 'arm64'",
        )
    return a


# --------------------------------------------------------------------------------------------
# tool discovery


def _find_tool(env_var: str, names: Sequence[str], missing_msg: str) -> str:
    override = os.environ.get(env_var)
    if override:
        p = shutil.which(override) or (override if os.path.isfile(override) else None)
        if p is None or not os.access(p, os.X_OK):
            raise AssemblerError(f"{env_var}={override!r} is not an executable program",
                                 hint=_MISSING_HINT)
        return p
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    raise AssemblerError(missing_msg, hint=_MISSING_HINT)


def find_tools() -> tuple[str, str]:
    """Return the paths of (llvm-mc, ld.lld); raise :class:`AssemblerError` if either is missing.

    ``$EMUKERN_LLVM_MC`` / ``$EMUKERN_LD_LLD`` override the search; otherwise ``llvm-mc`` then
    ``llvm-mc-18`` ... ``llvm-mc-14`` (likewise ``ld.lld``) are looked up on ``$PATH``.
    """
    versions = range(18, 13, -1)
    mc = _find_tool("EMUKERN_LLVM_MC", ["llvm-mc"] + [f"llvm-mc-{v}" for v in versions],
                    _MISSING_MSG)
    ld = _find_tool("EMUKERN_LD_LLD", ["ld.lld"] + [f"ld.lld-{v}" for v in versions],
                    _MISSING_LD_MSG)
    return mc, ld


def _find_mc() -> str:
    versions = range(18, 13, -1)
    return _find_tool("EMUKERN_LLVM_MC", ["llvm-mc"] + [f"llvm-mc-{v}" for v in versions],
                      _MISSING_MSG)


_version_cache: dict[tuple[str, float], str] = {}
_lock = threading.Lock()


def _run_tool(args: list[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run an external tool (the single place where subprocesses start; tests patch this)."""
    for attempt in (1, 2):
        try:
            return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=120,
                                  stdin=subprocess.DEVNULL)
        except FileNotFoundError as e:
            raise AssemblerError(f"cannot run {args[0]}: {e}", hint=_MISSING_HINT) from None
        except subprocess.TimeoutExpired:
            if attempt == 2:    # once seen on a heavily loaded machine: retry once before giving up
                raise AssemblerError(f"{Path(args[0]).name} timed out twice after 120 s",
                                     hint="the machine may be overloaded; rerun the command") from None
    raise AssertionError("unreachable")


def _version_file(path: str, st: os.stat_result) -> Path:
    """Where the version a tool printed is kept between runs: named after the tool's path and
    the identity of the file it runs (device, inode, size, mtime), so an upgraded or replaced
    tool is asked again.  Asking costs two processes (~30 ms each) on every start-up of a run
    whose ELF is already cached."""
    ident = f"{path}\0{os.path.realpath(path)}\0{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    return cache_dir() / "tool-versions" / (hashlib.sha256(ident.encode()).hexdigest()[:32] + ".txt")


def _tool_version(path: str) -> str:
    try:
        st: os.stat_result | None = os.stat(path)
        key = (path, st.st_mtime if st else 0.0)
    except OSError:
        st, key = None, (path, 0.0)
    with _lock:
        v = _version_cache.get(key)
    if v is not None:
        return v
    vfile = _version_file(path, st) if st is not None else None
    if vfile is not None:
        try:
            v = vfile.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            v = None
    if v is None:
        r = _run_tool([path, "--version"])
        v = (r.stdout + r.stderr).strip()
        # llvm-mc --version lists the host CPU; drop it so the key is machine independent.
        v = "\n".join(ln for ln in v.splitlines() if "Host CPU" not in ln)
        if vfile is not None and r.returncode == 0 and v:
            try:
                _atomic_write(vfile, v.encode("utf-8"))
            except OSError:
                pass                  # a read-only cache: ask again next time
    with _lock:
        _version_cache[key] = v
    return v


# --------------------------------------------------------------------------------------------
# sources, includes, hashing

_INCLUDE_RE = re.compile(r'^\s*\.(include|incbin)\s+"([^"]+)"', re.MULTILINE)


def default_include_dirs() -> list[Path]:
    """The project's shared guest include directory (``guest_asm/include``), if it exists."""
    from emukern.resources import guest_asm_dir
    d = guest_asm_dir() / "include"
    return [d] if d.is_dir() else []


def _resolve_include(name: str, search: Sequence[Path]) -> Path | None:
    p = Path(name)
    if p.is_absolute():
        return p if p.is_file() else None
    for d in search:
        c = d / name
        if c.is_file():
            return c
    return None


def _collect_includes(text: str, search: Sequence[Path]) -> list[tuple[str, bytes]]:
    """Every file reachable through ``.include``/``.incbin`` (name, bytes), in a stable order.

    Unresolvable names are recorded with empty content (llvm-mc will report them).
    """
    out: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    todo: list[tuple[str, str]] = [(m.group(1), m.group(2)) for m in _INCLUDE_RE.finditer(text)]
    while todo:
        kind, name = todo.pop(0)
        path = _resolve_include(name, search)
        key = str(path.resolve()) if path else f"?{name}"
        if key in seen:
            continue
        seen.add(key)
        data = path.read_bytes() if path else b""
        out.append((f"{kind}:{name}:{key}", data))
        if kind == "include" and data:
            sub = data.decode("utf-8", "replace")
            todo.extend((m.group(1), m.group(2)) for m in _INCLUDE_RE.finditer(sub))
    return out


def cache_dir() -> Path:
    """Where assembled ELFs are cached: ``$EMUKERN_CACHE/asm`` or ``~/.cache/emukern/asm``."""
    base = os.environ.get("EMUKERN_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "emukern"
    return root / "asm"


def _cache_key(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()


def _atomic_write(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _clean_diagnostics(msg: str, tmp_path: str, display: str) -> str:
    return msg.replace(tmp_path, display).strip()


# --------------------------------------------------------------------------------------------
# an assembly error that means "wrong architecture"

_ERROR_LINE = re.compile(r"^.*?:\d+:\d+: error: (.*)$", re.M)
# what llvm-mc says of an instruction of another ISA: a name it does not know, or operands
# (x0, #1, [sp]) its own instructions cannot take
_FOREIGN = ("unrecognized instruction mnemonic", "unknown operand", "invalid operand for instruction",
            "invalid instruction", "unknown token in expression", "unrecognized instruction",
            "unknown directive")
_NEVER_ARCH = ("include", "could not find", "unmatched", "unexpected end of file")


def _errors(diag: str) -> list[str]:
    return [m.group(1).strip() for m in _ERROR_LINE.finditer(diag)]


def wrong_arch_error(exc: AssemblerError, display: str, arch: str) -> AssemblerError | None:
    """For a source assembled under the *default* architecture (nothing named one) that failed:
    when most of its errors are instructions or operands that architecture does not know, and
    the other architecture assembles it with fewer errors, an error that leads with the fix
    (--arch / an arch line) and cuts the assembler's output to its first error; else None (an
    include or syntax error, or a real mistake in a source of the right architecture, is left
    as it is)."""
    diag = getattr(exc, "diagnostics", None)
    if not diag:
        return None
    errs = _errors(diag)
    if not errs or any(any(w in e.lower() for w in _NEVER_ARCH) for e in errs):
        return None
    foreign = [e for e in errs if any(e.startswith(f) for f in _FOREIGN)]
    if 2 * len(foreign) < len(errs):
        return None
    other = "arm64" if _norm_arch(arch) == "riscv64" else "riscv64"
    retry = getattr(exc, "retry", None)
    if retry is not None:
        mc, inc_args, src_bytes = retry
        with tempfile.TemporaryDirectory(prefix="emukern-asm-") as td:
            src = os.path.join(td, "source.S")
            with open(src, "wb") as f:
                f.write(src_bytes)
            try:
                r = _run_tool([mc, "-filetype=obj", *MC_FLAGS[other], *inc_args, src, "-o",
                               os.path.join(td, "other.o")], cwd=td)
            except AssemblerError:
                return None
        if r.returncode != 0 and len(_errors(r.stderr or r.stdout)) >= len(errs):
            return None                     # not better as the other arch: a real mistake
    first = diag.split("\n")
    start = next(i for i, line in enumerate(first) if _ERROR_LINE.match(line))
    shown = "\n".join(first[start:start + 3])
    more = len(errs) - 1
    return AssemblerError(
        f"{display} looks like an {other} program: pass --arch {other}, or put '// arch: {other}' "
        f"on its first line (or keep it in an {other} folder)\n"
        f"(it was assembled as {arch}, the default, because nothing named its architecture; "
        f"{len(foreign)} of {len(errs)} errors are {arch} instructions or operands that do not exist. "
        f"The first{f', of {len(errs)}' if more else ''}:\n{shown})")


# --------------------------------------------------------------------------------------------
# public API


def detect_arch_from_source(path: str | Path) -> str | None:
    """Guess a guest source's architecture from its path or a ``# arch: ...`` first line.

    ``guest_asm/riscv/...`` (or any ``riscv``/``riscv64``/``rv64`` directory) gives ``"riscv64"``;
    an ``arm64``/``aarch64`` directory gives ``"arm64"``.  A first-line comment such as
    ``# arch: riscv64`` / ``// arch: arm64`` / ``/* arch: aarch64 */`` wins over the path.
    """
    p = Path(path)
    try:
        with open(p, "r", encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        first = ""
    m = re.match(r"\s*(?:#|//|/\*|;|@)\s*arch\s*[:=]\s*([A-Za-z0-9_]+)", first)
    if m and m.group(1).lower() in _ARCH_ALIASES:
        return _ARCH_ALIASES[m.group(1).lower()]
    for part in reversed(p.parts[:-1]):
        a = _ARCH_ALIASES.get(part.lower())
        if a:
            return a
    return None


def assemble(
    source: str | Path,
    arch: str,
    *,
    include_dirs: Iterable[str | Path] = (),
    text: str | None = None,
) -> Path:
    """Assemble and link a guest source into a static ELF; return the (cached) ELF's path.

    ``source`` is the ``.S`` file.  If ``text`` is given it is assembled instead of the file's
    contents, and ``source`` only names it (in diagnostics) and gives the directory searched for
    ``.include`` files; it need not exist.  Include search order: the source's directory, then
    ``include_dirs``, then the project's ``guest_asm/include``.

    Raises :class:`AssemblerError` when a tool is missing or llvm-mc/ld.lld report errors (the
    message carries their ``file:line:col:`` diagnostics).
    """
    arch = _norm_arch(arch)
    src = Path(source)
    if text is None:
        try:
            src_bytes = src.read_bytes()
        except OSError as e:
            raise AssemblerError(f"cannot read guest source {src}: {e.strerror or e}") from None
    else:
        src_bytes = text.encode("utf-8")
    src_dir = (src.parent if str(src.parent) else Path(".")).resolve()
    search: list[Path] = [src_dir]
    for d in list(include_dirs) + default_include_dirs():
        d = Path(d).resolve()
        if d not in search:
            search.append(d)

    mc, ld = find_tools()
    mc_args = ["-filetype=obj", *MC_FLAGS[arch]]
    inc_args: list[str] = []
    for d in search:
        inc_args += ["-I", str(d)]

    includes = _collect_includes(src_bytes.decode("utf-8", "replace"), search)
    parts: list[bytes] = [
        b"emukern-asm-v1", arch.encode(), src_bytes,
        "\0".join(mc_args).encode(), "\0".join(LD_FLAGS).encode(),
        _tool_version(mc).encode(), _tool_version(ld).encode(),
    ]
    for name, data in includes:
        parts += [name.encode(), data]
    key = _cache_key(parts)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", src.stem) or "prog"
    out = cache_dir() / f"{stem}-{arch}-{key[:24]}.elf"
    if out.is_file():
        return out

    display = str(source)
    with tempfile.TemporaryDirectory(prefix="emukern-asm-") as td:
        if text is not None:
            in_path = os.path.join(td, src.name or "source.S")
            with open(in_path, "wb") as f:
                f.write(src_bytes)
        else:
            in_path = str(src.resolve())
        obj = os.path.join(td, "prog.o")
        exe = os.path.join(td, "prog.elf")
        r = _run_tool([mc, *mc_args, *inc_args, in_path, "-o", obj], cwd=td)
        if r.returncode != 0 or not os.path.isfile(obj):
            diag = _clean_diagnostics(r.stderr or r.stdout, in_path, display)
            err = AssemblerError(
                f"assembling {display} for {arch} failed:\n{diag}",
                hint="fix the source line(s) named above (GNU-as syntax, no C preprocessor)",
            )
            # what wrong_arch_error() reads: the diagnostics and how to assemble the file again
            err.diagnostics = diag                                  # type: ignore[attr-defined]
            err.retry = (mc, inc_args, src_bytes)                   # type: ignore[attr-defined]
            raise err
        r = _run_tool([ld, *LD_FLAGS, obj, "-o", exe], cwd=td)
        if r.returncode != 0 or not os.path.isfile(exe):
            diag = _clean_diagnostics(r.stderr or r.stdout, in_path, display)
            raise AssemblerError(
                f"linking {display} for {arch} failed:\n{diag}",
                hint="guest programs must define a global _start and resolve every symbol "
                "themselves (no libc)",
            )
        data = Path(exe).read_bytes()
    _atomic_write(out, data)
    return out


def assemble_shared(source: str | Path, arch: str, *, linker_script: str, version_script: str,
                    soname: str) -> Path:
    """Assemble one source and link it as a shared object (ET_DYN) laid out by ``linker_script``
    and exporting what ``version_script`` names (symbol versions); return the cached file's path.

    What the kernel's vDSO images need (emukern/kernel/vdso.py): both hash tables, no build id,
    one page size on both architectures.  Cached like :func:`assemble`, the scripts in the key.
    """
    arch = _norm_arch(arch)
    src = Path(source)
    try:
        src_bytes = src.read_bytes()
    except OSError as e:
        raise AssemblerError(f"cannot read guest source {src}: {e.strerror or e}") from None
    mc, ld = find_tools()
    # riscv: the hard-float ABI's e_flags, which every riscv64 Linux object (the vDSO too) has
    abi = ("-target-abi=lp64d",) if arch == "riscv64" else ()
    mc_args = ["-filetype=obj", *MC_FLAGS[arch], *abi]
    ld_args = ["-shared", "-soname", soname, "--strip-all", "--hash-style=both", "--build-id=none",
               "-z", "max-page-size=4096", "-z", "common-page-size=4096", "--no-undefined",
               "-T", "link.lds", "--version-script", "version.map"]
    key = _cache_key([b"emukern-shared-v1", arch.encode(), src_bytes, linker_script.encode(),
                      version_script.encode(), "\0".join(mc_args).encode(),
                      "\0".join(ld_args).encode(), _tool_version(mc).encode(),
                      _tool_version(ld).encode()])
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", src.stem) or "lib"
    out = cache_dir() / f"{stem}-{arch}-{key[:24]}.so"
    if out.is_file():
        return out
    with tempfile.TemporaryDirectory(prefix="emukern-asm-") as td:
        Path(td, "link.lds").write_text(linker_script)
        Path(td, "version.map").write_text(version_script)
        obj, so = os.path.join(td, "lib.o"), os.path.join(td, "lib.so")
        r = _run_tool([mc, *mc_args, str(src.resolve()), "-o", obj], cwd=td)
        if r.returncode != 0 or not os.path.isfile(obj):
            raise AssemblerError(f"assembling {src} for {arch} failed:\n"
                                 f"{_clean_diagnostics(r.stderr or r.stdout, str(src), str(src))}")
        r = _run_tool([ld, *ld_args, obj, "-o", so], cwd=td)
        if r.returncode != 0 or not os.path.isfile(so):
            raise AssemblerError(f"linking {src} for {arch} as a shared object failed:\n"
                                 f"{(r.stderr or r.stdout).strip()}")
        data = Path(so).read_bytes()
    _atomic_write(out, data)
    return out


# --------------------------------------------------------------------------------------------
# snippets

_snippet_cache: dict[tuple[str, str, int], bytes] = {}
_ks_lock = threading.Lock()
_ks = None

# SVE registers (z0-z31, p0-p15) or SVE-only mnemonics: keystone cannot assemble these.
_SVE_RE = re.compile(r"\b(z\d{1,2}|p\d{1,2})(\.[bhsdq]|/[zm])?\b|\b(rdvl|addvl|addpl|cntb|cnth|"
                     r"cntw|cntd|ptrue|whilelo|whilelt|ld1[bhwd]|st1[bhwd])\b", re.IGNORECASE)


def _keystone():
    global _ks
    if _ks is None:
        try:
            import keystone  # type: ignore[import-untyped]
        except ImportError as e:  # pragma: no cover - keystone is a dependency
            raise AssemblerError(f"keystone-engine is not importable: {e}",
                                 hint="pip install keystone-engine") from None
        _ks = keystone.Ks(keystone.KS_ARCH_ARM64, keystone.KS_MODE_LITTLE_ENDIAN)
    return _ks


def assemble_arm64_snippet(text: str, addr: int = 0) -> bytes:
    """Assemble AArch64 base-ISA ``text`` in-process with keystone, as if placed at ``addr``.

    Instructions are separated by newlines or ``;``.  Raises :class:`AssemblerError` on errors.
    """
    key = (text, "arm64-ks", addr)
    got = _snippet_cache.get(key)
    if got is not None:
        return got
    import keystone  # type: ignore[import-untyped]

    with _ks_lock:
        ks = _keystone()
        try:
            enc, _count = ks.asm(text, addr)
        except keystone.KsError as e:
            raise AssemblerError(f"keystone cannot assemble AArch64 snippet {text!r}: {e}",
                                 hint="keystone knows the base ISA only; SVE needs llvm-mc "
                                 "(use assemble_snippet)") from None
    code = bytes(enc or b"")
    if not code and text.strip():
        raise AssemblerError(f"keystone produced no code for AArch64 snippet {text!r}")
    _snippet_cache[key] = code
    return code


def _llvm_mc_text_bytes(text: str, arch: str) -> bytes:
    from elftools.elf.elffile import ELFFile

    mc = _find_mc()
    with tempfile.TemporaryDirectory(prefix="emukern-snip-") as td:
        src = os.path.join(td, "snippet.S")
        obj = os.path.join(td, "snippet.o")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")
        r = _run_tool([mc, "-filetype=obj", *MC_FLAGS[arch], src, "-o", obj], cwd=td)
        if r.returncode != 0 or not os.path.isfile(obj):
            raise AssemblerError(
                f"llvm-mc cannot assemble {arch} snippet:\n"
                + _clean_diagnostics(r.stderr or r.stdout, src, "<snippet>")
            )
        with open(obj, "rb") as f:
            elf = ELFFile(f)
            sec = elf.get_section_by_name(".text")
            return bytes(sec.data()) if sec is not None else b""


def assemble_snippet(text: str, arch: str) -> bytes:
    """Assemble a few instructions to raw bytes (as if at address 0).

    AArch64 base-ISA text goes through keystone (in-process); RISC-V, SVE, or anything keystone
    rejects goes through ``llvm-mc -filetype=obj`` and the object's ``.text`` is returned.
    Relocations are *not* applied: branches to undefined symbols come back unresolved.
    Results are memoised per (text, arch).
    """
    arch = _norm_arch(arch)
    key = (text, arch, -1)
    got = _snippet_cache.get(key)
    if got is not None:
        return got
    code: bytes | None = None
    if arch == "arm64" and not _SVE_RE.search(text):
        try:
            code = assemble_arm64_snippet(text, 0)
        except AssemblerError:
            code = None
    if code is None:
        code = _llvm_mc_text_bytes(text, arch)
    _snippet_cache[key] = code
    return code
