"""The one module of emukern that reaches into the Unicorn Python binding's internals.

emukern's hot paths call libunicorn's C functions directly through ctypes (the binding's
wrappers cost about twice as much), hook C callbacks in with ``uc_hook_add``, and share the
binding's convention for exceptions raised inside hooks.  All of that needs things the binding
does not export: the engine handle (``Uc._uch``), the loaded library (``uclib`` in
``unicorn.unicorn_py3.unicorn``), the pending hook exception (``Uc._hook_exception``) and the
coprocessor-register structure (``UcRegCP64``).  They are reached here only, behind small typed
functions; everything else in emukern uses the binding's public API, this module, and
:mod:`emukern.machine.regs` for register ids.

``Uc`` and ``UcError`` are re-exported with the types of the Python 3 binding (the package's
``unicorn.Uc`` is the same class at run time, but type checkers follow its Python 2 branch).
"""
from __future__ import annotations

import ctypes
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from unicorn.unicorn_py3.unicorn import Uc as Uc
    from unicorn.unicorn_py3.unicorn import UcError as UcError
else:
    from unicorn import Uc, UcError

from unicorn import UC_HOOK_CODE, UC_HOOK_INTR
from unicorn.arm64_const import UC_ARM64_REG_CP_REG
from unicorn.unicorn_const import UC_CTL_IO_WRITE, UC_CTL_TLB_FLUSH
from unicorn.unicorn_py3.unicorn import uclib as _uclib

__all__ = ["Uc", "UcError", "RawFn", "handle", "raw_fn", "bound_fn", "hook_add_native", "hook_del_native",
           "add_intr_callback", "INTR_CFUNC", "emu_starter", "keep_hook_exception", "tlb_flusher",
           "cp_reg_writer", "EngineSet", "engines", "configure", "hook_add_py", "hook_del_py", "use_tlb_fill", "map_fixed",
           "fault_address_at", "fault_reader"]

# a libunicorn function called with C-typed arguments, returning its uc_err status
RawFn = Callable[..., int]

# void (*)(uc_engine *uc, uint32_t intno, void *user_data): a UC_HOOK_INTR callback
INTR_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)

_CTL_TLB_FLUSH = UC_CTL_TLB_FLUSH | (UC_CTL_IO_WRITE << 30)   # uc_ctl_flush_tlb()


def handle(uc: Uc) -> Any:
    """The engine handle (``uc_engine *``, a ctypes c_void_p) libunicorn's functions take first."""
    return uc._uch


# the same library through ctypes' PyDLL flavour: its functions are called with the GIL held
_uclib_gil = ctypes.PyDLL(_uclib._name, handle=_uclib._handle)


def raw_fn(name: str, keep_gil: bool = False) -> RawFn:
    """A new ctypes function object for libunicorn's ``name`` with no argtypes (returning the
    uc_err int): callers pass C-typed arguments only (the :func:`handle`, byref/array pointers,
    int ids) and skip the per-call argtypes conversion — measured at half of a uc_reg_write and
    two thirds of an 8-register uc_reg_read_batch.

    ``keep_gil``: call it without releasing Python's GIL (and re-taking it after), which a plain
    ctypes call does around every foreign call — measured at a fifth of a uc_reg_write here.  Only
    for functions that return at once and never run guest code or a hook (the register
    accessors): a call that runs the guest (uc_emu_start) must let the GIL go."""
    fn = (_uclib_gil if keep_gil else _uclib)[name]     # (indexing makes a fresh object; the
    fn.restype = ctypes.c_int                           # binding's own keeps its argtypes)
    return fn


def bound_fn(name: str) -> RawFn:
    """The binding's own function object for ``name`` (with its argtypes)."""
    return getattr(_uclib, name)


