#!/usr/bin/env python3
"""Random syscalls against emukern's kernel: does any number/argument mix break the host?

Each case is one guest program (the same ELF per arch, assembled once) that walks a table of
up to ``CALLS`` syscalls -- number and six arguments each -- issuing them one after the other.
Python fills the table after loading, so a case costs no assembly.  Arguments are biased the way
a hostile user's are: 0, -1, small counts and flags, fd numbers, pointers into a scratch buffer
holding path strings (``/``, ``..``, ``/proc/self/cwd``, a long name) and zeroed structs, pointers
just past it, into the kernel half, or random 64-bit words.  Every number of the asm-generic
table is drawn, implemented or not; the guest may fork, clone, kill, exec and mmap as it likes,
inside an instruction budget.

What counts as a failure (the hostile-input rule: a clear answer or Linux's errno, never a
Python traceback, never a host file outside the root):

* any Python exception escaping ``Machine.run`` (an internal error);
* a file or directory appearing beside the guest root (the root's parent is checked after
  every case).

Deterministic for a given ``--seed`` (the same seed draws the same cases).  CI runs a bounded,
fixed-seed slice of it (tests/hostile/test_fuzz_ci.py).

    .venv/bin/python tools/fuzz_syscalls.py --seed 1 --cases 300
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from emukern.api import Machine
from emukern.kernel.syscalls.numbers import SYSCALL_NAMES
from emukern.loader.asm import assemble

CALLS = 24                       # table rows per case
ROW = 7 * 8                      # number + six arguments, 64-bit each
SCRATCH = 1 << 16                # the guest's scratch buffer (bss)
# the syscalls that would only end the case early or wait for ever on nothing: drawn rarely
RARE = {"exit", "exit_group", "pause", "rt_sigsuspend", "ppoll", "pselect6", "nanosleep",
        "clock_nanosleep", "wait4", "waitid", "futex", "epoll_pwait", "read", "accept", "accept4",
        "msgrcv", "semop", "semtimedop", "mq_timedreceive", "recvfrom", "recvmsg", "rt_sigtimedwait"}
STRINGS = [b"/", b"..", b".", b"/proc/self/cwd", b"/proc/self/root/..", b"a", b"a/b", b"/tmp/x",
           b"\xff\xfe", b"x" * 300, b"/dev/null", b"/proc/self/mem", b"core", b"/etc/passwd"]

ARM64 = """\
// fuzz_syscalls guest: issue the syscalls of `table` (number, a0..a5) one after the other
.globl _start
_start:
    adr x19, table
    mov x20, #{calls}
