"""Exact instruction counting for a Unicorn CPU.

Two implementations with one interface:

* :class:`NativeCounter` — a 20-line C hook (``native/counter.c``) compiled once with the host C
  compiler and registered with ``uc_hook_add`` through ctypes.  Measured ~0.5 of raw Unicorn speed.
* :class:`PythonCounter` — the same logic as a Python ``UC_HOOK_CODE`` callback (about 1 MIPS),
  used when no C compiler is available (set ``EMUKERN_PURE_PYTHON=1`` to force it).

Both count every instruction Unicorn executes and stop *before* the instruction that would pass
``deadline`` — the hook runs before each instruction and ``uc_emu_stop`` from there prevents it
from executing (measured: a deadline of 1000 leaves exactly 1000 instructions retired).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Protocol

import unicorn
from unicorn import UC_HOOK_CODE, Uc

_SRC = Path(__file__).with_name("native") / "counter.c"


class Counter(Protocol):
    @property
    def count(self) -> int: ...
    @property
    def deadline(self) -> int: ...
    @deadline.setter
    def deadline(self, value: int) -> None: ...
    kind: str


class _CounterStruct(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("deadline", ctypes.c_uint64), ("guard_lo", ctypes.c_uint64),
                ("guard_len", ctypes.c_uint64), ("guard_open", ctypes.c_uint64), ("guard_hit", ctypes.c_uint64)]


_HOOK_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p)
_native_lib: ctypes.CDLL | None = None
_native_error: str | None = None


def _unicorn_lib_path() -> Path:
    return Path(unicorn.__file__).parent / "lib" / "libunicorn.so.2"


def _cache_dir() -> Path:
    base = os.environ.get("EMUKERN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "emukern")
    return Path(base) / "native"


def _build_native() -> ctypes.CDLL:
    """Compile counter.c against the installed libunicorn (cached by source+library hash)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise OSError("no C compiler (cc/gcc/clang) on PATH")
    libuc = _unicorn_lib_path()
    key = hashlib.sha256(_SRC.read_bytes() + str(libuc).encode() + sys.version.encode()).hexdigest()[:16]
    out_dir = _cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"ekcounter-{key}.so"
    if not out.exists():
        fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".so")
        os.close(fd)
        cmd = [cc, "-O2", "-shared", "-fPIC", str(_SRC), "-o", tmp, f"-L{libuc.parent}",
               f"-l:{libuc.name}", f"-Wl,-rpath,{libuc.parent}"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            os.unlink(tmp)
            raise OSError(f"building the native counter failed: {res.stderr.strip()}")
        os.replace(tmp, out)
    return ctypes.CDLL(str(out))


def native_available() -> bool:
    global _native_lib, _native_error
    if os.environ.get("EMUKERN_PURE_PYTHON"):
        return False
    if _native_lib is None and _native_error is None:
        try:
            _native_lib = _build_native()
        except OSError as exc:
            _native_error = str(exc)
    return _native_lib is not None


def native_error() -> str | None:
    return _native_error


class NativeCounter:
    kind = "native"

    def __init__(self, uc: Uc) -> None:
        from unicorn.unicorn_py3.unicorn import uclib  # the ctypes handle the binding uses

        assert _native_lib is not None
        self._s = _CounterStruct(0, 2**63, 0, 0, 0, 0)
        self._hh = ctypes.c_size_t()
        fn = ctypes.cast(_native_lib.ek_count_hook, ctypes.c_void_p)
        status = uclib.uc_hook_add(uc._uch, ctypes.byref(self._hh), UC_HOOK_CODE, fn,
                                   ctypes.cast(ctypes.pointer(self._s), ctypes.c_void_p),
                                   ctypes.c_uint64(1), ctypes.c_uint64(0))
        if status != 0:
            raise OSError(f"uc_hook_add failed with status {status}")

    @property
    def count(self) -> int:
        return self._s.count

    @count.setter
    def count(self, value: int) -> None:
        self._s.count = value

    @property
    def deadline(self) -> int:
        return self._s.deadline

    @deadline.setter
    def deadline(self, value: int) -> None:
        self._s.deadline = max(0, min(value, 2**63))


class PythonCounter:
    kind = "python"

    def __init__(self, uc: Uc) -> None:
        self.count = 0
        self.deadline = 2**63
        # the guard fields (see CodeGuard); not named _s: Cpu reads a counter's `_s` as the
        # native struct holding the live count
        self._guard_s = _CounterStruct(0, 0, 0, 0, 0, 0)
        uc.hook_add(UC_HOOK_CODE, self._hook)

    def _hook(self, uc: Uc, address: int, size: int, _ud: object) -> None:
        if self.count >= self.deadline:
            uc.emu_stop()
            return
        g = self._guard_s
        if 0 <= address - g.guard_lo < g.guard_len and not g.guard_open:
            if not g.guard_hit:
                g.guard_hit = address
            uc.emu_stop()
            return
        self.count += 1


def make_counter(uc: Uc) -> NativeCounter | PythonCounter:
    if native_available():
        return NativeCounter(uc)
    return PythonCounter(uc)



class CodeGuard:
    """Stops the CPU before any instruction in ``[begin, end]`` runs while the guard is closed.

    It lives in the counter (the native hook or the Python one), which sees every instruction
    anyway, so guarding costs one compare per instruction and no extra hook.  ``hit`` is the
    address stopped at (0: none); the stopped instruction is not counted."""

    def __init__(self, counter: "NativeCounter | PythonCounter", begin: int, end: int) -> None:
        self._s = counter._guard_s if isinstance(counter, PythonCounter) else counter._s
        self._s.guard_lo = begin
        self._s.guard_len = end - begin + 1
        self._s.guard_open = 0
        self._s.guard_hit = 0

    @property
    def open(self) -> bool:
        return bool(self._s.guard_open)

    @open.setter
    def open(self, value: bool) -> None:
        self._s.guard_open = int(value)

    @property
    def hit(self) -> int:
        return self._s.guard_hit

    def clear(self) -> None:
        self._s.guard_hit = 0
