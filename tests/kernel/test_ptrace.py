"""ptrace(2) (kernel/ptrace.py) with a static glibc tracer/tracee pair (guest_asm/c/ptrace_probe.c).

qemu-user is no oracle here: it answers ptrace with ENOSYS.  The expected lines follow the kernel
source: wait reports a signal-delivery stop without WUNTRACED (wait_task_stopped, ptrace=1); the
stop's siginfo is the raise()'s SI_TKILL one; PEEKDATA stores the word, POKEDATA writes it;
regset lengths are the regsets' sizes (arm64 user_pt_regs 272, user_fpsimd_state 528, NT_ARM_TLS
two registers, NT_ARM_SVE's header and SVE_PT_SIZE (tests/oracle/guests/sve_ptrace_probe.c); riscv user_regs_struct 256, FP 33 words); a pstate that is not EL0t is EINVAL
(valid_user_regs); a length that is not a multiple of the unit or an unknown note is EINVAL
(ptrace_regset); a signal above 64 and an unknown request are EIO; a task not traced by the
caller, or not stopped, is ESRCH (ptrace_check_attach); a second TRACEME and attaching to oneself
or to a traced task are EPERM."""
from __future__ import annotations


from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.kernel.signal import ptrace as P
from emukern.kernel.arch.arm64 import regset as arm64_regset
from emukern.kernel.arch.riscv import regset as riscv_regset

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}


def _elf(cguest, arch):
    """ptrace_probe.c cguest for ``arch`` (skips without the cross compiler)."""
    return cguest("ptrace_probe", arch)


def expected(arch: str) -> str:
    gpr, fpr = (272, 528) if arch == "arm64" else (256, 264)
    tls = "GETREGSET NT_ARM_TLS: ok\nthread pointer matches the child's: 1 (length 16)\n" if arch == "arm64" \
        else f"thread pointer matches the child's: 1 (length {gpr})\n"
    reg = "v31" if arch == "arm64" else "f31"
    return (
        "stop 1: stopped by Stopped (signal)\n"
        "State:\tt (tracing stop)\n"
        "TracerPid is the parent: 1\n"
        "GETSIGINFO: ok\n"
        "siginfo: signo Stopped (signal), code SI_TKILL 1, from the child 1\n"
        "PEEKDATA marker: 0x1234 (errno 0)\n"
        "POKEDATA: ok\n"
        "GETREGSET NT_PRSTATUS: ok\n"
        f"NT_PRSTATUS length {gpr}, pc nonzero 1\n"
        + tls +
        "SETREGSET NT_PRSTATUS EL1h: Invalid argument\n"
        "SETREGSET NT_PRSTATUS unchanged: ok\n"
        "GETREGSET NT_PRFPREG: ok\n"
        f"NT_PRFPREG length {fpr}, {reg} holds the planted value 1\n"
        "SETREGSET NT_PRFPREG: ok\n"
        "GETREGSET length 7: Invalid argument\n"
        "GETREGSET note 0x777: Invalid argument\n"
        "CONT with signal 65: Input/output error\n"
        "request 0x7777: Input/output error\n"
        "CONT to pid 1 (not traced): No such process\n"
        "CONT: ok\n"
        "GETREGSET while running: No such process\n"
        "stop 2: stopped by User defined signal 1\n"
        "CONT delivering SIGUSR1: ok\n"
        "stop 3: stopped by User defined signal 2\n"
        "CONT suppressing SIGUSR2: ok\n"
        "child exit: 42\n")


@pytest.mark.parametrize("cpus", [1, 2])
@pytest.mark.parametrize("arch", list(CC))
def test_trace_a_child(cguest, arch, cpus):
    """Stops, siginfo, memory, the three register sets both ways, injection and suppression; the
    child exits 42 only if it saw the tracer's POKEDATA, its FP write and SIGUSR1 but not SIGUSR2."""
    r = Machine(cpus=cpus).load(_elf(cguest, arch), []).run()
    assert r.exit_status == 0, (r.message, r.stderr)
    assert r.stdout.decode() == expected(arch)


@pytest.mark.parametrize("arch", list(CC))
def test_attach_and_detach(cguest, arch):
    r = Machine().load(_elf(cguest, arch), ["attach"]).run()
    assert r.exit_status == 0, (r.message, r.stderr)
    assert r.stdout.decode() == (
        "ATTACH self: Operation not permitted\nATTACH: ok\nATTACH again: Operation not permitted\n"
        "attach: stopped by Stopped (signal)\nDETACH: ok\nCONT after DETACH: No such process\n"
        "child killed by Killed\n")


@pytest.mark.parametrize("arch", list(CC))
def test_exec_of_a_tracee_stops_with_sigtrap(cguest, arch):
    exe = _elf(cguest, arch)
    r = Machine(root=str(exe.parent)).load(exe, ["exec", "/" + exe.name]).run()
    assert r.exit_status == 0, (r.message, r.stderr)
    assert r.stdout.decode() == "after execve: stopped by Trace/breakpoint trap\nCONT: ok\nchild exit: 7\n"


@pytest.mark.parametrize("arch", list(CC))
def test_same_bytes_twice(cguest, arch):
    exe = _elf(cguest, arch)
    a = Machine().load(exe, []).run()
    b = Machine().load(exe, []).run()
    assert a.stdout == b.stdout and a.cycles == b.cycles


