"""Emulator self-benchmark (issue 2): emukern vs raw Unicorn vs qemu-user, measured in one run.

(a) guest MIPS with exact instruction counting vs raw Unicorn with no hooks, on the same loop;
(b) a null-syscall round trip (getppid) through emukern's kernel vs a raw Unicorn in-hook round
    trip (an INTR hook that reads the number and writes a return value);
(c) the same static ELFs under qemu-riscv64 / qemu-aarch64 when installed (whole-process wall time).
Ratios, not absolute numbers, are the point: everything runs on this machine in this run.
"""
from __future__ import annotations

import shutil
import sys
import subprocess
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from emukern.resources import guest_asm_dir

TITLE = "Emulator self-benchmark: emukern vs raw Unicorn (and qemu-user)"
GUEST = guest_asm_dir()
TARGET_MIPS_RATIO = 0.25        # issue 2: emukern MIPS >= 0.25 x raw Unicorn
TARGET_SYSCALL_RATIO = 3.0      # issue 2: emukern syscall round trip <= 3 x a raw in-hook one
QEMU = {"riscv64": ["qemu-riscv64", "-cpu", "rv64,v=true,vlen=256,vext_spec=v1.0"],
        "arm64": ["qemu-aarch64", "-cpu", "max"]}


def _elf(arch: str, name: str) -> Path:
    from emukern.loader.asm import assemble
    sub = "riscv" if arch == "riscv64" else "arm64"
    return assemble(GUEST / sub / f"{name}.S", arch)


def _raw_uc(arch: str, elf: Path) -> tuple[Any, Any, dict[str, int]]:
    """A bare Unicorn with the ELF's segments mapped and no hooks at all."""
    from unicorn import UC_ARCH_ARM64, UC_ARCH_RISCV, UC_MODE_ARM, UC_MODE_RISCV64, Uc
    from emukern.loader.elf import load_elf
    from emukern.machine.memory import uc_prot
    img = load_elf(elf)
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64) if arch == "riscv64" else Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    for m in img.mappings():
        uc.mem_map(m.start, m.size, uc_prot(m.perms) | 1)
    for seg in img.segments:
        uc.mem_write(seg.vaddr, seg.data)
    return uc, img, img.symbols


def _counter_reg(arch: str, loop: str) -> int:
    from unicorn import arm64_const as A, riscv_const as R
    if arch == "riscv64":
        return R.UC_RISCV_REG_A0 if loop == "spin" else R.UC_RISCV_REG_S0
    return A.UC_ARM64_REG_X0 if loop == "spin" else A.UC_ARM64_REG_X19


def raw_mips(arch: str, n: int) -> tuple[float, int]:
    elf = _elf(arch, "spin")
    uc, _img, sym = _raw_uc(arch, elf)
    uc.reg_write(_counter_reg(arch, "spin"), n)
    t = time.perf_counter()
    uc.emu_start(sym["spin_loop"], sym["spin_loop_end"])
    dt = time.perf_counter() - t
    insns = 2 * n
    return insns / dt / 1e6, insns


def raw_syscall_us(arch: str, n: int) -> float:
    from unicorn import UC_HOOK_INTR, arm64_const as A, riscv_const as R
    elf = _elf(arch, "syscall_loop")
    uc, _img, sym = _raw_uc(arch, elf)
    nr_reg, ret_reg = ((R.UC_RISCV_REG_A7, R.UC_RISCV_REG_A0) if arch == "riscv64"
                       else (A.UC_ARM64_REG_X8, A.UC_ARM64_REG_X0))

    def hook(uc: Any, intno: int, _ud: Any) -> None:   # the minimal in-hook syscall
        uc.reg_write(ret_reg, uc.reg_read(nr_reg))
    uc.hook_add(UC_HOOK_INTR, hook)
    uc.reg_write(_counter_reg(arch, "syscall"), n)
    t = time.perf_counter()
    uc.emu_start(sym["sys_loop"], sym["sys_loop_end"])
    return (time.perf_counter() - t) / n * 1e6


def emukern_run(arch: str, name: str, n: int, **opts: Any) -> tuple[float, Any]:
    from emukern.api import Machine
    m = Machine(arch=arch, **opts)
    m.explicit_arch = arch
    m.load(_elf(arch, name), [str(n)])
    t = time.perf_counter()
    r = m.run()
    return time.perf_counter() - t, r


def qemu_wall(arch: str, name: str, n: int) -> tuple[float | None, str]:
    """(whole-process wall seconds, note): None when qemu-user is absent or the guest failed under it
    (a time for a run that did not do the work is no figure)."""
    cmd = QEMU[arch]
    if shutil.which(cmd[0]) is None:
        return None, f"{cmd[0]} not installed"
    elf = _elf(arch, name)
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd + [str(elf), str(n)], check=False, capture_output=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, f"{cmd[0]} {name}: timed out after 300 s"
    dt = time.perf_counter() - t
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"{cmd[0]} {name} failed with status {p.returncode}" + (f": {err[-1]}" if err else "")
    return dt, "ok"