def hook_add_native(uc: Uc, kind: int, fn: Any, user_data: Any = None, begin: int = 1,
                    end: int = 0) -> tuple[int, ctypes.c_size_t]:
    """``uc_hook_add`` of a C function (``fn``: a c_void_p, e.g. from a compiled library or a
    ctypes callback) for ``begin..end`` (1, 0: every address): (status, hook handle)."""
    hh = ctypes.c_size_t()
    status = _uclib.uc_hook_add(handle(uc), ctypes.byref(hh), kind, fn, user_data,
                                ctypes.c_uint64(begin), ctypes.c_uint64(end))
    es = engines(uc)
    if status == 0 and es is not None:
        es.record("hook", kind, fn, user_data, begin, end, hh.value)
    return int(status), hh


def hook_del_native(uc: Uc, hh: ctypes.c_size_t) -> int:
    """``uc_hook_del`` of a handle :func:`hook_add_native` returned (or a split hook's, as a
    c_size_t); its status."""
    es = engines(uc)
    if es is not None:
        es.forget_hook(hh.value)
    return int(_uclib.uc_hook_del(handle(uc), hh))


CODE_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p)


def hook_code_local(uc: Uc, cb: Any, begin: int, end: int, user_data: Any = None) -> ctypes.c_size_t | None:
    """A UC_HOOK_CODE hook for ``begin..end`` on the engine ``uc`` points at *now* only: not
    recorded for new engines (the caller keeps such hooks per engine).  ``cb``: a
    :data:`CODE_CFUNC` callback, or a C function's address (a c_void_p) called with
    ``user_data``.  The handle, or None when libunicorn refuses it."""
    hh = ctypes.c_size_t()
    fn = cb if isinstance(cb, ctypes.c_void_p) else ctypes.cast(cb, ctypes.c_void_p)
    status = _uclib.uc_hook_add(handle(uc), ctypes.byref(hh), UC_HOOK_CODE, fn,
                                user_data, ctypes.c_uint64(begin), ctypes.c_uint64(end))
    return None if status else hh


def hook_del_local(uc: Uc, hh: ctypes.c_size_t) -> None:
    """``uc_hook_del`` of a :func:`hook_code_local` handle on the engine ``uc`` points at now."""
    _uclib.uc_hook_del(handle(uc), hh)


def add_intr_callback(uc: Uc, hook: Callable[[int, int, Any], None]) -> Any:
    """``hook(handle, intno, user_data)`` as a bare ctypes UC_HOOK_INTR callback (the binding's
    dispatcher frames skipped).  Returns the callback, which must stay alive while the hook is
    installed; raises OSError when libunicorn refuses it."""
    cb = INTR_CFUNC(hook)
    status, _hh = hook_add_native(uc, UC_HOOK_INTR, ctypes.cast(cb, ctypes.c_void_p), None)
    if status:
        raise OSError("uc_hook_add failed")
    return cb


def emu_starter(uc: Uc, until: int) -> Callable[[int], None]:
    """``uc.emu_start(pc, until)`` through an argtype-less function pointer: the same libunicorn
    call and the same error handling as the binding's (a bad status raises UcError; an exception
    a hook kept for it (:func:`keep_hook_exception`, the binding's hooks) is raised once the run
    has stopped).  The binding's conversion of the five arguments is ~0.7 us of a ~2.4 us
    start/stop, and an SMP run with a contended lock starts a CPU once per trap."""
    es = raw_fn("uc_emu_start")
    uch = handle(uc)
    c_until, zero, count = ctypes.c_uint64(until), ctypes.c_uint64(0), ctypes.c_size_t(0)
    u64 = ctypes.c_uint64

    def start(pc: int) -> None:
        uc._hook_exception = None
        status = es(uch, u64(pc), c_until, zero, count)
        if status:
            raise UcError(status)
        exc = uc._hook_exception
        if exc is not None:
            raise exc
    return start


def keep_hook_exception(uc: Uc, exc: BaseException) -> None:
    """What the binding's hook guard does with an exception raised in a hook: keep the first one
    for ``emu_start`` to raise, and stop the CPU."""
    if uc._hook_exception is None:
        uc._hook_exception = exc  # type: ignore[assignment]   # (the binding keeps BaseException too)
    uc.emu_stop()


