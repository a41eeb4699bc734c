"""The SVE2 unit inside the arm64 CPU: the SVE access trap before first use, the feature gate
(unicorn-max, per-CPU ID overrides), one retired instruction per SVE2 word, determinism, bad
encodings, the honest error for an advertised but unimplemented word, and the machine pages
(microcode and transfer page) out of EL0's reach."""
from __future__ import annotations

import signal

import pytest

from emukern.machine.sve2.unit import Sve2NotImplemented
from emukern.machine.sve2.xfer import MICROCODE, XFER_BASE

EXIT = """
    mov x0, #0
    mov x8, #93
    svc #0
"""
WRITE_Z0 = """
    adr x1, buf
    str z0, [x1]
    mov x0, #1
    rdvl x2, #1
    mov x8, #64
    svc #0
"""


def prog(body: str, tail: str = WRITE_Z0 + EXIT) -> str:
    return f"""// arch: arm64
.globl _start
_start:
{body}
{tail}
.data
.balign 16
buf: .zero 512
"""


SQABS_GUEST = prog("""
    ptrue p0.b
    index z1.b, #-16, #3
    sqabs z0.b, p0/m, z1.b
""")


def test_first_use_is_an_sve_access_trap_then_the_unit_runs(run_guest):
    # the first SVE-family word is the SVE2 one: with SVE off at EL0 it takes the SVE access
    # trap (EC 0x19, do_sve_acc) like any SVE instruction; the retry runs in the unit
    r, m = run_guest(prog("""
    sqabs z0.b, p0/m, z1.b
    ptrue p0.b
    index z1.b, #-16, #3
    sqabs z0.b, p0/m, z1.b
"""), sve_vl=128)
    assert r.exit_status == 0
    assert r.traps.get("sve-access") == 1
    want = bytes(min(abs(-16 + 3 * i), 127) for i in range(16))
    assert r.stdout == want
    assert m.kernel.cpus[0].sve2.insns == 2


def test_unicorn_max_does_not_advertise_sve2_so_it_stays_undef(run_guest):
    r, m = run_guest(SQABS_GUEST, arm64_cpu_model="unicorn-max")
    assert r.signal == signal.SIGILL and r.exit_status == 128 + signal.SIGILL
    assert m.kernel.cpus[0].sve2.insns == 0


def test_per_cpu_id_override_turns_the_feature_off(run_guest):
    r, _ = run_guest(SQABS_GUEST, cpu_id_overrides={0: {"ID_AA64ZFR0_EL1.SVEver": 0}})
    assert r.signal == signal.SIGILL
    r, _ = run_guest(prog("    bdep z0.b, z1.b, z2.b"),
                     cpu_id_overrides={0: {"ID_AA64ZFR0_EL1.BitPerm": 0}})
    assert r.signal == signal.SIGILL
    r, _ = run_guest(prog("    bdep z0.b, z1.b, z2.b"))        # the default model has it
    assert r.exit_status == 0


def test_no_sve_machine_sigills(run_guest):
    r, m = run_guest(SQABS_GUEST, has_sve=False)
    assert r.signal == signal.SIGILL
    assert m.kernel.cpus[0].sve2 is None


LOOP = """
    ptrue p0.b
    mov x9, #{n}
1:  {insn}
    subs x9, x9, #1
    b.ne 1b
"""


@pytest.mark.parametrize("insn", ["sqabs z0.s, p0/m, z1.s", "eor3 z0.d, z0.d, z1.d, z2.d",
                                  "aese z0.b, z0.b, z1.b", "whilege p1.h, x9, xzr"])
def test_one_retired_instruction_each(run_guest, insn):
    """A loop of N SVE2 words counts exactly as the same loop with a base instruction in their
    place: the microcode's instructions are not the guest's."""
    n = 50
    r2, m = run_guest(prog(LOOP.format(n=n, insn=insn), EXIT))
    r1, _ = run_guest(prog(LOOP.format(n=n, insn="orr x10, x10, x10"), EXIT))
    assert r2.exit_status == r1.exit_status == 0
    assert r2.user_insns == r1.user_insns
    assert m.kernel.cpus[0].sve2.insns == n
    assert r2.traps == r1.traps