def measure(quick: bool = False) -> dict[str, Any]:
    from emukern.machine.counter import native_available
    spin_n = 2_000_000 if quick else 25_000_000
    sys_n = 5_000 if quick else 100_000
    sig_n = 1_000 if quick else 20_000
    out: dict[str, Any] = {"native_counter": native_available(), "arches": {}}
    for arch in ("riscv64", "arm64"):
        raw, insns = raw_mips(arch, spin_n)
        wall, r = emukern_run(arch, "spin", spin_n, max_insns=None)
        ek_mips = r.user_insns / wall / 1e6
        raw_sys = raw_syscall_us(arch, sys_n)
        wall_s, rs = emukern_run(arch, "syscall_loop", sys_n, max_insns=None)
        ek_sys = wall_s / sys_n * 1e6
        # (d) a signal round trip: kill() -> do_signal/setup_rt_frame -> handler -> rt_sigreturn
        wall_g, rg = emukern_run(arch, "sig_loop", sig_n, max_insns=None)
        ek_sig = wall_g / sig_n * 1e6
        q_spin, q_spin_note = qemu_wall(arch, "spin", spin_n)
        q_sys, q_sys_note = qemu_wall(arch, "syscall_loop", sys_n)
        mips_ratio, sys_ratio = ek_mips / raw, ek_sys / raw_sys
        out["arches"][arch] = {
            "raw_mips": raw, "emukern_mips": ek_mips, "mips_ratio": mips_ratio,
            "mips_target": TARGET_MIPS_RATIO, "mips_target_met": mips_ratio >= TARGET_MIPS_RATIO,
            "raw_syscall_us": raw_sys, "emukern_syscall_us": ek_sys, "syscall_ratio": sys_ratio,
            "syscall_target": TARGET_SYSCALL_RATIO, "syscall_target_met": sys_ratio <= TARGET_SYSCALL_RATIO,
            "qemu_spin": q_spin_note, "qemu_syscall": q_sys_note,
            "qemu_mips": (2 * spin_n / q_spin / 1e6) if q_spin else None,
            "qemu_syscall_us": (q_sys / sys_n * 1e6) if q_sys else None,
            "spin_insns": insns, "emukern_user_insns": r.user_insns, "syscall_iters": sys_n,
            "emukern_cycles_per_syscall": rs.cycles / sys_n,
            "emukern_signal_us": ek_sig, "signal_vs_null_syscall": ek_sig / ek_sys, "signal_iters": sig_n,
            "signal_delivered": rg.syscalls.get("rt_sigreturn", 0),
        }
    return out


def mark(ok: bool) -> str:
    return "" if ok else " MISSED"


def print_table(res: dict[str, Any], console: Console) -> None:
    t = Table(title="emukern speed vs raw Unicorn (same loop, same run)")
    for c in ("arch", "raw MIPS", "emukern MIPS", f"ratio (target ≥{TARGET_MIPS_RATIO:g})", "raw syscall µs",
              "emukern syscall µs", f"ratio (target ≤{TARGET_SYSCALL_RATIO:g}×)", "qemu MIPS", "qemu syscall µs"):
        t.add_column(c, justify="right", overflow="fold")
    notes = []
    for arch, d in res["arches"].items():
        t.add_row(arch, f"{d['raw_mips']:.0f}", f"{d['emukern_mips']:.0f}",
                  f"{d['mips_ratio']:.2f}{mark(d['mips_target_met'])}",
                  f"{d['raw_syscall_us']:.2f}", f"{d['emukern_syscall_us']:.2f}",
                  f"{d['syscall_ratio']:.1f}×{mark(d['syscall_target_met'])}",
                  f"{d['qemu_mips']:.0f}" if d["qemu_mips"] else "n/a",
                  f"{d['qemu_syscall_us']:.2f}" if d["qemu_syscall_us"] else "n/a")
        notes += [f"{arch}: {d[k]}" for k in ("qemu_spin", "qemu_syscall") if d.get(k, "ok") != "ok"]
    console.print(t)
    sig_rows = {a: d for a, d in res["arches"].items() if "emukern_signal_us" in d}
    if sig_rows:
        s = Table(title="signal round trip (kill -> handler -> rt_sigreturn) vs emukern's null syscall, same run")
        for c in ("arch", "signal µs", "null syscall µs", "ratio (target ≤3×)", "round trips"):
            s.add_column(c, justify="right")
        for arch, d in sig_rows.items():
            r = d["signal_vs_null_syscall"]
            s.add_row(arch, f"{d['emukern_signal_us']:.2f}", f"{d['emukern_syscall_us']:.2f}",
                      f"{r:.1f}×" + ("" if r <= 3 else " MISSED"), f"{d['signal_delivered']:,}")
        console.print(s)
    console.print("raw = Unicorn with no hooks (MIPS) / an INTR hook that reads a7|x8 and writes a0|x0 "
                  "(syscall); emukern = exact per-instruction counting and the full Python kernel path.")
    console.print(f"instruction counter: {'native C hook' if res['native_counter'] else 'pure-Python fallback'}; "
                  "qemu-user times are whole-process wall time (includes its start-up) and it runs "
                  "syscalls on the host kernel.")
    for n in notes:
        console.print(f"[yellow]qemu n/a — {n}[/]")
    missed = [f"{a} {what}" for a, d in res["arches"].items()
              for what, ok in (("MIPS ratio", d["mips_target_met"]), ("syscall ratio", d["syscall_target_met"]))
              if not ok]
    if missed:
        console.print(f"[bold red]MISSED target(s): {', '.join(missed)}[/]")


def run(ctx: Any) -> dict[str, Any]:
    res = measure(ctx.quick)
    print_table(res, ctx.console)
    return res


def main(quick: bool = False) -> int:
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    print_table(measure(quick), console)
    return 0