def tlb_flusher(uc: Uc) -> Callable[[], int]:
    """``uc_ctl_flush_tlb(uc)`` (the binding has no wrapper for it) as a function; its status."""
    ctl, uch = _uclib.uc_ctl, handle(uc)

    def flush() -> int:
        return int(ctl(uch, _CTL_TLB_FLUSH))
    return flush


def cp_reg_writer(uc: Uc, enc: tuple[int, int, int, int, int]) -> Callable[[int], None]:
    """A writer of one AArch64 system register ``enc`` = (op0, op1, crn, crm, op2): a direct
    libunicorn call on a prebuilt uc_arm64_cp_reg (the binding's reg_write picks the register
    class through a generator and builds the structure on every call)."""
    from unicorn.unicorn_py3.arch.arm64 import UcRegCP64
    op0, op1, crn, crm, op2 = enc
    reg = UcRegCP64(crn, crm, op0, op1, op2, 0)
    ref, fn, uch, rid = ctypes.byref(reg), _uclib.uc_reg_write, handle(uc), UC_ARM64_REG_CP_REG

    def write(value: int) -> None:
        reg.val = value
        status = fn(uch, rid, ref)
        if status:
            raise UcError(status, rid)
    return write


# ---- several engines behind one Uc ------------------------------------------------------------
# A CPU keeps one Unicorn engine per address space it runs (cpu_base: "Engines per address
# space"), so that a switch between processes neither remaps memory nor loses translated code.
# Everything of emukern that talks to libunicorn holds the *same* handle object (the Uc's
# ``_uch``, a c_void_p: the register closures, the emu_start and TLB-flush functions, the
# binding's own methods), so changing that object's value points all of them at another engine
# at once.  What an engine needs before it can stand in for the first one -- the ctl settings
# that must precede its initialisation, the hooks, the machine's own fixed regions -- is
# recorded here as it is done (EngineSet.record) and done again on every new engine, in the
# same order (Unicorn calls hooks of one kind in the order they were added).

_SETUP_ATTR = "_ek_engine_setup"


