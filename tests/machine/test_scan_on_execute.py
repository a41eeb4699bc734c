"""Scan-on-execute across CPUs sharing an address space (cpu_base).

CPU 0 executes a writable code page (so it is scanned and executable in CPU 0's view); CPU 1
then writes an fp16 word that aborts Unicorn's translator into a part of that page CPU 0 has
not translated yet, and CPU 0 jumps there.  CPU 1's view must have had the page
write-protected (scanned elsewhere), its store must reset CPU 0's view, and CPU 0 must see an
illegal instruction instead of translating the word.  Run in a forked child: if the protection
failed, the host process would die of SIGABRT.
"""
from __future__ import annotations

import os

from emukern.machine.clock import Clock
from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.machine.memory import AddressSpace
from emukern.machine.trap import TrapKind

BAD = 0x4E78B988
P = 0x30000


def words(*ws: int) -> bytes:
    return b"".join(w.to_bytes(4, "little") for w in ws)


def scenario() -> list[str]:
    mm = AddressSpace()
    # CPU 0: x19 = P; blr x19; brk #1 ; then (second entry) add x19, x19, #8; blr x19; brk #2
    mm.map(0x10000, 0x1000, "r-x", "cpu0", words(0xD2A00073, 0xD63F0260, 0xD4200020,
                                                0x91002273, 0xD63F0260, 0xD4200040))
    # CPU 1: x19 = P; w9 = BAD (movz/movk); str w9, [x19, #8]; brk #3
    mm.map(0x11000, 0x1000, "r-x", "cpu1", words(0xD2A00073, 0x52973109, 0x72A9CF09, 0xB9000A69, 0xD4200060))
    mm.map(P, 0x1000, "rwx", "jit", words(0x52800020, 0xD65F03C0, 0xD503201F, 0xD65F03C0))
    clock = Clock()
    cpus = [Arm64Cpu(i, clock, sve_vl=128) for i in range(2)]
    seen: list[str] = []

    def on_trap(c, trap):
        seen.append(f"cpu{c.index}:{trap.kind.value}:{trap.insn:#x}" if trap.insn is not None else
                    f"cpu{c.index}:{trap.kind.value}")
        c.stop()
    for c, entry in zip(cpus, (0x10000, 0x11000)):
        c.on_trap = on_trap
        c.attach_mm(mm)
        c.set_pc(entry)
        c.enter_el0()
    cpus[0].run(cpus[0].now + 10_000)          # executes P (scanned on CPU 0), then brk #1
    cpus[1].run(cpus[1].now + 10_000)          # stores BAD at P+8, then brk #3
    cpus[0].set_pc(0x1000C)
    cpus[0].run(cpus[0].now + 10_000)          # jumps to P+8
    seen.append(f"P+8={int.from_bytes(mm.read(P + 8, 4), 'little'):#x}")
    return seen


def test_cross_cpu_code_write_is_seen_before_translation():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.write(w, "|".join(scenario()).encode())
        finally:
            os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 4096):
        out += chunk
    _, st = os.waitpid(pid, 0)
    assert os.WIFEXITED(st), f"the host died of signal {os.WTERMSIG(st)}"
    seen = out.decode().split("|")
    assert seen[0] == "cpu0:breakpoint:0xd4200020"
    assert seen[1] == "cpu1:breakpoint:0xd4200060"
    assert seen[2] == f"cpu0:{TrapKind.ILLEGAL.value}:{BAD:#x}"
    assert seen[3] == f"P+8={BAD:#x}"
