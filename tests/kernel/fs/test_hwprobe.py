"""riscv_hwprobe (syscall 258) against Documentation/arch/riscv/hwprobe.rst and sys_hwprobe.c:
every key, unknown keys, cpu sets, RISCV_HWPROBE_WHICH_CPUS, bad flags and pointers."""
from __future__ import annotations

import re

import pytest

from emukern.api import Machine
from emukern.kernel.arch.riscv.hwprobe import IMA_EXT_0_BITS

FD, C, V = 1 << 0, 1 << 1, 1 << 2
ZVE = sum(1 << IMA_EXT_0_BITS[n] for n in ("zve32x", "zve32f", "zve64x", "zve64f", "zve64d"))
ZCA_ZCD = (1 << IMA_EXT_0_BITS["zca"]) | (1 << IMA_EXT_0_BITS["zcd"])


def parse(out: str) -> tuple[dict[int, int], dict[str, str]]:
    keys: dict[int, int] = {}
    order = []
    rest = {}
    for ln in out.splitlines():
        m = re.fullmatch(r"key (-?\d+) = 0x([0-9a-f]+)", ln)
        if m:
            order.append((int(m.group(1)), int(m.group(2), 16)))
        else:
            k, _, v = ln.partition(": ")
            rest[k] = v
    for i, (k, v) in enumerate(order[:10]):
        keys[i] = v if k == i else -999
    rest["unknown"] = order[10:]
    return keys, rest


@pytest.mark.parametrize("cpus", [1, 3])
@pytest.mark.parametrize("has_v", [True, False])
def test_hwprobe_semantics(cbuild, cpus, has_v):
    exe = cbuild("hwprobe", "riscv64", static=True)
    m = Machine(cpus=cpus, has_v=has_v, timer_freq=10_000_000).load(exe)
    r = m.run()
    assert r.exit_status == 0
    keys, rest = parse(r.stdout.decode())
    assert rest["all"] == "0"
    assert keys[0] == keys[1] == keys[2] == 0          # mvendorid/marchid/mimpid of the CPU
    assert keys[3] == 1                                # RISCV_HWPROBE_BASE_BEHAVIOR_IMA
    ext = FD | C | ZCA_ZCD | ((V | ZVE) if has_v else 0)
    assert keys[4] == ext                              # no Zba/Zbb/Zbs...: the harts lack them
    assert keys[5] == keys[9] == 3                     # MISALIGNED_FAST (cost model: no penalty)
    assert keys[6] == 0                                # no Zicboz: block size 0
    assert keys[7] == m.kernel.arch.STACK_TOP - 1      # highest user virtual address
    assert keys[8] == 10_000_000                       # the rdtime frequency
    assert rest["unknown"] == [(-1, 0), (-1, 0)]       # unknown keys: key -1, value 0, call succeeds
    assert rest["cpu0"] == f"0 0x{ext:x}"
    assert rest["offline set"] == "-22"                # no online CPU in the set
    assert rest["bad flags"] == "-22"
    assert rest["bad pointer"] == "-14"
    assert rest["set size 0 with a set"] == "-22"      # the kselftest's "Bad CPU set"
    assert rest["NULL set with size 1"] == "-14"       # copy_from_user(NULL)
    assert rest["one-byte set"] == "0"
    assert rest["which fd|c"] == f"0 set=0x{(1 << cpus) - 1:x}"   # empty set = all online CPUs
    assert rest["which zba"] == "0 set=0x0"
    assert rest["which unknown"] == "0 set=0x0 key=-1"
    assert rest["which without set"] == "-22"


def test_hwprobe_is_riscv_only(run_guest):
    r, m = run_guest("""
        .globl _start
        _start: mov x8, #258
                mov x0, #0
                svc #0
                neg x0, x0
                mov x8, #93
                svc #0""", arch="arm64")
    assert r.exit_status == 38                          # ENOSYS: 258 is RISC-V's arch slot
