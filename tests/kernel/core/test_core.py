"""Issue 4: tasks, scheduler, pipes, SMP, spinlocks — on both arches."""
from __future__ import annotations

import json

import pytest

from emukern.config import MachineConfig
from emukern.kernel.kernel import Kernel

ARCH_DIR = {"riscv64": "riscv", "arm64": "arm64"}
ARCHES = list(ARCH_DIR)


def prog(guest_asm, arch, name):
    return guest_asm / ARCH_DIR[arch] / f"{name}.S"


def _code(guest_asm, arch, name):
    """read(addr, n) over the guest's ELF segments (the program as linked, not the run's memory)."""
    from emukern.loader.asm import assemble
    from emukern.loader.elf import load_elf
    img = load_elf(assemble(prog(guest_asm, arch, name), arch))

    def read(addr, n):
        seg = next(s for s in img.segments if s.vaddr <= addr and addr + n <= s.vaddr + len(s.data))
        return seg.data[addr - seg.vaddr:addr - seg.vaddr + n]
    return read


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("iters", [1, 100])
def test_lat_ctx_ping_pong(run_guest, guest_asm, arch, iters):
    r, m = run_guest(prog(guest_asm, arch, "lat_ctx"), argv=[str(iters)])
    assert r.exit_status == 0
    assert r.syscalls["write"] == 2 * iters and r.syscalls["read"] == 2 * iters
    parent, child = r.tasks[0], r.tasks[1]
    # every round trip blocks each side once: two voluntary switches per round trip
    switches = parent["nvcsw"] + child["nvcsw"]
    assert 2 * iters - 1 <= switches <= 2 * iters + 2
    assert parent["nivcsw"] == child["nivcsw"] == 0
    per_switch = r.cycles / switches
    costs = m.kernel.cost
    assert per_switch > costs["schedule"] + costs["switch_to"]   # a switch costs at least the scheduler


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("ncpu", [1, 2, 4, 8])
def test_threads_pinned_and_joined(run_guest, guest_asm, arch, ncpu):
    nthreads, k = 8, 2000
    r, m = run_guest(prog(guest_asm, arch, "threads"), argv=[str(nthreads), str(k), str(ncpu)], cpus=ncpu)
    assert r.exit_status == 0                     # counters summed to N*K, joins returned
    assert r.syscalls["clone"] == nthreads and r.syscalls["exit"] == nthreads
    assert len(r.tasks) == nthreads + 1
    # each thread ran on the CPU it pinned itself to
    for t in r.tasks[1:]:
        idx = t["tid"] - 2
        assert t["cpu"] == idx % ncpu
    # with more CPUs the same work finishes sooner in simulated time
    if ncpu > 1:
        r1, _ = run_guest(prog(guest_asm, arch, "threads"), argv=[str(nthreads), str(k), "1"], cpus=1)
        assert r.cycles < r1.cycles


@pytest.mark.parametrize("arch", ARCHES)
def test_cpu_bound_task_is_preempted_by_the_tick(run_guest, guest_asm, arch):
    r, m = run_guest(prog(guest_asm, arch, "spin2"), argv=["3000000"], hz=1000)
    assert r.exit_status == 7                     # the child's status reached the parent
    assert r.traps["timer"] >= 5
    assert sum(t["nivcsw"] for t in r.tasks) >= 2   # both were preempted (involuntary)
    # and preemption happened between user instructions, not only at syscalls: every timer trap
    # interrupted the spin loop, and none landed right after an ecall/svc
    timer_pcs = {rec.pc for rec in m.kernel.trap_log if rec.kind == "timer"}
    assert timer_pcs
    code = _code(guest_asm, arch, "spin2")
    syscall_insn = {"riscv64": 0x00000073, "arm64": 0xD4000001}[arch]
    for pc in timer_pcs:
        assert int.from_bytes(code(pc - 4, 4), "little") != syscall_insn, hex(pc)
    assert max(timer_pcs) - min(timer_pcs) <= 8          # all inside the two-instruction loop


@pytest.mark.parametrize("arch", ARCHES)
def test_smp_determinism(run_guest, guest_asm, arch):
    a, _ = run_guest(prog(guest_asm, arch, "threads"), argv=["6", "3000", "3"], cpus=3)
    b, _ = run_guest(prog(guest_asm, arch, "threads"), argv=["6", "3000", "3"], cpus=3)
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)


@pytest.mark.parametrize("arch", ARCHES)
def test_too_many_tasks_is_eagain(run_guest, guest_asm, arch):
    r, _ = run_guest(prog(guest_asm, arch, "threads"), argv=["8", "10", "1"], max_tasks=4)
    assert r.exit_status == 2                     # the program's "clone failed" path
    assert r.syscalls["clone"] == 4               # the 4th clone returned -EAGAIN


RV_DEADLOCK = """
.include "syscalls.inc"
.globl _start
_start:
    la a0, fds
    li a1, 0
    li a7, SYS_pipe2
    ecall
    lw a0, fds
    la a1, fds
    li a2, 1
    li a7, SYS_read          # nobody will ever write: we hold the only write end
    ecall
.bss
fds: .space 8
"""


def test_all_blocked_is_reported_not_a_hang(run_guest):
    r, _ = run_guest(RV_DEADLOCK, arch="riscv64")
    assert r.stop_reason == "deadlock" and r.exit_status == 125
    assert "pipe_read" in r.message


