"""The queue a CPU restarts with after a switch, done without a stub run of its own
(Arm64Cpu._restart_plan): FPSIMD saves and loads through the register file, the one flush entered
first by the user run and returned from natively (native/a64_stub.c), with CPACR_EL1 written back
on that return when EL0 SVE is to trap.  Everything observable must be what running the queue in
order with stub_sync gives -- the whole SVE register file, the saved buffer, x0-x3 and the PC, the
clock, stub_insns/stub_stats and their key order, and whether the next SVE instruction traps --
checked against a twin CPU that takes the stub_sync path.
"""
from __future__ import annotations

import pytest

from emukern.kernel.arch.arm64 import entry_fpsimd as EF
from emukern.kernel.arch.arm64.entry_fpsimd import SveStateArea, read_sve_state, write_sve_state
from emukern.machine.trap import TrapKind
from tests.machine.test_sve_stub import asm, make_cpu, rand_state

# a user instruction, then an SVE one (it traps while EL0 SVE is disabled), then a stop
_GUEST = "mov x5, #5\nindex z7.b, #1, #1\nmov x6, #6\nbrk #1"

# (queue, EL0 SVE before the queue, EL0 SVE after it): the thread ping-pong's two restarts --
# the syscall flush a TIF_SVE task left when it blocked, then its save and the next task's load;
# a save and a load of a TIF_SVE task with the sve_flush_p that follows it -- and variations
CASES = [
    (("sve_flush_live", "save", "load"), True, False),
    (("sve_flush_live", "save", "load"), True, True),
    (("save", "load", "sve_flush_p"), False, True),
    (("save", "load", "sve_flush_p"), True, True),        # Z above 128 dirty: stub_sync path
    (("save", "sve_flush_live"), True, False),
    (("sve_flush_p",), True, True),
    (("sve_flush_p",), True, False),
    (("load", "sve_flush_live"), True, True),
]


def _observed(cpu):
    return {"now": cpu.now, "insns": cpu.insns, "stub_insns": cpu.stub_insns,
            "stats": list(cpu.stub_stats.items()), "cycles": list(cpu.stub_cycles.items()),
            "x": [cpu.reg(i) for i in range(7)], "pc": cpu.get_pc()}


def _restart(vl, queue, sve_before, sve_after, path, budget, monkeypatch):
    EF._inspect.clear()     # (a fresh inspection buffer: what the bounce buffer holds is compared too)
    cpu = make_cpu(vl, asm(_GUEST))
    a = SveStateArea(slots=3)
    save_slot, load_slot = a.alloc(), a.alloc()
    write_sve_state(cpu, rand_state(vl, 5))
    if sve_before:
        cpu.set_sve_el0(True)
        cpu.run(cpu.now + 1)                 # (EL0 ran with SVE enabled: Z above 128 unknown)
    else:
        EF.run(cpu, "sve_flush_live")        # (Z above 128 known zero, as after a flush)
        assert cpu._zhi_clean
    src = rand_state(vl, 9)
    a.write(load_slot + a.fp_off, b"".join(z[:16] for z in src["z"])
            + src["fpsr"].to_bytes(4, "little") + src["fpcr"].to_bytes(4, "little"))
    for i in range(4):
        cpu.set_reg(i, 0x100 + i)
    entered = []
    if path == "sync":
        monkeypatch.setattr(cpu, "_restart_plan", lambda until: False)
    else:
        real = cpu._restart_plan
        monkeypatch.setattr(cpu, "_restart_plan", lambda until: entered.append(real(until)) or entered[-1])
    for name in queue:
        if name == "save":
            EF.queue(cpu, "fpsimd_save_state", a, save_slot)
        elif name == "load":
            EF.queue(cpu, "fpsimd_load_state", a, load_slot)
        else:
            EF.queue(cpu, name)
    cpu.set_sve_el0(sve_after)
    traps = []

    def on_trap(c, trap):
        traps.append(trap.kind)
        if trap.kind is TrapKind.SVE_ACCESS:
            c.set_sve_el0(True)
        else:
            c.stop()
    cpu.on_trap = on_trap
    cpu.run(cpu.now + budget)
    first = _observed(cpu)
    cpu.run(cpu.now + 1000)
    monkeypatch.undo()
    return (first, _observed(cpu), traps, read_sve_state(cpu), bytes(a.view(save_slot))), entered


@pytest.mark.parametrize("vl", (128, 512, 2048))
@pytest.mark.parametrize("queue,sve_before,sve_after", CASES)
def test_restart_equals_stub_sync(vl, queue, sve_before, sve_after, monkeypatch):
    if vl == 128 and "sve_flush_live" in queue:
        queue = tuple("sve_flush_p" if q == "sve_flush_live" else q for q in queue)
    fast, entered = _restart(vl, queue, sve_before, sve_after, "plan", 1000, monkeypatch)
    real, _ = _restart(vl, queue, sve_before, sve_after, "sync", 1000, monkeypatch)
    assert fast == real
    assert (TrapKind.SVE_ACCESS in fast[2]) is (not sve_after)     # CPACR_EL1 as the kernel left it
    dirty_keep = sve_before and "load" in queue and "sve_flush_p" in queue
    assert entered == [not dirty_keep]


@pytest.mark.parametrize("budget", (1, 18, 19, 40, 41))
def test_restart_near_the_end_of_the_budget(budget, monkeypatch):
    """A run whose budget the queue does not fit in: the queue runs as stub_sync runs it."""
    queue = ("save", "load", "sve_flush_p")
    fast, _ = _restart(512, queue, False, True, "plan", budget, monkeypatch)
    real, _ = _restart(512, queue, False, True, "sync", budget, monkeypatch)
    assert fast == real