def test_deterministic(run_guest):
    g = prog(LOOP.format(n=20, insn="bgrp z0.h, z0.h, z1.h") + "    index z1.h, #1, #7\n"
             "    bext z0.h, z0.h, z1.h")
    a, _ = run_guest(g, sve_vl=512)
    b, _ = run_guest(g, sve_vl=512)
    assert (a.stdout, a.user_insns, a.cycles, a.traps) == (b.stdout, b.user_insns, b.cycles, b.traps)


def test_registers_the_instruction_does_not_write_are_untouched(run_guest):
    """x0/x1 (the microcode's base registers), NZCV, the other Z and P survive an SVE2 word."""
    r, _ = run_guest(prog("""
    ptrue p3.s
    index z5.s, #3, #5
    movz x0, #0x1234
    movz x1, #0x5678
    cmp x0, x1
    eor3 z0.d, z0.d, z5.d, z5.d
    mrs x10, nzcv
    adr x11, buf
    stp x0, x1, [x11, #64]
    str x10, [x11, #80]
    add x12, x11, #96
    str z5, [x12]
    add x13, x12, #16
    str p3, [x13]
""", """
    adr x1, buf
    add x1, x1, #64
    mov x0, #1
    mov x2, #64
    mov x8, #64
    svc #0
""" + EXIT), sve_vl=128)
    assert r.exit_status == 0
    out = r.stdout
    assert int.from_bytes(out[0:8], "little") == 0x1234 and int.from_bytes(out[8:16], "little") == 0x5678
    assert int.from_bytes(out[16:24], "little") >> 28 == 0b1000     # 0x1234 - 0x5678 < 0: N set
    z5 = out[32:48]
    assert z5 == b"".join((3 + 5 * i).to_bytes(4, "little") for i in range(4))
    assert out[48:50] == bytes([0x11, 0x11])                         # ptrue p3.s at VL 128


@pytest.mark.parametrize("word,what", [
    (0x04203400, "xar with tsz = 0"),
    (0x45806800, "pmullb with size = 10"),
    (0x45806C00, "pmullt with size = 10"),
])
def test_unallocated_fields_inside_a_class_are_undef(run_guest, word, what):
    r, m = run_guest(prog(f"    ptrue p0.b\n    .inst {word:#x}   // {what}"))
    assert r.signal == signal.SIGILL, what
    assert m.kernel.cpus[0].sve2.insns == 0


def test_advertised_but_unimplemented_is_an_emulator_error(run_guest, monkeypatch):
    # HISTCNT (SVE2) is FEAT_SVE2, which the default model advertises; with the unit's table
    # hiding it (the unit implements it now: this stands for any word it does not), it gives
    # a clear error naming it, not a SIGILL the modelled CPU never raises
    from emukern.machine.sve2 import decode
    real = decode.lookup
    monkeypatch.setattr(decode, "lookup",
                        lambda w: None if w & 0xFF20E000 == 0x4520C000 else real(w))
    with pytest.raises(Sve2NotImplemented) as ei:
        run_guest(prog("    ptrue p0.b\n    histcnt z0.s, p0/z, z1.s, z2.s"))
    assert "histcnt" in str(ei.value) and "--cpu-model unicorn-max" in str(ei.value)
    # ... and under unicorn-max (not advertised) the same word is an ordinary SIGILL
    r, _ = run_guest(prog("    ptrue p0.b\n    histcnt z0.s, p0/z, z1.s, z2.s"), arm64_cpu_model="unicorn-max")
    assert r.signal == signal.SIGILL


