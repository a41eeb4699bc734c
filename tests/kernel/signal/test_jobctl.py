"""Job control as the parent sees it, the core-dump bit and poll/ppoll interrupted by signals
(guest_asm/c/jobctl.c, static glibc on both arches).

qemu-user is the oracle for wait4's WUNTRACED/WCONTINUED statuses, the CLD_STOPPED /
CLD_CONTINUED / CLD_EXITED / CLD_KILLED SIGCHLDs, WCOREDUMP with RLIMIT_CORE 0 and poll's
revents/EINTR.  Where it is not, the kernel source is:
* SA_NOCLDSTOP: kernel/signal.c do_notify_parent_cldstop sends no SIGCHLD for a stop or a
  continue; qemu-user 7.2 passes only SA_RESTART to its host sigaction, so it reports them.
* RLIMIT_CORE >= a page: do_coredump writes a core into a writable working directory (binfmt_elf's min_coredump is
  ELF_EXEC_PAGESIZE) and the wait status gets 0x80; qemu's answer depends on the host's
  core_pattern and working directory.
* ppoll's sigmask: poll_select_finish -> restore_saved_sigmask_unless puts the caller's mask
  back as ppoll returns, so a signal held by the temporary mask is handled before user code
  resumes; qemu-user 7.2 leaves it pending until a later syscall unblocks it.
* waitid(WNOHANG) with nothing to report: kernel/exit.c writes every field of a zeroed
  waitid_info (si_status 0); qemu-user 7.2 leaves the caller's siginfo as it was.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from emukern.api import Machine

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
# the ppoll lines where qemu-user is not Linux (see the module docstring)
LINUX_ONLY = {"ppoll": ("ppoll with SIGALRM blocked", "alarms right after", "ppoll unblocking"),
              "waitid": ("reported once (WNOHANG)",)}


def _elf(cguest, arch):
    """jobctl.c cguest for ``arch`` (skips without the cross compiler)."""
    return cguest("jobctl", arch)


def _run(cguest, arch, part, root=None, **options):
    m = Machine(root=str(root), root_rw=True, **options) if root is not None else Machine(**options)
    r = m.load(_elf(cguest, arch), [part]).run()
    assert r.exit_status == 0, (r.message, r.fault)
    assert r.stdout.endswith(b"done\n")
    return r.stdout.decode().splitlines()


def _qemu(arch, exe, part, cwd):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    q = subprocess.run([QEMU[arch], str(exe), part], capture_output=True, timeout=120, cwd=cwd)
    assert q.returncode == 0, q.stderr
    return q.stdout.decode().splitlines()


def _field(lines, prefix):
    return next(line for line in lines if line.startswith(prefix))


@pytest.mark.qemu
@pytest.mark.parametrize("arch", list(CC))
@pytest.mark.parametrize("part", ["stop", "parent-stop", "core", "ppoll", "nocldstop", "waitid"])
def test_part_matches_qemu(cguest, arch, part, tmp_path):
    got = _run(cguest, arch, part)
    want = _qemu(arch, _elf(cguest, arch), part, tmp_path)
    if part == "nocldstop":        # qemu reports the stop and the continue despite SA_NOCLDSTOP
        got = [line for line in got if not line.startswith("SIGCHLD")]
        want = [line for line in want if not line.startswith("SIGCHLD")]
    drop = LINUX_ONLY.get(part, ())
    assert [x for x in got if not x.startswith(drop)] == [x for x in want if not x.startswith(drop)]


@pytest.mark.parametrize("arch", list(CC))
def test_stop_and_continue_statuses(cguest, arch):
    out = _run(cguest, arch, "stop")
    assert _field(out, "stop:").startswith("stop: status=0x137f")            # WIFSTOPPED, SIGSTOP
    assert "the stop is reported once: waitpid WNOHANG -> 0" in out
    assert _field(out, "continue:").startswith("continue: status=0xffff")    # WIFCONTINUED
    assert _field(out, "exit:").startswith("exit: status=0x300")
    # CLD_STOPPED (5) with the stop signal, CLD_CONTINUED (6) with SIGCONT, CLD_EXITED (1)
    assert [x for x in out if x.startswith("SIGCHLD")] == [
        "SIGCHLD 0: si_code=5 si_status=19", "SIGCHLD 1: si_code=6 si_status=18",
        "SIGCHLD 2: si_code=1 si_status=3"]


@pytest.mark.parametrize("arch", list(CC))
def test_sa_nocldstop_suppresses_stop_and_continue_sigchld(cguest, arch):
    out = _run(cguest, arch, "nocldstop")
    assert _field(out, "stop:").startswith("stop: status=0x137f")            # wait4 still reports it
    assert _field(out, "continue:").startswith("continue: status=0xffff")
    assert [x for x in out if x.startswith("SIGCHLD")] == ["SIGCHLD 0: si_code=1 si_status=3"]


@pytest.mark.parametrize("arch", list(CC))
def test_core_bit_follows_rlimit_core(cguest, arch, tmp_path):
    out = _run(cguest, arch, "core", tmp_path)
    assert all("core=0" in x for x in out if x.startswith("killed by"))       # RLIMIT_CORE 0: no core
    assert not (tmp_path / "core").exists()
    # a writable working directory takes the core (kernel/coredump.py; tests/kernel/signal/test_coredump.py)
    lim = _run(cguest, arch, "core-limit", tmp_path)
    assert (tmp_path / "core").read_bytes()[:4] == b"\x7fELF"
    assert "RLIMIT_CORE soft=1048576 hard=unlimited" in lim
    assert _field(lim, "killed by 3:").startswith("killed by 3: status=0x83")   # WCOREDUMP
    assert _field(lim, "killed by 11:").startswith("killed by 11: status=0xb")  # limit 1 < a page
    assert _field(lim, "killed by 15:").startswith("killed by 15: status=0xf")  # no core action
    assert [x for x in lim if x.startswith("SIGCHLD")] == [
        "SIGCHLD 0: si_code=3 si_status=3", "SIGCHLD 1: si_code=2 si_status=11",
        "SIGCHLD 2: si_code=2 si_status=15"]                                    # CLD_DUMPED, CLD_KILLED
    # with the root read-only the core cannot be written: no WCOREDUMP, CLD_KILLED
    ro = _run(cguest, arch, "core-limit")
    assert _field(ro, "killed by 3:").startswith("killed by 3: status=0x3 ")


@pytest.mark.parametrize("arch", list(CC))
def test_ppoll_mask_and_eintr(cguest, arch):
    out = _run(cguest, arch, "ppoll")
    assert "empty pipe, SIGALRM: poll -> -1 errno EINTR alarms 1" in out      # SA_RESTART or not
    assert "ppoll with SIGALRM blocked -> 0, alarms 2" in out                # timed out, then handled
    assert "alarms right after ppoll returned: 2" in out
    assert "ppoll unblocking SIGALRM -> -1 errno EINTR, alarms 3, SIGALRM blocked again 1" in out
    assert "bad fd: poll -> 1 revents 0x20" in out                           # POLLNVAL
    assert "writer closed: poll -> 1 revents 0x10" in out                    # POLLHUP


@pytest.mark.parametrize("arch", list(CC))
def test_waitid(cguest, arch):
    out = _run(cguest, arch, "waitid")
    assert out[:7] == [
        "WSTOPPED: ret 0 signo 17 code 5 status 19 pid child",            # CLD_STOPPED, SIGSTOP
        "reported once (WNOHANG): ret 0 signo 0 code 0 status 0 pid 0",   # a zeroed waitid_info
        "WCONTINUED: ret 0 signo 17 code 6 status 18 pid child",
        "WEXITED|WNOWAIT: ret 0 signo 17 code 1 status 7 pid child",      # still waitable after
        "WEXITED: ret 0 signo 17 code 1 status 7 pid child",
        "no child left: ret -1 errno ECHILD",
        "no WEXITED/WSTOPPED/WCONTINUED: ret -1 errno EINVAL"]


@pytest.mark.parametrize("arch", list(CC))
def test_cld_continued_comes_from_the_continued_child(cguest, arch):
    """kernel/signal.c: prepare_signal(SIGCONT) records SIGNAL_CLD_CONTINUED and get_signal of
    the woken child sends the parent CLD_CONTINUED -- not the kill() itself.  On emukern's one
    CPU the parent keeps running after kill(), so the SIGCHLD is pending only once it yields.
    Round-robin pins that order: under the fair class the woken child, placed with the lag it
    slept with, may be what pick_eevdf prefers and preempt the parent at kill()'s return (as
    Linux 6.12 may), which would hide whether kill() itself sent the SIGCHLD."""
    out = _run(cguest, arch, "cont-notify", sched="rr")
    assert out[:6] == [
        "stop: status=0x137f exited=0(0) signaled=0(0 core=0) stopped=1(19) continued=0",
        "after the stop: SIGCHLD code 5",
        "right after kill(SIGCONT): SIGCHLD pending 0",
        "after sched_yield: SIGCHLD pending 1",
        "SIGCHLD code 6 status 18",
        "killed: status=0x9 exited=0(0) signaled=1(9 core=0) stopped=0(0) continued=0"]


def test_jobctl_run_is_deterministic(cguest):
    exe = _elf(cguest, "riscv64")
    a = json.dumps(Machine().load(exe, ["stop"]).run().to_json(), sort_keys=True)
    b = json.dumps(Machine().load(exe, ["stop"]).run().to_json(), sort_keys=True)
    assert a == b


RUSAGE_OUT = [
    "wait4 reaped: ret child status 0x300 utime>0 1 maxrss>0 1",
    "wait4 rusage equals RUSAGE_CHILDREN: utime 1 stime 1",     # getrusage(child, RUSAGE_BOTH)
    "waitid WSTOPPED: ret 0 code 5 utime>0 1",                  # a stop report has it too
    "waitid nothing to report: ret 0 rusage untouched 1",       # copied out only for a child
    "wait4 bad rusage: ret -1 errno EFAULT",
    "then: ret -1 errno ECHILD",                                # ... the child was reaped anyway
    "waitid bad rusage: ret -1 errno EFAULT",
    "then: ret -1 errno ECHILD"]


@pytest.mark.parametrize("arch", list(CC))
def test_wait_rusage(cguest, arch):
    """wait4's and waitid's rusage argument (kernel/exit.c: getrusage(p, RUSAGE_BOTH) of the
    reported child, copied out by the syscall only when a child was reported)."""
    assert _run(cguest, arch, "rusage") == RUSAGE_OUT + ["done"]


@pytest.mark.qemu
@pytest.mark.parametrize("arch", list(CC))
def test_wait_rusage_errors_match_qemu(cguest, arch, tmp_path):
    """The pointer and reaping behaviour against the host kernel (qemu-user passes wait4/waitid
    through).  Not compared: the time figures (the host's have a tick's granularity) and the
    WNOHANG-with-nothing rusage, which Linux leaves unwritten (sys_waitid copies it out only
    when err > 0) but qemu-user 7.2 overwrites with its own uninitialised host struct."""
    want = _qemu(arch, _elf(cguest, arch), "rusage", tmp_path)
    keep = ("wait4 bad", "waitid bad", "then:")
    assert [x for x in RUSAGE_OUT if x.startswith(keep)] == [x for x in want if x.startswith(keep)]
