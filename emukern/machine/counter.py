"""Exact instruction counting for a Unicorn CPU.

Two implementations with one interface:

* :class:`NativeCounter` — C hooks (``native/counter.c``) compiled once with the host C compiler
  and registered with ``uc_hook_add`` through ctypes.  By default they count whole translated
  blocks (a UC_HOOK_BLOCK callback; a block about to run past the deadline is split so the run
  still stops before the exact instruction, and a trap inside a block corrects the count from
  the trapping PC — see counter.c).  ``EMUKERN_EXACT_COUNT=1`` (or ``exact=True``) counts with
  a per-instruction UC_HOOK_CODE callback instead, as the debugger needs; both give the same
  counts (tests/machine/test_block_counter.py runs every guest both ways).
* :class:`PythonCounter` — the per-instruction logic as a Python ``UC_HOOK_CODE`` callback
  (about 1 MIPS), used when no C compiler is available (``EMUKERN_PURE_PYTHON=1`` forces it).

All count every instruction Unicorn executes and stop *before* the instruction that would pass
``deadline`` (measured: a deadline of 1000 leaves exactly 1000 instructions retired).
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
from typing import Any, Protocol

import unicorn
from unicorn import UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_INTR

from emukern.machine import uc_internal
from emukern.machine.uc_internal import Uc

_SRC = Path(__file__).with_name("native") / "counter.c"


class Counter(Protocol):
    @property
    def count(self) -> int: ...
    @property
    def deadline(self) -> int: ...
    @deadline.setter
    def deadline(self, value: int) -> None: ...
    kind: str


_U64 = ctypes.c_uint64
_SPLITS = 16                      # EK_SPLITS in counter.c


class _CounterStruct(ctypes.Structure):
    # the layout of ek_counter in counter.c
    _fields_ = [("count", _U64), ("deadline", _U64), ("guard_lo", _U64), ("guard_len", _U64),
                ("guard_open", _U64), ("guard_hit", _U64),
                ("rvc", _U64), ("pc_reg", _U64), ("intr_after", _U64), ("blk_start", _U64),
                ("blk_end", _U64), ("gx_lo", _U64), ("gx_hi", _U64), ("nsplit", _U64),
                ("split_at", _U64 * _SPLITS), ("split_hk", _U64 * _SPLITS), ("gen", _U64), ("splits", _U64), ("fixes", _U64), ("cache", ctypes.c_void_p),
                ("resync", _U64)]


_CACHE_ENTRIES = 1 << 13          # EK_CACHE in counter.c; 16 bytes each


def exact_forced() -> bool:
    """Count every instruction with a code hook (no block counting) when EMUKERN_EXACT_COUNT=1.

    Block counting is the default: its counts and fault PCs equal the per-instruction hook's
    (tests/machine/test_block_counter.py runs every guest_asm program and C programs, the
    faulting ones among them, both ways).  A memory fault inside a block reports the precise
    faulting PC because Unicorn restores it from the block's instruction-start records
    (cputlb.c), unless a hook wrote the PC since the last block exit check; the counter leaves
    the next block once after such a write (``pc_written``) so that it always does."""
    return os.environ.get("EMUKERN_EXACT_COUNT", "") == "1"


_HOOK_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p)
_native_lib: ctypes.CDLL | None = None
_native_error: str | None = None


def _unicorn_lib_path() -> Path:
    return Path(unicorn.__file__).parent / "lib" / "libunicorn.so.2"


def _cache_dir() -> Path:
    base = os.environ.get("EMUKERN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "emukern")
    return Path(base) / "native"


def _build_native(src: Path = _SRC, stem: str = "ekcounter") -> ctypes.CDLL:
    """Compile counter.c (or another of native/'s sources: ``src``, cached as ``stem``-HASH.so)
    against the installed libunicorn (cached by source+library hash)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise OSError("no C compiler (cc/gcc/clang) on PATH")
    libuc = _unicorn_lib_path()
    key = hashlib.sha256(src.read_bytes() + str(libuc).encode() + sys.version.encode()).hexdigest()[:16]
    out_dir = _cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{stem}-{key}.so"
    if not out.exists():
        fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".so")
        os.close(fd)
        inc = Path(unicorn.__file__).parent / "include"
        cmd = [cc, "-O2", "-shared", "-fPIC", f"-I{inc}", str(src), "-o", tmp, f"-L{libuc.parent}",
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


def _hook_native(uc: Uc, kind: int, fn_name: str, user_data: Any) -> ctypes.c_size_t:
    """uc_hook_add of one of counter.c's hooks (for every address); its handle."""
    fn = ctypes.cast(getattr(_native_lib, fn_name), ctypes.c_void_p)
    status, hh = uc_internal.hook_add_native(uc, kind, fn, user_data)
    if status != 0:
        raise OSError(f"uc_hook_add failed with status {status}")
    return hh


def add_empty_block_hook(uc: Uc) -> None:
    """Install counter.c's empty block hook on a bare Unicorn (the bench's floor row: what the
    per-block hook call costs with no counting in it).  Raises OSError without the native library."""
    if not native_available():
        raise OSError(f"the native counter is unavailable: {native_error()}")
    _hook_native(uc, UC_HOOK_BLOCK, "ek_empty_block_hook", None)


def add_count_block_hook(uc: Uc) -> ctypes.c_uint64:
    """Install counter.c's adding block hook on a bare Unicorn (the bench's second floor row: a
    hook that only adds size/4 to a counter, the least any per-block counting does); the counter
    it adds to (keep it alive while the Unicorn runs).  Raises OSError without the native library."""
    if not native_available():
        raise OSError(f"the native counter is unavailable: {native_error()}")
    count = ctypes.c_uint64(0)
    _hook_native(uc, UC_HOOK_BLOCK, "ek_add_block_hook", ctypes.cast(ctypes.pointer(count), ctypes.c_void_p))
    return count


class RvvStruct(ctypes.Structure):
    """The layout of ek_rvv in counter.c: the RISC-V vector unit's configuration state the C INTR
    hook ``ek_rvv_intr`` executes vsetvli/vsetivli/vsetvl with (emukern.machine.rvv.native)."""
    _fields_ = [("on", _U64), ("vs", _U64), ("known", _U64), ("vl", _U64), ("vtype", _U64),
                ("vlen", _U64), ("cost", _U64), ("n", _U64),
                ("counter", ctypes.c_void_p), ("py", ctypes.c_void_p), ("pc_reg", _U64),
                ("x0_reg", _U64), ("handled", _U64), ("ecall_no", _U64), ("sys", _U64 * 8),
                ("py_ecall", ctypes.c_void_p)]


def native_rvv_intr() -> ctypes.c_void_p | None:
    """counter.c's ``ek_rvv_intr`` as a c_void_p (for uc_hook_add), None without the library."""
    if not native_available():
        return None
    assert _native_lib is not None
    return ctypes.cast(_native_lib.ek_rvv_intr, ctypes.c_void_p)


def native_tlb_fill() -> ctypes.c_void_p | None:
    """counter.c's ``ek_tlb_fill`` (a UC_HOOK_TLB_FILL for the virtual TLB: the identity mapping,
    data entries without fetch permission) as a c_void_p, None without the library."""
    if not native_available():
        return None
    assert _native_lib is not None
    return ctypes.cast(_native_lib.ek_tlb_fill, ctypes.c_void_p)


class RiscvStateFns:
    """counter.c's RISC-V privileged-state helpers (``ek_rv_*``), each one ctypes call making the
    libunicorn calls the Python sequences in cpu_riscv make one call each (the M-mode window of a
    CSR access, the FP context's batch write plus fcsr).  Called with the GIL held and without
    argtypes, as uc_internal.raw_fn's register accessors are: they return at once and run no
    hook, and every argument is passed in its C form (the engine handle, ints, byref pointers)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        gil = ctypes.PyDLL(lib._name, handle=lib._handle)
        self.csr = gil.ek_rv_csr            # (engine, regid, &value or None) -> the CSR's value
        self.csr.restype = ctypes.c_uint64
        self.set_fs = gil.ek_rv_set_fs      # (engine, fs)
        self.set_fs.restype = None
        self.load_fp = gil.ek_rv_load_fp    # (engine, 33 slots f0..f31 fcsr, or None: zeros)
        self.load_fp.restype = None
        self.save_fp = gil.ek_rv_save_fp    # (engine, 33 slots)
        self.save_fp.restype = None
        ids = (ctypes.c_int32 * 5)()
        lib.ek_rv_ids(ids)
        self.ids = tuple(ids)               # PRIV, MSTATUS, FCSR, F0, F31 as compiled in


_rv_state: RiscvStateFns | None = None


def riscv_state_fns(priv: int, mstatus: int, fcsr: int, fregs: tuple[int, ...]) -> RiscvStateFns | None:
    """The ``ek_rv_*`` helpers, or None (use the Python sequences) without the native library,
    with ``EMUKERN_NATIVE_CSR=0`` (read when the CPU is built: the tests compare both paths), or
    when the register ids counter.c was compiled with are not the ones the caller uses
    (``fregs``: f0..f31)."""
    global _rv_state
    if os.environ.get("EMUKERN_NATIVE_CSR", "1") == "0" or not native_available():
        return None
    assert _native_lib is not None
    if _rv_state is None:
        _rv_state = RiscvStateFns(_native_lib)
    f0 = _rv_state.ids[3]
    if _rv_state.ids != (priv, mstatus, fcsr, f0, f0 + 31) or tuple(fregs) != tuple(range(f0, f0 + 32)):
        return None
    return _rv_state


class NativeCounter:
    """The C counter.  ``block`` mode (default) counts per translated block; ``exact`` mode per
    instruction.  ``pc_reg`` is Unicorn's id of the PC (a split resumes by writing it),
    ``variable_length`` says instructions are 2 or 4 bytes (RISC-V C) and ``intr_pc_after`` that
    the INTR hook sees the PC after the trapping instruction (RISC-V)."""

    kind = "native"

    def __init__(self, uc: Uc, pc_reg: int = 0, variable_length: bool = False,
                 intr_pc_after: bool = False, exact: bool | None = None) -> None:
        assert _native_lib is not None
        self._uc = uc
        self._engine = uc_internal.handle(uc)     # the engine handle ek_fix takes
        self._cache = (ctypes.c_uint8 * (16 * _CACHE_ENTRIES))()
        self._s = _CounterStruct(0, 2**63, 0, 0, 0, 0, int(variable_length), pc_reg, int(intr_pc_after),
                                 0, 0, 0, 0, 0, (_U64 * _SPLITS)(), (_U64 * _SPLITS)(), 1, 0, 0, ctypes.cast(self._cache, ctypes.c_void_p))
        self._last_gen = 1              # the newest generation given out (code_changed)
        self._sp = ctypes.cast(ctypes.pointer(self._s), ctypes.c_void_p)
        self._fix = _native_lib.ek_fix
        self._fix.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int]
        self._fix.restype = None
        self._hooks: list[ctypes.c_size_t] = []
        self._clean: int | None = None     # see unsplit
        self.before_rehook: Any = None      # called before set_exact changes the hooks
        self.exact = exact_forced() if exact is None else exact
        self._install()

    def _add(self, kind: int, fn_name: str) -> None:
        self._hooks.append(_hook_native(self._uc, kind, fn_name, self._sp))

    def _install(self) -> None:
        if self.exact:
            self._add(UC_HOOK_CODE, "ek_count_hook")
        else:
            self._add(UC_HOOK_BLOCK, "ek_block_hook")
            # before the CPU's own INTR hook (Unicorn calls hooks in the order they were added),
            # so the count the kernel sees at a trap is already corrected
            self._add(UC_HOOK_INTR, "ek_intr_hook")

    def set_exact(self, exact: bool) -> None:
        """Switch between block and per-instruction counting (only while the CPU is stopped).

        A hook is compiled into the blocks translated while it exists, so every translation is
        dropped: blocks translated for one mode would count wrongly in the other."""
        if exact == self.exact:
            return
        if self.before_rehook is not None:
            self.before_rehook()        # (the CPU keeps one engine from now on: see cpu_base)
        self.unsplit(everything=True)
        for hh in self._hooks:
            uc_internal.hook_del_native(self._uc, hh)
        self._hooks.clear()
        self.exact = exact
        self._s.blk_start = self._s.blk_end = 0
        self._install()
        self._uc.ctl_flush_tb()

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

    def fix(self, pc: int) -> None:
        """A fault at ``pc`` (the instruction that faulted, counted as executed, as the per-
        instruction hook had counted it): the rest of its block did not run."""
        s = self._s
        if s.blk_end and s.blk_start <= pc < s.blk_end:
            self._fix(self._engine, self._sp, pc, 1)

    def code_changed(self) -> None:
        """Guest code may have changed (written, unmapped, remapped): recount blocks.

        The cached RISC-V block counts are tagged with a generation; a new one makes every
        cached count stale."""
        self._last_gen += 1
        self._s.gen = self._last_gen
        self._s.blk_start = self._s.blk_end = 0

    def view(self) -> tuple[int, Any, int]:
        """The counts cached for the code in view: their generation, the cache holding them and
        its address (the struct's pointer to it), for :meth:`set_view`."""
        s = self._s
        return int(s.gen), self._cache, s.cache

    def set_view(self, view: tuple[int, Any, int] | None) -> None:
        """Count with a cache of block counts of the code now in view: one :meth:`view`
        returned for an engine of the CPU taken again for the address space it kept (its blocks
        are the same bytes at the same addresses, so the counts are still right), or, for
        ``None`` (an engine with no code counted yet), a new empty one.

        Each engine has its own cache: two processes forked from one program run the same
        blocks at the same addresses, and in one shared direct-mapped cache each would evict
        the other's count of every block on each switch."""
        if view is None:
            self._cache = (ctypes.c_uint8 * (16 * _CACHE_ENTRIES))()
            self._s.cache = ctypes.cast(self._cache, ctypes.c_void_p)
            self.code_changed()
            return
        # (the address kept in the view: a ctypes.cast of the cache per process switch cost
        # more than the rest of this method)
        s = self._s
        gen, self._cache, s.cache = view
        s.gen = gen
        s.blk_start = s.blk_end = 0

    def pc_written(self) -> None:
        """A hook wrote the PC: the next block is left once so that Unicorn restores precise
        fault PCs again (see ek_block_hook in counter.c)."""
        self._s.resync = 1

    def unsplit(self, everything: bool = False) -> int:
        """Remove the stop hooks splits added (after the run), and the translations calling
        them, so those blocks run hook-free again.  Those in the guarded range stay unless
        ``everything``: machine-owned code that never changes and that arm64's stub_sync stops
        inside at the same place every time.  Returns the number removed."""
        s = self._s
        n = s.nsplit
        if not n:
            return 0
        # no split made since the last unsplit left only kept ones (the native side counts every
        # split it makes in `splits`; CodeGuard forgets this when it sets the guarded range):
        # nothing to remove, without walking the kept ones again -- Cpu.run calls this twice per
        # run, and an SMP run with a contended lock runs each CPU once per trap
        made = s.splits
        if made == self._clean and not everything:
            return 0
        keep_lo, keep_hi = (0, 0) if everything else (s.guard_lo, s.guard_lo + s.guard_len)
        kept = 0
        removed = 0
        for i in range(n):
            at, hk = s.split_at[i], s.split_hk[i]
            if keep_lo <= at < keep_hi:
                s.split_at[kept], s.split_hk[kept] = at, hk
                kept += 1
                continue
            uc_internal.hook_del_native(self._uc, ctypes.c_size_t(hk))
            self._uc.ctl_remove_cache(at, at + 1)
            removed += 1
        s.nsplit = kept
        self._clean = made if not everything else None
        return removed

    def take_splits(self) -> tuple[int, list[tuple[int, int]], int | None]:
        """The split hooks left in the engine now in use (the kept ones: see unsplit), taken off
        the counter's books: the CPU is changing engine (cpu_base's engines per address space),
        and a split's hook handle belongs to the engine it was added to."""
        s = self._s
        n = s.nsplit
        if not n:                   # (the common case: a switch between processes at no split)
            state: tuple[int, list[tuple[int, int]], int | None] = (0, [], self._clean)
        else:
            state = (n, [(s.split_at[i], s.split_hk[i]) for i in range(n)], self._clean)
            s.nsplit = 0
        self._clean = None
        return state

    def put_splits(self, state: tuple[int, list[tuple[int, int]], int | None]) -> None:
        """Back on the books: the splits :meth:`take_splits` took for the engine used again."""
        n, pairs, clean = state
        s = self._s
        if n or s.nsplit:
            for i, (at, hk) in enumerate(pairs):
                s.split_at[i], s.split_hk[i] = at, hk
            s.nsplit = n
        self._clean = clean

    def stats(self) -> dict[str, int]:
        s = self._s
        return {"splits": s.splits, "fixes": s.fixes}


class PythonCounter:
    kind = "python"

    exact = True

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


    def set_exact(self, exact: bool) -> None:
        pass                        # always per instruction

    def fix(self, pc: int) -> None:
        pass

    def code_changed(self) -> None:
        pass

    def view(self) -> tuple[int, Any, int]:
        return 0, None, 0   # (nothing cached: counts come from the per-instruction hook)

    def set_view(self, view: tuple[int, Any, int] | None) -> None:
        pass

    def pc_written(self) -> None:
        pass            # a code hook before every instruction keeps Unicorn's PC synced

    def unsplit(self, everything: bool = False) -> int:
        return 0

    def stats(self) -> dict[str, int]:
        return {}


def make_counter(uc: Uc, pc_reg: int = 0, variable_length: bool = False,
                 intr_pc_after: bool = False) -> NativeCounter | PythonCounter:
    if native_available():
        return NativeCounter(uc, pc_reg, variable_length, intr_pc_after)
    return PythonCounter(uc)



class CodeGuard:
    """Stops the CPU before any instruction in ``[begin, end]`` runs while the guard is closed.

    It lives in the counter (the native hook or the Python one), which sees every instruction
    anyway, so guarding costs one compare per instruction and no extra hook.  ``hit`` is the
    address stopped at (0: none); the stopped instruction is not counted."""

    def __init__(self, counter: "NativeCounter | PythonCounter", begin: int, end: int) -> None:
        self._s = counter._guard_s if isinstance(counter, PythonCounter) else counter._s
        if isinstance(counter, NativeCounter):
            counter._clean = None           # the splits it kept were kept for another range
        self._s.guard_lo = begin
        self._s.guard_len = end - begin + 1
        self._s.guard_open = 0
        self._s.guard_hit = 0
        self._lo, self._hi = begin, end + 1
        self._window()

    def _window(self) -> None:
        # the block counter's copy: the range is empty while the guard is open
        s = self._s
        s.gx_lo, s.gx_hi = (0, 0) if s.guard_open else (self._lo, self._hi)

    @property
    def open(self) -> bool:
        return bool(self._s.guard_open)

    @open.setter
    def open(self, value: bool) -> None:
        self._s.guard_open = int(value)
        self._window()

    @property
    def hit(self) -> int:
        return self._s.guard_hit

    def clear(self) -> None:
        self._s.guard_hit = 0