def test_regset_tables_match_the_uapi_structs():
    sizes = {r.name: r.total for r in arm64_regset.ARM64_REGSETS}
    # user_pt_regs: 31 + sp, pc, pstate; user_fpsimd_state: 32 x 16 + fpsr, fpcr, 2 reserved;
    # NT_ARM_TLS: TPIDR_EL0, TPIDR2_EL0; user_hwdebug_state: dbg_info, pad, 16 x (addr, ctrl, pad)
    # NT_ARM_SVE: DIV_ROUND_UP(SVE_PT_SIZE(ARCH_SVE_VQ_MAX=16, SVE_PT_REGS_SVE), 16) units of 16 bytes;
    # user_pac_mask (data, insn), the enabled-keys long, user_pac_address_keys (4 x __uint128_t),
    # user_pac_generic_keys (1 x __uint128_t)
    assert sizes == {"NT_PRSTATUS": 272, "NT_PRFPREG": 528, "NT_ARM_TLS": 16,
                     "NT_ARM_HW_BREAK": 264, "NT_ARM_HW_WATCH": 264, "NT_ARM_SVE": 8768,
                     "NT_ARM_PAC_MASK": 16, "NT_ARM_PAC_ENABLED_KEYS": 8, "NT_ARM_PACA_KEYS": 64,
                     "NT_ARM_PACG_KEYS": 16, "NT_ARM_TAGGED_ADDR_CTRL": 8}
    # NT_RISCV_VECTOR: __riscv_v_regset_state's 5 longs + 32 registers at RISCV_MAX_VLENB (8192)
    assert {r.name: r.total for r in riscv_regset.RISCV_REGSETS} == {"NT_PRSTATUS": 256, "NT_PRFPREG": 264,
                                                                      "NT_RISCV_VECTOR": 262184}


def test_hwdebug_info_follows_id_aa64dfr0(cguest):
    """dbg_info = DebugVer << 8 | slots, slots = BRPs/WRPs + 1 of the sanitised ID_AA64DFR0_EL1."""
    m = Machine(arch="arm64").load(_elf(cguest, "arm64"), ["attach"])
    k = m.kernel
    dfr0 = k.arm64_undef.id_regs.sanitised("ID_AA64DFR0_EL1")
    assert arm64_regset.hwdebug_info(k, P.NT_ARM_HW_BREAK) == ((dfr0 & 0xF) << 8) | (((dfr0 >> 12) & 0xF) + 1)
    assert arm64_regset.hwdebug_info(k, P.NT_ARM_HW_WATCH) == ((dfr0 >> 20 & 0xF) + 1) | ((dfr0 & 0xF) << 8)
    assert dfr0 & 0xF, "DebugVer 0 is not architecturally valid (the selftest checks it)"
    blob = arm64_regset.hwdebug_get(k, P.NT_ARM_HW_WATCH)
    assert len(blob) == 264 and blob[8:] == bytes(256)
    # an enabled watchpoint cannot be installed: the machine has no debug registers
    enabled = bytearray(blob)
    enabled[8:16] = (0x1000).to_bytes(8, "little")
    enabled[16:20] = (1).to_bytes(4, "little")
    assert arm64_regset.hwdebug_set(k, P.NT_ARM_HW_WATCH, bytes(enabled)) < 0
    assert arm64_regset.hwdebug_set(k, P.NT_ARM_HW_WATCH, blob) == 0


SVE_PROBE = Path(__file__).resolve().parents[1] / "oracle" / "guests" / "sve_ptrace_probe.c"


def _sve_pt_size(vq: int) -> int:
    """SVE_PT_SIZE(vq, SVE_PT_REGS_SVE) from uapi/asm/ptrace.h's macros."""
    fpsr = (16 + 32 * vq * 16 + 17 * vq * 2 + 15) & ~15
    return 16 + ((fpsr + 8 - 16 + 15) & ~15)


@pytest.mark.parametrize("policy", ["legacy", "p1", "p1+p2"])
@pytest.mark.parametrize("vl", [128, 256, 512])
def test_nt_arm_sve_reaches_the_tracees_registers(cguest, vl, policy):
    """sve_ptrace_probe.c (checked byte for byte against Debian's 6.1 and 6.12 kernels in
    tests/oracle/test_oracle_real_kernels.py): the tracer's NT_ARM_SVE write at the VL is what the
    child's Z0/P0/FPSR hold right after its stop returns; register data at a VL the machine
    lacks is EIO; the FPSIMD form drops TIF_SVE (NT_ARM_SVE then reads the FPSIMD form)."""
    exe = cguest(SVE_PROBE, "arm64")
    r = Machine(arch="arm64", sve_vl=vl, policies={"arm64-sve": policy}).load(exe, [str(vl)]).run()
    assert r.exit_status == 0, (r.message, r.stderr)
    b, vq = vl // 8, vl // 128
    out = r.stdout.decode()
    assert f"header read: 16 bytes, size 544, max_size {_sve_pt_size(4)}, vl {b}, max_vl 64, flags 0" in out
    assert "odd length: -22\n" in out and "data at VL 384: -5\n" in out
    assert (f"read back: 8192 bytes, size {_sve_pt_size(vq)} (expected {_sve_pt_size(vq)}), vl {b}, "
            f"flags 0x1, Z0[last] {b:02x}, FPSR 0x8000000") in out
    assert f"child: VL {b}, Z0 01 02 .. {b:02x}, P0 55 .. 55, FPSR 0x8000000\n" in out
    assert "NT_PRFPREG: 0, V0[0] a0 V1[0] 00\nread as: 8192 bytes, size 544, flags 0\nchild exit: 0\n" in out


def test_nt_arm_sve_without_sve_is_einval(cguest):
    """sve_get/sve_set: -EINVAL when the system does not support SVE (the child's SVE store then
    dies of SIGILL, which the probe reports as a child that did not stop again)."""
    exe = cguest(SVE_PROBE, "arm64")
    r = Machine(arch="arm64", has_sve=False).load(exe, ["128"]).run()
    out = r.stdout.decode()
    assert "header read: -22 bytes" in out and "SVE write: -22\n" in out and "stopped again: 0\n" in out
