"""RISC-V cycle/instret reads (issue 11, item 6).

Unicorn 2.1.4 returns host ticks for rdcycle/rdinstret whatever mcounteren says, so emukern must
complete every such read itself — before: one Python code hook per counter word found in
executable memory, never removed (8 MiB of rdcycle words: 5.7 GB host RSS), and a counter word
written after the scan read the host's ticks.  Now each word is an exit of the page's scan, done
when the page is first executed.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RDCYCLE_A0 = 0xC0002573       # csrrs a0, cycle, zero
RDINSTRET_A0 = 0xC0202573     # csrrs a0, instret, zero
RET = 0x00008067

# mmap 8 MiB RW, fill it with rdcycle words, end it with ret, mprotect it R-X, then call the
# last 1024 words (a realistic jump into a huge code region) and write a0 (8 bytes) to stdout
BIG = f""".globl _start
_start:
    li a0, 0
    li a1, 0x800000
    li a2, 3
    li a3, 0x22
    li a4, -1
    li a5, 0
    li a7, 222
    ecall
    mv s0, a0
    li t0, {RDCYCLE_A0:#x}
    li t1, 0x800000 - 4
    add t2, s0, t1
    mv t3, s0
1:  sw t0, 0(t3)
    addi t3, t3, 4
    bltu t3, t2, 1b
    li t0, {RET:#x}
    sw t0, 0(t2)
    mv a0, s0
    li a1, 0x800000
    li a2, 5
    li a7, 226
    ecall
    li t1, 0x800000 - 4096
    add t1, s0, t1
    jalr t1
    la t0, out
    sd a0, 0(t0)
    li a0, 1
    la a1, out
    li a2, 8
    li a7, 64
    ecall
    li a0, 0
    li a7, 94
    ecall
.data
out: .dword 0
"""


_CLI = """
import sys
from emukern.cli import main
rc = main(sys.argv[1:])
sys.stdout.flush()
# VmHWM: this mm's own peak RSS (ru_maxrss would carry the forking pytest worker's size across exec)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(f"VmHWM {hwm}", file=sys.stderr)
sys.exit(rc)
"""


def run_cli(src: Path) -> tuple[subprocess.CompletedProcess, int]:
    """Run `emukern run` in a child (in-process emulation, EMUKERN_NO_FORK); returns the process
    and the child's peak RSS in KiB."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMUKERN_NO_FORK": "1"}
    p = subprocess.run([sys.executable, "-c", _CLI, "run", "-q", str(src)], capture_output=True,
                       timeout=180, env=env, cwd=ROOT)
    hwm = [l for l in p.stderr.decode(errors="replace").splitlines() if l.startswith("VmHWM ")]
    return p, int(hwm[-1].split()[1]) if hwm else 1 << 40


def test_8_mib_of_rdcycle_words_keeps_host_memory_small(tmp_path):
    src = tmp_path / "big.S"
    src.write_text("# arch: riscv64\n" + BIG)
    p, rss_kib = run_cli(src)
    assert p.returncode == 0, p.stderr[-1500:]
    cycles = int.from_bytes(p.stdout[:8], "little")
    assert 0 < cycles < 50_000_000          # the model's clock (the fill loop is ~6M insns), not host ticks
    assert rss_kib < 400 * 1024, f"host peak RSS {rss_kib} KiB"
    p2, _ = run_cli(src)
    assert p2.stdout == p.stdout            # deterministic


# A page is executed (scanned) first, then the program writes a counter read into it and calls
# it again: the value must be the model's, the same in every run.
SMC = """.globl _start
_start:
    li a0, 0
    li a1, 4096
    li a2, 7
    li a3, 0x22
    li a4, -1
    li a5, 0
    li a7, 222
    ecall
    mv s0, a0
    li t0, 0x00000513      # li a0, 0
    sw t0, 0(s0)
    li t0, {ret:#x}
    sw t0, 4(s0)
    fence.i
    jalr s0
    li t0, {word:#x}
    sw t0, 0(s0)
    fence.i
    jalr s0
    la t0, out
    sd a0, 0(t0)
    li a0, 1
    la a1, out
    li a2, 8
    li a7, 64
    ecall
    li a0, 0
    li a7, 94
    ecall
.data
out: .dword 0
"""


@pytest.mark.parametrize("word", [RDCYCLE_A0, RDINSTRET_A0], ids=["rdcycle", "rdinstret"])
def test_counter_read_written_at_run_time_reads_the_model(run_guest, word):
    outs = []
    for _ in range(2):
        r, m = run_guest(SMC.format(word=word, ret=RET), arch="riscv64")
        assert r.exit_status == 0, (r.message, r.fault)
        outs.append(int.from_bytes(r.stdout[:8], "little"))
    assert outs[0] == outs[1]
    assert 0 < outs[0] <= m.kernel.cpus[0].now        # a value of this run's clock, not host ticks
    if word == RDINSTRET_A0:
        assert outs[0] <= m.kernel.cpus[0].insns


def test_no_per_address_hooks(run_guest):
    r, m = run_guest(SMC.format(word=RDCYCLE_A0, ret=RET), arch="riscv64")
    cpu = m.kernel.cpus[0]
    assert not hasattr(cpu, "_hooked_counters")
    assert cpu.exit_stops >= 1 and cpu.code_scans >= 2