class EngineSet:
    """The engines of one Uc: which one its handle points at, the set-up steps each one gets,
    and their closing (the binding's finalizer would only close the one current when the Uc is
    collected, so it is replaced by one that closes them all)."""

    def __init__(self, uc: Uc, arch: int, mode: int) -> None:
        self.uc = uc
        self.arch, self.mode = arch, mode
        self.steps: list[tuple[str, tuple[Any, ...]]] = []
        self._hooks: set[int] = set()         # handles of the recorded hooks (on the first engine)
        self.replaying = False
        self.first = int(handle(uc).value)
        self.handles: set[int] = {self.first}
        fin = getattr(uc, "_Uc__finalizer", None)
        if fin is not None:
            fin.detach()
        self._fin = weakref.finalize(uc, _close_all, self.handles)
        self._ctx: ctypes.c_void_p | None = None     # made on first use (see copy_state)
        setattr(uc, _SETUP_ATTR, self)

    def record(self, kind: str, *args: Any) -> None:
        if not self.replaying:
            self.steps.append((kind, args))
            if kind in ("hook", "pyhook"):
                self._hooks.add(args[-1])

    def forget_hook(self, hh: int) -> None:
        """A hook recorded as added was deleted: new engines do not get it."""
        if hh not in self._hooks:
            return                  # (the counter's splits, added from C, are not recorded)
        self._hooks.discard(hh)
        self.steps = [s for s in self.steps if not (s[0] in ("hook", "pyhook") and s[1][-1] == hh)]

    @property
    def current(self) -> int:
        return int(handle(self.uc).value)

    def select(self, h: int) -> None:
        handle(self.uc).value = h

    def open(self) -> int:
        """A new engine, set up as the first one was (left selected)."""
        h = ctypes.c_void_p()
        status = _uclib.uc_open(self.arch, self.mode, ctypes.byref(h))
        if status != 0:
            raise UcError(status)
        handle = h.value
        assert handle is not None            # uc_open succeeded
        self.handles.add(handle)
        self.select(handle)
        self.replaying = True
        try:
            for kind, args in self.steps:
                if kind == "ctl":
                    getattr(self.uc, args[0])(*args[1])
                elif kind == "hook":
                    status, _hh = hook_add_native(self.uc, *args[:-1])
                    if status != 0:
                        raise UcError(status)
                elif kind == "pyhook":
                    self.uc.hook_add(*args[:-1])
                elif kind == "map":
                    self.uc.mem_map(*args)
                elif kind == "map_ptr":
                    self.uc.mem_map_ptr(*args)
        finally:
            self.replaying = False
        return handle

    def copy_state(self, src: int, dst: int) -> None:
        """The CPU's architectural state (every register, system registers included) from one
        engine into another: the engines are one CPU, so the state goes with it."""
        if self._ctx is None:
            # (allocating one initialises the engine it is asked of: not before the ctl
            # settings that must come first, hence here)
            ctx = ctypes.c_void_p()
            st = _uclib.uc_context_alloc(ctypes.c_void_p(src), ctypes.byref(ctx))
            if st != 0:
                raise UcError(st)
            self._ctx = ctx
            weakref.finalize(self, _uclib.uc_context_free, ctx)
        s = _uclib.uc_context_save(ctypes.c_void_p(src), self._ctx)
        if s == 0:
            s = _uclib.uc_context_restore(ctypes.c_void_p(dst), self._ctx)
        if s != 0:
            raise UcError(s)

    def close(self, h: int) -> None:
        if h == self.current or h not in self.handles:
            raise ValueError("cannot close the engine in use")
        self.handles.discard(h)
        _uclib.uc_close(ctypes.c_void_p(h))


def _close_all(handles: set[int]) -> None:
    for h in list(handles):
        try:
            _uclib.uc_close(ctypes.c_void_p(h))
        except (AttributeError, TypeError, OSError):   # (interpreter shutdown: the library may be gone)
            pass
    handles.clear()


def engines(uc: Uc) -> EngineSet | None:
    """The EngineSet of ``uc``, if it has one."""
    return getattr(uc, _SETUP_ATTR, None)


def configure(uc: Uc, method: str, *args: Any) -> None:
    """Call the binding's ``uc.<method>(*args)`` (a ctl setting) and record it for new engines."""
    getattr(uc, method)(*args)
    es = engines(uc)
    if es is not None:
        es.record("ctl", method, args)


def hook_add_py(uc: Uc, kind: int, callback: Callable[..., Any], *args: Any) -> int:
    """The binding's ``uc.hook_add`` of a Python callback, recorded for new engines."""
    hh = uc.hook_add(kind, callback, *args)
    es = engines(uc)
    if es is not None:
        es.record("pyhook", kind, callback, *args, hh)
    return hh


def use_tlb_fill(uc: Uc, fill: Any, user_data: Any = None) -> ctypes.c_size_t:
    """Run ``uc`` on Unicorn's virtual TLB with the native fill ``fill`` (a UC_HOOK_TLB_FILL
    function pointer, for every address), both recorded for new engines; the hook's handle."""
    from unicorn import UC_HOOK_TLB_FILL
    from unicorn.unicorn_const import UC_TLB_VIRTUAL
    status, hh = hook_add_native(uc, UC_HOOK_TLB_FILL, fill, user_data)
    if status != 0:
        raise UcError(status)
    configure(uc, "ctl_set_tlb_mode", UC_TLB_VIRTUAL)
    return hh


