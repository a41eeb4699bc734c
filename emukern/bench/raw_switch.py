"""The floor under emukern's pipe round-trip figures: raw Unicorn, no emukern kernel.

What a context switch costs before any kernel work, when every trap lands in Python: the
lat_ctx guest (guest_asm/<arch>/lat_ctx.S: pipe2 twice, a fork, then N round trips of one byte
over the two pipes, wait4, exit) on bare Unicorn engines run in this process, with one
UC_HOOK_INTR hook per engine installed as a bare ctypes callback (libunicorn's register
functions called directly, the kind emukern's CPUs install) that does only what any emulator of
this guest must:

* pipe2: two byte FIFOs (fds 3/4 and 5/6 written to the guest's int[2]);
* clone (a fork here, SIGCHLD and nothing else): a second task with the same registers, the
  child's a0 = 0 and the parent's = the child's pid;
* read / write of one byte: a write appends to its FIFO; a read of a non-empty FIFO takes its
  byte; a read of an empty one *blocks*: the hook notes the task is waiting (its pc and nothing
  else) and stops the engine with emu_stop, and the loop around emu_start starts the other
  task at its pc.  The read completes when the task is resumed (the byte is copied to its
  buffer and a0 = 1 written then), as Linux's pipe_read finishes after its wait, so a blocked
  read costs one trap, not a re-executed syscall;
* exit / exit_group / wait4: enough to finish (wait4 blocks until the child has exited and
  stores its status).

Any other trap or syscall stops the run (not this guest).

Two ways to hold the two tasks:

* ``"processes"``: an engine per task (the child's engine a copy of the parent's memory and
  registers), a switch is emu_stop on one engine and emu_start on the other -- what emukern does
  for a process switch, without its scheduler, accounting or signal checks.
* ``"threads"``: one engine, a switch is a register-file swap (uc_reg_read_batch of the
  integer registers, pc and flags of the task that blocks, uc_reg_write_batch of the other's)
  before emu_start.  lat_ctx allows it: after the fork its loops touch the stack not at all and
  memory only through the pipe fds (read only) and the one-byte ``buf`` whose value nobody
  checks, so two register files over one memory run it unchanged.  Floating-point and vector
  state are not swapped: the guest never uses them (an emulator that cannot know that pays more).

Returns CPU seconds (time.process_time around the run loop, set-up and the fork's engine copy
excluded) and what the guest
did; :func:`raw_switch_us` takes the difference of two counts, as emukern.bench.switch does, so
the engines' creation, the fork's memory copy and the first translation of the code drop out.
"""
from __future__ import annotations

import ctypes
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emukern.bench.stats import Unavailable

# asm-generic numbers: the same on RISC-V and AArch64
NR_PIPE2, NR_READ, NR_WRITE, NR_EXIT, NR_EXIT_GROUP, NR_CLONE, NR_WAIT4 = 59, 63, 64, 93, 94, 220, 260
SIGCHLD, ECHILD = 17, 10
MASK = (1 << 64) - 1
CHILD_PID = 2
MODES = ("processes", "threads")


@dataclass
class RawSwitchRun:
    """One run of the floor: CPU seconds of the run loop and what the guest did."""
    cpu_s: float
    exit_status: int
    round_trips: int            # the parent's completed reads (one per round trip)
    switches: int               # engine starts after the first (each one a task switch)
    engines: int


@dataclass
class _Task:
    pid: int
    uc: Any                     # its engine (processes) or the shared one (threads)
    pc: int = 0
    waiting: tuple[str, int] | None = None     # ("read", fifo index) or ("wait4", status ptr)
    read_buf: int = 0
    exited: int | None = None
    regs: Any = None            # threads: the saved register file (c_uint64 array)
    keep: list[Any] = field(default_factory=list)


def lat_ctx_elf(arch: str) -> Path:
    """guest_asm/<arch>/lat_ctx.S assembled as emukern's tests do (the loader's asm cache)."""
    from emukern.loader.asm import assemble
    from emukern.resources import guest_asm_dir
    return assemble(guest_asm_dir() / ("riscv" if arch == "riscv64" else "arm64") / "lat_ctx.S", arch)