RV_PIPE_ERRS = """
.include "syscalls.inc"
.globl _start
_start:
    la a0, fds
    li a1, 0
    li a7, SYS_pipe2
    ecall
    lw a0, fds+4
    li a7, SYS_close
    ecall                    # close the write end: the reader must see EOF
    lw a0, fds
    la a1, buf
    li a2, 4
    li a7, SYS_read
    ecall
    la t0, out
    sd a0, 0(t0)
    lw a0, fds+4
    li a7, SYS_close
    ecall                    # already closed: -EBADF
    la t0, out
    sd a0, 8(t0)
    li a0, 16                # bad pointer
    li a1, 0
    li a7, SYS_pipe2
    ecall
    la t0, out
    sd a0, 16(t0)
    li a0, 0
    li a7, SYS_exit_group
    ecall
.data
.globl out
fds: .space 8
buf: .space 8
out: .space 24
"""


def test_pipe_eof_ebadf_efault(run_guest):
    r, m = run_guest(RV_PIPE_ERRS, arch="riscv64")
    vals = [int.from_bytes(m.read(m.symbol("out") + 8 * i, 8), "little", signed=True) for i in range(3)]
    assert vals == [0, -9, -14]


def test_spinlock_contention_grows_with_cpus():
    """N CPUs take the same lock at the same moment, hold it for a while, repeatedly."""
    def contended(ncpu: int) -> tuple[int, int]:
        k = Kernel(MachineConfig(arch="arm64", cpus=ncpu))
        for _round in range(20):
            for cpu in k.cpus:
                held = k.spin_lock(cpu, "test_lock")
                cpu.charge(200)                       # the critical section
                k.spin_unlock(cpu, "test_lock", held)
                cpu.charge(100)                       # work outside the lock
        lk = k.locks["test_lock"]
        return lk.contended, lk.spin_cycles
    results = [contended(n) for n in (1, 2, 4, 8)]
    assert results[0] == (0, 0)
    spins = [s for _, s in results]
    assert spins == sorted(spins) and spins[-1] > 4 * spins[1] > 0


def test_lock_handoff_costs_a_cacheline_transfer():
    k = Kernel(MachineConfig(arch="riscv64", cpus=2))
    a, b = k.cpus
    t = k.spin_lock(a, "l")
    k.spin_unlock(a, "l", t)
    b.idle_until(a.now + 1000)
    before = b.now
    t = k.spin_lock(b, "l")
    assert t - before == k.cost["spin_lock"] + k.cost["cacheline_transfer"]
    assert k.locks["l"].transfers == 1 and k.locks["l"].contended == 0


@pytest.mark.parametrize("arch", ARCHES)
def test_accounting_user_and_system(run_guest, guest_asm, arch):
    r, _ = run_guest(prog(guest_asm, arch, "syscall_loop"), argv=["1000"])
    t = r.tasks[0]
    assert t["utime"] == r.user_insns               # IPC 1: one cycle per user instruction
    assert t["stime"] > 1000 * 100                  # every getppid costs entry+dispatch+exit
    assert r.cpus[0]["user_insns"] == r.user_insns


RV_EXIT_GROUP = """
.include "syscalls.inc"
.globl _start
_start:
    li a0, CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD
    la a1, stack_top
    li a2, 0
    li a3, 0
    li a4, 0
    li a7, SYS_clone
    ecall
    beqz a0, spin_forever
    li a0, 1000000           # let the thread run for a while (nanosleep 1 ms)
    la a0, req
    li a1, 0
    li a7, SYS_nanosleep
    ecall
    li a0, 3
    li a7, SYS_exit_group    # must take the spinning thread with it
    ecall
spin_forever:
    j spin_forever
.data
req: .dword 0, 1000000
.bss
.align 4
stack: .space 4096
stack_top:
"""


def test_exit_group_kills_every_thread(run_guest):
    r, _ = run_guest(RV_EXIT_GROUP, arch="riscv64", hz=1000)
    assert r.exit_status == 3 and r.stop_reason == "exited"
    assert all(t["state"] == "dead" for t in r.tasks)
    assert r.tasks[1]["utime"] > 100_000          # the thread really ran (during the sleep)


def test_first_process_exit_ends_the_run_and_says_so(run_guest):
    src = (".globl _start\n_start:\n    li a0, 17\n    li a1, 0\n    li a2, 0\n    li a3, 0\n    li a4, 0\n"
           "    li a7, 220\n    ecall\n    beqz a0, child\n    li a0, 0\n    li a7, 94\n    ecall\n"
           "child:\n    j child\n")
    r, _ = run_guest(src, arch="riscv64")
    assert r.exit_status == 0 and r.stop_reason == "exited"
    assert "still alive" in r.message
    assert all(t["state"] in ("dead", "zombie") for t in r.tasks)


@pytest.mark.parametrize("arch", ARCHES)
def test_every_cycle_is_accounted_to_a_task(run_guest, guest_asm, arch):
    # one CPU that never idles: user + system time over all tasks is the elapsed time exactly
    r, _ = run_guest(prog(guest_asm, arch, "lat_ctx"), argv=["50"])
    assert r.cpus[0]["idle_cycles"] == 0
    assert sum(t["utime"] + t["stime"] for t in r.tasks) == r.cycles


def test_long_vector_instructions_are_user_time(run_guest, guest_asm):
    # the extra cycles of RVV instructions are user time, not system time
    r, m = run_guest(guest_asm / "riscv" / "vec_memcpy.S")
    cpu = m.cpu(0)
    assert cpu.extra_user > 0
    assert r.tasks[0]["utime"] == r.user_insns + cpu.extra_user
    assert r.tasks[0]["utime"] + r.tasks[0]["stime"] == r.cycles