def hook_del_py(uc: Uc, hh: int) -> None:
    """Remove a hook :func:`hook_add_py` added, on the engine in use, and from the steps new
    engines get (``uc_hook_del`` itself: the binding's wrapper is what tests replace to make
    the debugger's hook removals fail)."""
    status = hook_del_native(uc, ctypes.c_size_t(hh))
    if status != 0:
        raise UcError(status)
    getattr(uc, "_callbacks", {}).pop(hh, None)      # the binding's reference to the callback


def map_fixed(uc: Uc, address: int, size: int, perms: int, ptr: int | None = None) -> None:
    """A machine-owned region every engine has (``ptr``: over host memory, else Unicorn's)."""
    es = engines(uc)
    if ptr is None:
        uc.mem_map(address, size, perms)
        if es is not None:
            es.record("map", address, size, perms)
    else:
        uc.mem_map_ptr(address, size, perms, ptr)
        if es is not None:
            es.record("map_ptr", address, size, perms, ptr)


# ---- the faulting address, without a memory hook -------------------------------------------------
# A memory hook of any kind (UC_HOOK_MEM_INVALID included) keeps Unicorn 2.1.4 from ever marking a
# TLB entry dirty, so with one installed every guest store takes the slow path (native/counter.c's
# ek_tlb_fill has the measurements).  The only thing emukern needs such a hook for is the address
# of a faulting access: Unicorn keeps it in its engine structure (``uc_struct.invalid_addr``, set
# on every unmapped/protection fault, left there when uc_emu_start returns the error), which the
# C API does not export.  Its offset is found once per process, by making a throwaway engine fault
# at two known addresses and looking for the one 8-byte slot that held each; when that is not
# exactly one slot (another Unicorn build), emukern keeps the hook.  ``uc_struct.invalid_error``
# follows it (an int: non-zero while a fault is pending inside a run).

_FAULT_AT: list[int | None] = []       # [offset] once probed ([None]: not found)


def _probe_fault_offset() -> int | None:
    from unicorn import UC_ARCH_RISCV, UC_MODE_RISCV64, UC_PROT_EXEC, UC_PROT_READ
    from unicorn.riscv_const import UC_RISCV_REG_T0
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
    uc.mem_map(0x10000, 0x1000, UC_PROT_READ | UC_PROT_EXEC)
    uc.mem_write(0x10000, (0x0002B303).to_bytes(4, "little"))      # ld t1, 0(t0)
    found: set[int] | None = None
    for addr in (0x7EAD_BEEF_0008, 0x1234_5678_9AB0):
        uc.reg_write(UC_RISCV_REG_T0, addr)
        try:
            uc.emu_start(0x10000, 0x10004)
            return None                                 # (no fault: nothing to learn from)
        except UcError:
            pass
        raw = ctypes.string_at(handle(uc).value or 0, 2048)     # (the struct is larger than this)
        want = addr.to_bytes(8, "little")
        slots = {off for off in range(0, len(raw) - 8, 8) if raw[off:off + 8] == want}
        found = slots if found is None else found & slots
    return next(iter(found)) if found is not None and len(found) == 1 else None


def fault_address_at() -> int | None:
    """The offset of ``invalid_addr`` in libunicorn's engine structure, or None when it could not
    be found with certainty (then faults need a memory hook)."""
    if not _FAULT_AT:
        _FAULT_AT.append(_probe_fault_offset())
    return _FAULT_AT[0]


def fault_reader(uc: Uc) -> tuple[Callable[[], int], Callable[[], bool]] | None:
    """Two readers of ``uc``'s engine in use (an EngineSet may switch it): the address of the
    last faulting access, and whether a fault is pending now (for a hook running after one).
    None when the offset is unknown."""
    off = fault_address_at()
    if off is None:
        return None
    h = handle(uc)
    u64, i32 = ctypes.c_uint64.from_address, ctypes.c_int32.from_address

    def address() -> int:
        return u64((h.value or 0) + off).value

    def pending() -> bool:
        return i32((h.value or 0) + off + 8).value != 0
    return address, pending