def _arch_regs(arch: str) -> tuple[list[int], int, int, list[int], int, int]:
    """(register file to copy or swap, pc id, a0 id, a1..a5 ids, syscall-number id, ecall intno)."""
    if arch == "riscv64":
        from unicorn import riscv_const as R
        x = [R.UC_RISCV_REG_X0 + i for i in range(32)]
        return x[1:] + [R.UC_RISCV_REG_PC], R.UC_RISCV_REG_PC, x[10], x[11:16], x[17], 8
    from unicorn import arm64_const as A
    x = [getattr(A, f"UC_ARM64_REG_X{i}") for i in range(31)]
    return (x + [A.UC_ARM64_REG_SP, A.UC_ARM64_REG_NZCV, A.UC_ARM64_REG_PC], A.UC_ARM64_REG_PC, x[0],
            x[1:6], x[8], 2)


def _new_engine(arch: str) -> Any:
    from unicorn import UC_ARCH_ARM64, UC_ARCH_RISCV, UC_MODE_ARM, UC_MODE_RISCV64, Uc
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64) if arch == "riscv64" else Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    _user_mode(arch, uc)
    return uc


def _user_mode(arch: str, uc: Any) -> None:
    """riscv64 runs in U-mode (ecall is intno 8); arm64 stays at EL1 (svc is intno 2, as in
    raw_pidbench)."""
    if arch == "riscv64":
        from unicorn import riscv_const as R
        uc.reg_write(R.UC_RISCV_REG_PRIV, 0)


