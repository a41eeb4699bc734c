"""NT_RISCV_VECTOR through PTRACE_GETREGSET/SETREGSET (kernel/arch/riscv/vector.py riscv_vr_get/_set,
regset.py) with a real tracer/tracee pair, guest_asm/c/vptrace_probe.c.

What the expected lines follow:

* Linux 6.12 (``debian-13-riscv64``): a tracee that never used V is EINVAL, SETREGSET checks only
  vlenb (a vill vtype is accepted);
* Linux 7.0 on (``linux-7.3-riscv64``, the default): ENODATA, and SETREGSET refuses CSR values the
  hardware could not hold (Sergey Matyukevich's series: vill, reserved bits, VL above VLMAX ...);
* the regset's length is cut to header + 32 * RISCV_MAX_VLENB (262184); 7 bytes is not a whole
  number of its 4-byte units;
* the round trip (a write, read back, seen by the child after the stop) at VLEN 128/256/512 and
  several vtype/vl pairs, under every riscv-discard value;
* the hidden state after a syscall — what a debugger reads at the first stop after getpid()
  differs between the values as the kernels differ: ``eager`` saved the clobbered registers
  (vl 0, vtype vill, all ones) when the discard knob is on, its live registers when off;
  ``deferred`` shows the stale saved context (the values the tracer wrote at the stop before: 6.12
  + the seed fail validate_v_ptrace's "V state is illegal after syscall" here); ``optimize-restore``
  shows the nulled state (riscv_v_ucontext_save), and a write there is accepted and dropped, so
  the child sees the clobber (knob on) or its own live registers (knob off).  With the knob off the
  nulling is skipped and the save that follows copies the tracer's CPU's register file — the
  tracee's live registers, as the patched real kernel's GETREGSET showed (tests/oracle/
  optimize_restore_knob0.expected).
"""
from __future__ import annotations

import pytest

from emukern.api import Machine

VILL = 1 << 63
# (VLEN, vtype the child sets, vtype the tracer writes, vl the tracer writes)
CASES = [(128, 0x1B, 0x07, 1), (256, 0x09, 0x11, 4), (512, 0x00, 0x1A, 16), (512, 0x0E, 0x0B, 128)]


def _vlmax(vlen: int, vtype: int) -> int:
    sew = 8 << ((vtype >> 3) & 7)
    lmul = vtype & 7
    return vlen * (1 << lmul) // sew if lmul < 4 else vlen // sew // (1 << (8 - lmul))


def cx(v: int) -> str:
    """C's %#x (0 prints as 0)."""
    return hex(v) if v else "0"


def expected(vlen: int, vtype: int, new_vtype: int, new_vl: int, impl: str, knob: int, v612: bool) -> str:
    vlenb = vlen // 8
    size = 40 + 32 * vlenb

    def view(vl: int, vt: int, b: int, b31: int | None = None) -> str:
        return (f"length {size} vstart 0 vl {vl} vtype {cx(vt)} vcsr 0 vlenb {vlenb} "
                f"v0[0] {cx(b)} v31[0] {cx(b if b31 is None else b31)}")

    nulled, stale, live = (0, VILL, 0xFF), (new_vl, new_vtype, 0x5A), (1, 0xC0, 0x5A)
    hidden = {"eager": nulled if knob else live, "deferred": stale,
              "optimize-restore": nulled if knob else live}[impl]
    # optimize-restore with the knob off: neither the GETREGSET nor the return to user clobbers
    # or restores, so the child resumes with what the register file holds — the state the
    # GETREGSET's save left in it (its whole-register e8/m8 vsetvli: VLMAX, vtype 0xc3)
    after = {"eager": (1, 0, 0x77), "deferred": (1, 0, 0x77),
             "optimize-restore": nulled if knob else (vlen, 0xC3, 0x5A)}[impl]
    ok = lambda x: "ok" if x else "Invalid argument"        # noqa: E731
    lines = [
        "stop 0: signal 19",
        "before first use: GETREGSET " + ("Invalid argument" if v612 else "No data available"),
        "stop 1: signal 5",
        "after vsetvl: " + view(_vlmax(vlen, vtype), vtype, 1, 4),
        "length 7: Invalid argument",
        "length 1 MiB: ok, cut to 262184",
        "SETREGSET vill: " + ok(v612),
        "SETREGSET vlenb*2: Invalid argument",
        f"SETREGSET vtype {new_vtype:#x} vl {new_vl}: ok",
        "read back: " + view(new_vl, new_vtype, 0x5A),
        "stop 2: signal 5",
        "after a syscall: " + view(*hidden),
        "SETREGSET after a syscall: ok",
        f"child after stop 1: vl {new_vl} vtype {cx(new_vtype)} v0[0] 0x5a v31[0] 0x5a",
        f"child after stop 2: vl {after[0]} vtype {cx(after[1])} v0[0] {cx(after[2])} v31[0] {cx(after[2])}",
    ]
    return "\n".join(lines) + "\n"


def _run(cguest, vlen, vtype, new_vtype, new_vl, impl, knob, kernel=None):
    elf = cguest("vptrace_probe", "riscv64", "-march=rv64gcv")
    opts = dict(arch="riscv64", vlen=vlen, policies={"riscv-discard": impl})
    if kernel:
        opts["kernel"] = kernel
    else:
        opts["sysctls"] = {"abi.riscv_v_vstate_discard": str(knob)}
    m = Machine(**opts)
    r = m.load(elf, [hex(vtype), hex(new_vtype), str(new_vl)]).run()
    assert r.exit_status == 0, (r.message, r.stdout)
    return r.stdout.decode()


@pytest.mark.parametrize("knob", [0, 1])
@pytest.mark.parametrize("impl", ["eager", "deferred", "optimize-restore"])
@pytest.mark.parametrize("vlen,vtype,new_vtype,new_vl", CASES, ids=[f"vlen{c[0]}-{c[1]:#x}-{c[2]:#x}" for c in CASES])
def test_v_regset_round_trip_and_hidden_state(cguest, vlen, vtype, new_vtype, new_vl, impl, knob):
    assert _run(cguest, vlen, vtype, new_vtype, new_vl, impl, knob) == \
        expected(vlen, vtype, new_vtype, new_vl, impl, knob, v612=False)


@pytest.mark.parametrize("impl", ["eager", "deferred", "optimize-restore"])
def test_v_regset_linux_6_12(cguest, impl):
    """Debian 13's 6.12 as shipped has no discard knob (it always clobbers): EINVAL before first
    use, vill accepted."""
    assert _run(cguest, 256, 0x09, 0x11, 4, impl, 1, kernel="debian-13-riscv64") == \
        expected(256, 0x09, 0x11, 4, impl, 1, v612=True)


def test_strict_csr_checks():
    """invalid_v_csr against validate_v_ptrace's v_csr_invalid / v_csr_valid variants (VLEN 128)."""
    from emukern.kernel.arch.riscv.vector import invalid_v_csr
    vlenb = 16
    bad = [(0, 0, 0x3, 1 << 8), (0, 0, (1 << 8) | 3, 0), (0, 0, VILL | 3, 0), (0, 0, 4 << 3, 0),
           (0, 0, 0x4, 0), (0, 0, 0x1D, 0), (0, 8, 0x19, 0)]
    good = [(0, 0, 0x16, 0), (0, 0, 0x11, 0), (0, 0, 0x9, 0), (0, 16, 0x9, 7)]
    assert [invalid_v_csr(vlenb, *c) for c in bad] == [True] * len(bad)
    assert [invalid_v_csr(vlenb, *c) for c in good] == [False] * len(good)