1:  ldp x8, x0, [x19]
    ldp x1, x2, [x19, #16]
    ldp x3, x4, [x19, #32]
    ldr x5, [x19, #48]
    svc #0
    add x19, x19, #{row}
    subs x20, x20, #1
    b.ne 1b
    mov x0, #0
    mov x8, #94
    svc #0
.data
.balign 16
.globl table
table: .zero {tsize}
.bss
.balign 4096
.globl scratch
scratch: .zero {scratch}
"""
RISCV = """\
# fuzz_syscalls guest: issue the syscalls of `table` (number, a0..a5) one after the other
.globl _start
_start:
    la s1, table
    li s2, {calls}
1:  ld a7, 0(s1)
    ld a0, 8(s1)
    ld a1, 16(s1)
    ld a2, 24(s1)
    ld a3, 32(s1)
    ld a4, 40(s1)
    ld a5, 48(s1)
    ecall
    addi s1, s1, {row}
    addi s2, s2, -1
    bnez s2, 1b
    li a0, 0
    li a7, 94
    ecall
.data
.balign 16
.globl table
table: .zero {tsize}
.bss
.balign 4096
.globl scratch
scratch: .zero {scratch}
"""


def build(d: Path) -> dict[str, Path]:
    """The two guest ELFs (assembled once, cached by the assembler)."""
    out = {}
    for arch, text in (("arm64", ARM64), ("riscv64", RISCV)):
        src = d / f"fuzz_syscalls_{arch}.S"
        src.write_text(f"# arch: {arch}\n" + text.format(calls=CALLS, row=ROW, tsize=CALLS * ROW,
                                                          scratch=SCRATCH))
        out[arch] = assemble(src, arch)
    return out


def scratch_image() -> tuple[bytes, list[int]]:
    """The scratch buffer's initial bytes: NUL-terminated strings, then zeros; their offsets."""
    buf = bytearray(SCRATCH)
    offs, at = [], 0
    for s in STRINGS:
        offs.append(at)
        buf[at:at + len(s)] = s
        at += len(s) + 1
    return bytes(buf), offs


@dataclass
class Case:
    arch: str
    cpus: int
    rows: list[tuple[int, ...]]

    def describe(self) -> str:
        names = [SYSCALL_NAMES.get(r[0], str(r[0])) for r in self.rows]
        return f"{self.arch} cpus={self.cpus}: " + ", ".join(
            f"{n}({', '.join(hex(a) for a in r[1:])})" for n, r in zip(names, self.rows))


def draw_arg(rng: random.Random, scratch: int, offs: list[int]) -> int:
    c = rng.random()
    if c < 0.18:
        return rng.choice([0, 1, 2, 3, 4, 0x40, 0x80, 0x100, 0x800, 0x1000])
    if c < 0.30:
        return rng.choice([-1, -100, 1 << 31, (1 << 63), (1 << 40) - 1, 0x7FFFFFFF, 0xFFFFFFFF]) & (2**64 - 1)
    if c < 0.50:
        return scratch + rng.choice(offs)                       # a path string
    if c < 0.62:
        return scratch + 0x8000 + rng.randrange(0, 0x4000, 8)   # zeroed struct space
    if c < 0.70:
        return scratch + SCRATCH - rng.choice([0, 1, 8, 16])    # at / just before the end
    if c < 0.76:
        return rng.choice([0xFFFF_8000_0000_0000, 0xFFFF_FFFF_FFFF_F000, 0x1000, 8])
    if c < 0.90:
        return rng.getrandbits(rng.choice([8, 16, 32]))
    return rng.getrandbits(64)


def draw_case(rng: random.Random, scratch: dict[str, int], offs: list[int]) -> Case:
    arch = rng.choice(["arm64", "riscv64"])
    nums = sorted(SYSCALL_NAMES)
    rows = []
    for _ in range(rng.randint(1, CALLS)):
        while True:
            nr = rng.choice(nums) if rng.random() < 0.97 else rng.randrange(0, 1100)
            if SYSCALL_NAMES.get(nr) not in RARE or rng.random() < 0.08:
                break
        rows.append((nr, *(draw_arg(rng, scratch[arch], offs) for _ in range(6))))
    return Case(arch, rng.choice([1, 1, 2]), rows)


def run_case(case: Case, elf: Path, root: Path, image: bytes, max_insns: int) -> None:
    """Run one case; raises whatever escapes Machine.run."""
    m = Machine(arch=case.arch, cpus=case.cpus, max_insns=max_insns, root=str(root), root_rw=True,
                timeout=2.0, mem_limit=256 << 20)
    m.load(elf)
    mm = m.kernel.init_task.mm
    table = bytearray(CALLS * ROW)
    for i, row in enumerate(case.rows):
        for j, v in enumerate(row):
            table[i * ROW + j * 8:i * ROW + j * 8 + 8] = (v & (2**64 - 1)).to_bytes(8, "little")
    # rows past the case's end are exit_group(0)
    for i in range(len(case.rows), CALLS):
        table[i * ROW:i * ROW + 8] = (94).to_bytes(8, "little")
    mm.write(m.symbol("table"), bytes(table))
    mm.write(m.symbol("scratch"), image)
    m.run()


def fuzz(seed: int, cases: int, max_insns: int = 200_000, verbose: bool = False) -> list[str]:
    """Run ``cases`` random cases from ``seed``; the failures, described (empty when none)."""
    work = Path(tempfile.mkdtemp(prefix="emukern-fuzz-"))
    elfs = build(work)
    image, offs = scratch_image()
    probe = {a: Machine(arch=a).load(e) for a, e in elfs.items()}
    scratch = {a: m.symbol("scratch") for a, m in probe.items()}
    rng = random.Random(seed)
    failures: list[str] = []
    outside = work / "outside"
    outside.mkdir()
    for i in range(cases):
        case = draw_case(rng, scratch, offs)
        root = outside / "root"
        root.mkdir()
        (root / "tmp").mkdir()
        (root / "a").write_bytes(b"data\n")
        try:
            run_case(case, elfs[case.arch], root, image, max_insns)
        except Exception as e:  # noqa: BLE001 - an escaping exception is the finding
            failures.append(f"case {i}: {type(e).__name__}: {e}\n  {case.describe()}\n"
                            + "".join(traceback.format_exception(e)[-3:]))
        beside = sorted(p.name for p in outside.iterdir() if p.name != "root")
        if beside:
            failures.append(f"case {i}: host files appeared beside the root: {beside}\n  {case.describe()}")
            for p in outside.iterdir():
                if p.name != "root":
                    _rm(p)
        _rm(root)
        if verbose and i % 50 == 49:
            print(f"{i + 1} cases, {len(failures)} failures", file=sys.stderr)
    _rm(work)
    return failures


def _rm(p: Path) -> None:
    import shutil
    if p.is_symlink() or p.is_file():
        p.unlink()
    else:
        for q in p.rglob("*"):          # the guest may have chmod 000'd what it made
            try:
                q.chmod(0o700) if q.is_dir() and not q.is_symlink() else None
            except OSError:
                pass
        try:
            p.chmod(0o700)
        except OSError:
            pass
        shutil.rmtree(p, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--max-insns", type=int, default=200_000)
    a = ap.parse_args()
    failures = fuzz(a.seed, a.cases, a.max_insns, verbose=True)
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{a.cases} cases (seed {a.seed}), {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