def raw_switch_run(arch: str, n: int, mode: str = "processes", elf: Path | None = None) -> RawSwitchRun:
    """Run lat_ctx with ``n`` round trips on the floor (``mode``: "processes" or "threads")."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {MODES}")
    try:
        from unicorn import UC_HOOK_INTR
        from unicorn.unicorn_py3.unicorn import uclib
    except ImportError as exc:          # (unicorn is a dependency: only a broken install)
        raise Unavailable(f"unicorn: {exc}") from exc
    from emukern.bench.raw_vsetvli import STACK_SIZE, STACK_TOP, write_argv
    from emukern.bench.selfbench import _raw_uc
    from emukern.machine.uc_internal import raw_fn

    uc0, img, _sym = _raw_uc(arch, elf or lat_ctx_elf(arch))
    _user_mode(arch, uc0)
    uc0.mem_map(STACK_TOP - STACK_SIZE, STACK_SIZE)
    file_regs, PC, A0, ARGS, NR, ECALL = _arch_regs(arch)
    SP = file_regs[-3] if arch == "arm64" else file_regs[1]     # (arm64: SP; riscv: x2)
    uc0.reg_write(SP, write_argv(uc0, ["lat_ctx", str(n)]))

    rr, rw = raw_fn("uc_reg_read", keep_gil=True), raw_fn("uc_reg_write", keep_gil=True)
    mread, mwrite = raw_fn("uc_mem_read", keep_gil=True), raw_fn("uc_mem_write", keep_gil=True)
    read_batch, write_batch = raw_fn("uc_reg_read_batch", keep_gil=True), raw_fn("uc_reg_write_batch", keep_gil=True)
    stop = raw_fn("uc_emu_stop", keep_gil=True)
    start_fn = raw_fn("uc_emu_start")               # runs the guest: lets the GIL go
    nregs = len(file_regs)
    reg_ids = (ctypes.c_int * nregs)(*file_regs)
    v = ctypes.c_uint64()
    pv = ctypes.byref(v)
    byte = ctypes.create_string_buffer(4)
    fifos: list[deque[int]] = []
    fds: dict[int, tuple[int, str]] = {}            # fd -> (fifo index, "r" | "w")
    tasks: list[_Task] = [_Task(1, uc0)]
    st: dict[str, Any] = {"cur": 0, "bad": None, "trips": 0, "starts": 0, "fork_s": 0.0}

    def regfile() -> tuple[Any, Any]:
        vals = (ctypes.c_uint64 * nregs)()
        ptrs = (ctypes.c_void_p * nregs)(*[ctypes.addressof(vals) + 8 * i for i in range(nregs)])
        return vals, ptrs

    def ret(h: Any, value: int) -> None:
        v.value = value & MASK
        rw(h, A0, pv)

    def arg(h: Any, i: int) -> int:
        rr(h, ARGS[i - 1] if i else A0, pv)
        return v.value

    def block(h: Any, task: _Task, why: tuple[str, int]) -> None:
        rr(h, PC, pv)                               # the pc past the trap: where it resumes
        task.pc, task.waiting = v.value, why
        stop(h)

    def hook(_h: int, intno: int, _u: int) -> None:
        task = tasks[st["cur"]]
        h = task.uc._uch                            # (a c_void_p: the callback's int would be cut to 32 bits)
        if intno != ECALL:
            st["bad"] = f"exception {intno}"
            stop(h)
            return
        rr(h, NR, pv)
        nr = v.value
        if nr == NR_READ or nr == NR_WRITE:
            fifo, end = fds.get(arg(h, 0), (-1, ""))
            buf, count = arg(h, 1), arg(h, 2)
            if count != 1 or end != ("r" if nr == NR_READ else "w"):
                st["bad"] = f"syscall {nr} on fd {arg(h, 0)}, count {count}"
                stop(h)
                return
            if nr == NR_WRITE:
                mread(h, ctypes.c_uint64(buf), byte, ctypes.c_size_t(1))
                fifos[fifo].append(byte.raw[0])
                ret(h, 1)
            elif fifos[fifo]:
                byte.raw = bytes([fifos[fifo].popleft()])
                mwrite(h, ctypes.c_uint64(buf), byte, ctypes.c_size_t(1))
                st["trips"] += task.pid == 1
                ret(h, 1)
            else:
                task.read_buf = buf
                block(h, task, ("read", fifo))
        elif nr == NR_PIPE2:
            where = arg(h, 0)
            r, w = 3 + 2 * len(fifos), 4 + 2 * len(fifos)
            fds[r], fds[w] = (len(fifos), "r"), (len(fifos), "w")
            fifos.append(deque())
            pair = (ctypes.c_int32 * 2)(r, w)
            mwrite(h, ctypes.c_uint64(where), pair, ctypes.c_size_t(8))
            ret(h, 0)
        elif nr == NR_CLONE and arg(h, 0) == SIGCHLD:      # fork: the only clone lat_ctx makes
            fork(h, task)
        elif nr == NR_WAIT4:
            child = tasks[1] if len(tasks) > 1 else None
            if child is None:
                ret(h, -ECHILD)
            elif child.exited is not None:
                reap(h, arg(h, 1), child)
            else:
                block(h, task, ("wait4", arg(h, 1)))
        elif nr == NR_EXIT or nr == NR_EXIT_GROUP:
            task.exited = arg(h, 0) & 0xFF
            stop(h)
        else:
            st["bad"] = f"syscall {nr}"
            stop(h)

    def reap(h: Any, status_ptr: int, child: _Task) -> None:
        if status_ptr:
            code = ctypes.c_int32(((child.exited or 0) & 0xFF) << 8)
            mwrite(h, ctypes.c_uint64(status_ptr), ctypes.byref(code), ctypes.c_size_t(4))
        ret(h, child.pid)

    def fork(h: Any, parent: _Task) -> None:
        t0 = time.process_time()
        try:
            _fork(h, parent)
        finally:
            st["fork_s"] += time.process_time() - t0

    def _fork(h: Any, _parent: _Task) -> None:
        if len(tasks) > 1:
            st["bad"] = "a second fork"
            stop(h)
            return
        vals, ptrs = regfile()
        read_batch(h, reg_ids, ptrs, nregs)         # (a0 still the clone flags: the child's is set below)
        if mode == "threads":
            child = _Task(CHILD_PID, uc0, regs=(vals, ptrs))
            vals[file_regs.index(A0)] = 0
        else:
            uc = _new_engine(arch)
            for begin, end, perms in uc0.mem_regions():
                uc.mem_map(begin, end - begin + 1, perms)
                uc.mem_write(begin, bytes(uc0.mem_read(begin, end - begin + 1)))
            uh = uc._uch
            write_batch(uh, reg_ids, ptrs, nregs)
            child = _Task(CHILD_PID, uc)
            child.keep.append(install(uc))
            ret(uh, 0)
        rr(h, PC, pv)
        child.pc = v.value
        tasks.append(child)
        ret(h, CHILD_PID)

    def install(uc: Any) -> Any:
        cb = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)(hook)
        hh = ctypes.c_size_t()
        if uclib.uc_hook_add(uc._uch, ctypes.byref(hh), UC_HOOK_INTR, ctypes.cast(cb, ctypes.c_void_p), None,
                             ctypes.c_uint64(1), ctypes.c_uint64(0)):
            raise RuntimeError("uc_hook_add failed")
        return cb

    keep = install(uc0)
    u64, zero, count = ctypes.c_uint64, ctypes.c_uint64(0), ctypes.c_size_t(0)
    tasks[0].pc = img.entry
    if mode == "threads":
        tasks[0].regs = regfile()
    on_engine = 0                                   # threads: whose registers the engine holds

    t = time.process_time()
    while True:
        task = tasks[st["cur"]]
        h = task.uc._uch
        if mode == "threads" and on_engine != st["cur"]:
            write_batch(h, reg_ids, task.regs[1], nregs)       # the register-file swap, in
            on_engine = st["cur"]
        if task.waiting is not None:                # it was woken: finish the syscall it slept in
            kind, x = task.waiting
            task.waiting = None
            if kind == "read":
                byte.raw = bytes([fifos[x].popleft()])
                mwrite(h, u64(task.read_buf), byte, ctypes.c_size_t(1))
                st["trips"] += task.pid == 1
                ret(h, 1)
            else:
                reap(h, x, tasks[1])
        st["starts"] += 1
        if start_fn(h, u64(task.pc), zero, zero, count):
            raise RuntimeError(f"raw lat_ctx floor: uc_emu_start failed in task {task.pid}")
        if st["bad"] is not None:
            raise RuntimeError(f"raw lat_ctx floor: task {task.pid} stopped on {st['bad']}")
        if task.pid == 1 and task.exited is not None:
            break
        if mode == "threads":
            read_batch(h, reg_ids, task.regs[1], nregs)        # the register-file swap, out
        # the other task, which must be runnable now: woken by this one, or never blocked
        other = tasks[1 - st["cur"]] if len(tasks) > 1 else None
        if other is None or other.exited is not None or not _runnable(other, fifos, tasks):
            raise RuntimeError(f"raw lat_ctx floor: task {task.pid} stopped and nothing can run")
        st["cur"] = 1 - st["cur"]
    # the fork's engine and memory copy are start-up, the same at every count: left out here
    # (the difference of two counts removes them anyway, but their noise swamps small counts)
    dt = time.process_time() - t - st["fork_s"]
    del keep
    return RawSwitchRun(dt, tasks[0].exited or 0, st["trips"], st["starts"] - 1,
                        1 if mode == "threads" else len(tasks))


def _runnable(task: _Task, fifos: list[deque[int]], tasks: list[_Task]) -> bool:
    if task.waiting is None:
        return True
    kind, x = task.waiting
    return bool(fifos[x]) if kind == "read" else tasks[1].exited is not None


def raw_switch_us(arch: str, mode: str, n1: int, n2: int, elf: Path | None = None) -> float:
    """µs of CPU per round trip: the run at n2 minus the run at n1, over n2 - n1."""
    runs = [raw_switch_run(arch, n, mode, elf) for n in (n1, n2)]
    for n, r in zip((n1, n2), runs):
        if r.exit_status != 0 or r.round_trips != n:
            raise RuntimeError(f"raw lat_ctx floor ({arch}, {mode}, {n}): exit status {r.exit_status}, "
                               f"{r.round_trips} round trips")
    return (runs[1].cpu_s - runs[0].cpu_s) / (n2 - n1) * 1e6
