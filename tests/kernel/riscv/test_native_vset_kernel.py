"""The kernel's view of vsetvli/vsetivli/vsetvl executed natively by the machine's vector unit
(emukern/machine/rvv/native.py): every RVV guest gives byte-identical JSON and trap trace with
the native path on and off (EMUKERN_NATIVE_VSET); context switches save and restore the vl/vtype
a native vsetvli set (and a keep-vl vsetvli right after a switch uses the restored state); a
signal frame's V record holds them; the debugger stepping onto a vsetvli stops on it.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.machine.counter import native_available

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native hooks")

GUESTS = Path(__file__).resolve().parents[3] / "guest_asm" / "riscv"
VECTOR_GUESTS = sorted(p.name for p in GUESTS.glob("*.S") if "vset" in p.read_text())
ARGS = {"null_syscall.S": ["300", "1"], "lat_ctx_vec.S": ["200"]}
# ticks inside blocks and between vector instructions, two CPUs, short rounds (as the block
# counter's equivalence test)
# (round-robin: the switches at every short tick are what these runs exercise)
RUN = {"hz": 64000, "cpus": 2, "quantum": 997, "max_insns": 1_500_000, "sched": "rr"}


def _trace(k) -> list[tuple]:
    return [(r.seq, r.cpu, r.tid, r.time, r.kind, r.pc, r.syndrome, r.handler, r.decision, r.cycles,
             tuple(r.tif)) for r in k.trap_log]


def _both(monkeypatch, path, argv=(), **options):
    out = []
    for native in (True, False):
        monkeypatch.setenv("EMUKERN_NATIVE_VSET", "1" if native else "0")
        m = Machine(**options)
        m.load(path, list(argv))
        r = m.run()
        out.append((json.dumps(r.to_json(), sort_keys=True), _trace(m.kernel), r,
                    sum(c.native_vset for c in m.kernel.cpus), m))
    return out


def test_there_are_vector_guests():
    assert len(VECTOR_GUESTS) >= 10 and "null_syscall.S" in VECTOR_GUESTS


@needs_native
@pytest.mark.parametrize("prog", VECTOR_GUESTS)
@pytest.mark.parametrize("policy", ["deferred", "eager"])
def test_guest_identical_native_on_and_off(monkeypatch, prog, policy):
    on, off = _both(monkeypatch, GUESTS / prog, ARGS.get(prog, ()), policies={"riscv-discard": policy}, **RUN)
    assert on[0] == off[0]                 # the --json summary, byte for byte
    assert on[1] == off[1]                 # every trap the kernel took, as --trace traps prints it
    assert off[3] == 0
    assert on[3] > 0                       # the native path did run


@needs_native
def test_null_syscall_loop_vsetvli_never_reaches_python(monkeypatch):
    """The issue-19 loop: all but the first-use vsetvli run in C."""
    on, off = _both(monkeypatch, GUESTS / "null_syscall.S", ["1000", "1"], vlen=512)
    assert on[0] == off[0] and on[1] == off[1]
    # the first one is the kernel's first-use trap (VS Off), then runs natively when re-executed
    assert on[3] == 1001
    assert [t for t in on[1] if "first_use" in t[7]] and on[1] == off[1]
    cpu = on[4].cpu(0)
    assert cpu.vector_insns == off[4].cpu(0).vector_insns == 1001


# ---- context switches between two vector tasks -----------------------------------------------
def _pingpong_task(label: str, avl: int, vt_a: str, vt_b: str, want_b: int) -> str:
    """A loop: vsetvli (AVL, A), keep-vl vsetvli B (same VLMAX), a spin a tick may interrupt,
    then check vl and vtype; keep-vl back to A after the spin (a switch may have run between:
    then the restored state is what the keep-vl form sees).  s5 counts mismatches."""
    return f"""
{label}:
    li s1, 300
    li s2, {avl}
    li s5, 0
{label}_loop:
    vsetvli t0, s2, {vt_a}
    vsetvli x0, x0, {vt_b}
    li t3, 150
1:  addi t3, t3, -1
    bnez t3, 1b
    vsetvli x0, x0, {vt_a}
    vsetvli x0, x0, {vt_b}
    li t3, 150