def test_matrix_features_without_an_implementation_stay_undef(run_guest):
    from emukern.machine.sve2 import decode
    if "svef32mm" in decode.IMPLEMENTED_FEATURES:
        pytest.skip("the matrix-multiply module implements F32MM")
    r, _ = run_guest(prog("    ptrue p0.b\n    fmmla z0.s, z1.s, z2.s"))
    assert r.signal == signal.SIGILL


@pytest.mark.parametrize("target", [MICROCODE, MICROCODE + 4 * 64])
def test_user_cannot_jump_into_the_microcode(run_guest, target):
    r, _ = run_guest(prog(f"""
    movz x9, #{target & 0xFFFF:#x}
    movk x9, #{(target >> 16) & 0xFFFF:#x}, lsl #16
    movk x9, #{(target >> 32) & 0xFFFF:#x}, lsl #32
    br x9
"""))
    assert r.signal == signal.SIGSEGV


def test_user_cannot_read_the_transfer_page_even_after_a_transfer(run_guest):
    r, _ = run_guest(prog(f"""
    ptrue p0.b
    sqabs z0.b, p0/m, z1.b
    movz x9, #{XFER_BASE & 0xFFFF:#x}
    movk x9, #{(XFER_BASE >> 16) & 0xFFFF:#x}, lsl #16
    movk x9, #{(XFER_BASE >> 32) & 0xFFFF:#x}, lsl #32
    ldr x10, [x9]
"""))
    assert r.signal == signal.SIGSEGV


CHAIN = """
    ptrue p0.b
    index z1.s, #-7, #5
    index z2.s, #3, #-2
    mov x9, #{n}
1:  sqabs z0.s, p0/m, z1.s
    eor3 z0.d, z0.d, z1.d, z2.d
    aese z0.b, z0.b, z1.b
    whilehs p1.h, x9, xzr
    subs x9, x9, #1
    b.ne 1b
"""


@pytest.mark.parametrize("opts", [{}, {"freq_hz": 1_000_000, "hz": 1000}], ids=["no-ticks", "ticks"])
def test_a_run_of_sve2_words_counts_and_computes_as_one_at_a_time(run_guest, machine_factory, tmp_path, opts):
    """Four consecutive SVE2 words per iteration: batched in one trap (the default) or one trap
    each (batch_vector off, as under the debugger): the same output and counts, and each counts
    as one instruction (against four base instructions)."""
    n = 30 if not opts else 400          # with ticks every 1000 cycles, some land inside a run
    g = prog(CHAIN.format(n=n))
    r1, m1 = run_guest(g, sve_vl=512, **opts)
    src = tmp_path / "chain.S"
    src.write_text(g)
    m2 = machine_factory(sve_vl=512, **opts)
    m2.load(src)
    for cpu in m2.kernel.cpus:
        cpu.batch_vector = False
    r2 = m2.run()
    base, _ = run_guest(prog(CHAIN.format(n=n).replace("sqabs z0.s, p0/m, z1.s", "orr x10, x10, x10")
                             .replace("eor3 z0.d, z0.d, z1.d, z2.d", "orr x10, x10, x10")
                             .replace("aese z0.b, z0.b, z1.b", "orr x10, x10, x10")
                             .replace("whilehs p1.h, x9, xzr", "orr x10, x10, x10")), sve_vl=512, **opts)
    assert r1.exit_status == r2.exit_status == 0
    assert r1.stdout == r2.stdout
    assert r1.user_insns == r2.user_insns == base.user_insns
    assert r1.cycles == r2.cycles and r1.traps == r2.traps
    assert m1.kernel.cpus[0].sve2.insns == m2.kernel.cpus[0].sve2.insns == 4 * n
    assert m2.kernel.cpus[0].sve2.runs == 4 * n
    if opts:
        assert r1.traps.get("timer", 0) > 0
        assert n < m1.kernel.cpus[0].sve2.runs < 4 * n       # some runs were cut by a tick
    else:
        assert m1.kernel.cpus[0].sve2.runs == n