2:  addi t3, t3, -1
    bnez t3, 2b
    csrr t1, vl
    bne t1, s2, {label}_bad
    csrr t2, vtype
    li t4, {want_b:#x}
    bne t2, t4, {label}_bad
    bne t0, s2, {label}_bad
    j {label}_next
{label}_bad:
    addi s5, s5, 1
{label}_next:
    addi s1, s1, -1
    bnez s1, {label}_loop
"""


CTX_GUEST = ("""# arch: riscv64
.globl _start
_start:
    li a0, 17                   # clone(SIGCHLD, 0, 0, 0, 0): fork
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    li a7, 220
    ecall
    bltz a0, fail
    beqz a0, child
""" + _pingpong_task("ptask", 3, "e32, m1, ta, ma", "e16, mf2, ta, ma", 0xCF) + """
    li a0, -1                   # wait4(-1, &status, 0, NULL)
    la a1, status
    li a2, 0
    li a3, 0
    li a7, 260
    ecall
    la t0, status
    lw t1, 0(t0)
    srli t1, t1, 8
    add a0, s5, t1
    li a7, 94
    ecall
child:
""" + _pingpong_task("ctask", 7, "e8, m2, ta, ma", "e16, m4, ta, ma", 0xCA) + """
    mv a0, s5
    li a7, 94
    ecall
fail:
    li a0, 99
    li a7, 94
    ecall
.data
.balign 8
status: .word 0
""")


@needs_native
@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
def test_context_switch_keeps_native_vl_vtype(monkeypatch, tmp_path, vlen):
    src = tmp_path / "ctx.S"
    src.write_text(CTX_GUEST)
    import emukern.kernel.arch.riscv.vector as vector
    real_save = getattr(vector, "__riscv_v_vstate_save")
    saved: list[tuple[int, int]] = []

    def save(k, cpu, st):                  # __switch_to_vector's save: what it stored
        real_save(k, cpu, st)
        saved.append((st.vl, st.vtype))
    monkeypatch.setattr(vector, "__riscv_v_vstate_save", save)
    on, off = _both(monkeypatch, src, vlen=vlen, cpus=1, hz=250_000, sched="rr")
    assert on[0] == off[0] and on[1] == off[1]
    r = on[2]
    assert r.exit_status == 0, "a task saw the other's (or a stale) vl/vtype"
    switches = sum(c["switches"] for c in r.to_json()["cpus"])
    assert switches > 20                   # the loops were interleaved many times
    # the saves at those switches stored the tasks' own vl/vtype (set natively), both runs alike
    assert len(saved) > 20 and len(saved) % 2 == 0
    on_saves = saved[:len(saved) // 2]
    assert on_saves == saved[len(saved) // 2:]
    ptask = {(3, 0xD0), (3, 0xCF)}         # e32/m1 or e16/mf2 (ta, ma), vl 3
    ctask = {(7, 0xC1), (7, 0xCA)}         # e8/m2 or e16/m4, vl 7
    assert set(on_saves) <= ptask | ctask
    assert set(on_saves) & ptask and set(on_saves) & ctask
    assert on[3] > 2 * 300                 # native, including keep-vl forms after a switch


# ---- the signal frame's V record ---------------------------------------------------------------
SIG_GUEST = """# arch: riscv64
# a native vsetvli sets vl = 5, e16/m2, then a load from address 0: SIGSEGV, synchronous (no
# syscall in between, whose ABI may discard the state).  The handler records the frame's V
# record (vstart, vl, vtype), sets other state natively, steps the frame's pc over the load and
# returns; after rt_sigreturn vl/vtype are read again.  res: +0 magic, +8 vstart, +16 vl,
# +24 vtype, +32 vl after, +40 vtype after, +48 vl in the handler
.globl _start
_start:
    li a7, 134                  # rt_sigaction(SIGSEGV, &act, NULL, 8)
    li a0, 11
    la a1, act
    li a2, 0
    li a3, 8
    ecall
    vsetvli t0, x0, e8, m1, ta, ma      # first use (VS Off: the kernel's trap)
    li a0, 5
    vsetvli t0, a0, e16, m2, ta, ma     # native
    ld t3, 0(zero)                      # SIGSEGV
    la t2, res
    csrr t1, vl
    sd t1, 32(t2)
    csrr t1, vtype
    sd t1, 40(t2)
    li a0, 1
    la a1, res
    li a2, 56
    li a7, 64
    ecall
    li a0, 0
    li a7, 94
    ecall
handler:
    la t2, res
    addi t0, a2, 952            # uc + 176 (uc_mcontext) + 256 (sc_regs) + 520 (sc_extdesc.hdr)
    lwu t1, 0(t0)
    sd t1, 0(t2)
    ld t6, 8(t0)                # v_state: vstart, vl, vtype, vcsr, vlenb, datap
    sd t6, 8(t2)
    ld t6, 16(t0)
    sd t6, 16(t2)
    ld t6, 24(t0)
    sd t6, 24(t2)
    ld t1, 176(a2)              # sc_regs.pc: past the load
    addi t1, t1, 4
    sd t1, 176(a2)
    li a3, 2
    vsetvli t5, a3, e64, m1, ta, ma     # native, in the handler
    sd t5, 48(t2)
    ret
.data
.balign 16
act:    .dword handler, 4, 0
.balign 16
res:    .space 64
"""


@needs_native
@pytest.mark.parametrize("vlen", [128, 512])
@pytest.mark.parametrize("policy", ["deferred", "eager"])
def test_signal_frame_holds_native_vl_vtype(monkeypatch, tmp_path, vlen, policy):
    src = tmp_path / "sig.S"
    src.write_text(SIG_GUEST)
    on, off = _both(monkeypatch, src, vlen=vlen, policies={"riscv-discard": policy})
    assert on[0] == off[0] and on[1] == off[1]
    r = on[2]
    assert r.exit_status == 0 and on[3] >= 2
    magic, vstart, vl, vtype, vl_after, vtype_after, vl_handler = struct.unpack("<7Q", r.stdout)
    assert magic == 0x53465457 and vl_handler == 2
    # the frame: the state the native vsetvli set
    assert (vstart, vl, vtype) == (0, 5, 0xC0 | 0x08 | 1)
    assert (vl_after, vtype_after) == (5, 0xC9)          # rt_sigreturn restored it


# ---- the debugger ------------------------------------------------------------------------------
DBG_GUEST = """# arch: riscv64
.globl _start
_start:
    vsetvli t0, x0, e8, m1, ta, ma      # first use
    li a0, 3
before:
    addi a1, a0, 0
second:
    vsetvli t1, a0, e32, m1, ta, ma
    mv a0, t1
    li a7, 94
    ecall
"""


def test_debugger_stepping_stops_on_a_vsetvli(tmp_path):
    from emukern.debug.engine import Debugger
    src = tmp_path / "dbg.S"
    src.write_text(DBG_GUEST)
    d = Debugger(lambda: Machine().load(src))
    d.add_addr_breakpoint("before")
    ev = d.cont()
    assert ev.reason == "breakpoint" and ev.pc == d.symbols["before"]
    ev = d.stepi(1)
    assert ev.reason == "step" and ev.pc == d.symbols["second"]     # stopped on the vsetvli
    assert d.cpu.rvv.vl == 32                                       # (not executed yet)
    ev = d.stepi(1)
    assert ev.reason == "step" and ev.pc == d.symbols["second"] + 4
    assert d.cpu.rvv.vl == 3 and d.cpu.reg(6) == 3
    assert d.cpu.native_vset == 0          # per-instruction observation: the Python path
    d.cont()
    assert d.exit_status == 3


# ---- the kernel's own riscv vector selftests ---------------------------------------------------
SELFTESTS = ["riscv64/vector/v_initval_nolibc", "riscv64/vector/vstate_exec_nolibc",
             "riscv64/vector/vstate_prctl", "riscv64/sigreturn/sigreturn"]
# those that run a vsetvli in user mode with V on (the prctl/exec tests use V only off or in
# a child that gets SIGILL: nothing there for the native path)
NATIVE_SELFTESTS = {"riscv64/vector/v_initval_nolibc", "riscv64/sigreturn/sigreturn"}


@pytest.fixture(scope="module")
def st_builder():
    import shutil
    from emukern.selftests.build import Builder
    from emukern.selftests.source import fetch_debian, source_cache
    if not any(source_cache().glob("*/.emukern-unpacked")):
        pytest.skip("linux-source-6.12 is not in the cache (run `emukern selftests` once)")
    if shutil.which("riscv64-linux-gnu-gcc") is None:
        pytest.skip("riscv64-linux-gnu-gcc is not installed")
    return Builder(fetch_debian())


@needs_native
@pytest.mark.parametrize("tid", SELFTESTS)
def test_selftest_identical_native_on_and_off(st_builder, monkeypatch, tid):
    """Linux 6.12's riscv vector selftests, every policy combination at VLEN 128 and 512: the same
    verdict, output, simulated time, --json summary and trap trace with the native path on and off."""
    from emukern.selftests import runner
    from emukern.selftests.catalog import BY_ID
    from emukern.kernel.result import RunResult
    t = BY_ID[tid]
    built = st_builder.build(t)
    assert built.ok, built.reason
    seen: list[tuple[str, list[tuple]]] = []

    class Recorded(RunResult):
        @classmethod
        def from_kernel(cls, k):                   # the result and trace of each run
            r = RunResult.from_kernel(k)
            seen.append((json.dumps(r.to_json(), sort_keys=True), _trace(k), sum(c.native_vset for c in k.cpus)))
            return r
    monkeypatch.setattr(runner, "RunResult", Recorded)
    for cfg in runner.matrix(t, vls=(128, 512)):
        outs = []
        for native in (True, False):
            monkeypatch.setenv("EMUKERN_NATIVE_VSET", "1" if native else "0")
            o = runner.run_one(t, built, cfg, runner.RunOptions())
            outs.append((o.verdict, o.counts, o.cause, o.exit_status, o.detail, o.sim_seconds, o.output))
        assert outs[0] == outs[1], cfg
        assert outs[0][0] == "pass", (cfg, outs[0])
        (j_on, tr_on, n_on), (j_off, tr_off, n_off) = seen[-2:]
        assert j_on == j_off and tr_on == tr_off, cfg
        assert n_off == 0
    if tid in NATIVE_SELFTESTS:
        assert sum(n for _j, _t, n in seen) > 0
