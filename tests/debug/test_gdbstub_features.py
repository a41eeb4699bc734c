"""gdbserver parity with QEMU's gdbstub, with gdb-multiarch in batch mode: the arm64 SVE target
feature (compared with qemu-aarch64's own gdbstub where that is a valid oracle), riscv CSRs,
qXfer:exec-file, threads and Z2/Z3/Z4 watchpoints; and the transport's robustness (checksums,
junk, oversized packets, connection resets, deep `monitor break when` expressions)."""
from __future__ import annotations

import re
import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from debug_testutil import DATA, REPO
from test_gdbstub import GDB, Rsp, Server, needs_gdb

SVE = str(DATA / "arm64_sve_regs.S")
RV_WATCH = str(DATA / "rv_watch.S")
ARM_WATCH = str(DATA / "arm64_watch.S")
THREADS = str(REPO / "guest_asm" / "riscv" / "threads.S")
QEMU_A64 = shutil.which("qemu-aarch64")


def gdb_batch(port: int, commands: list[str], file: str | None = None) -> str:
    args = [GDB, "-nx", "-batch", "-ex", "set confirm off"]
    if file:
        args += ["-ex", f"file {file}"]
    args += ["-ex", f"target remote 127.0.0.1:{port}"]
    for c in commands:
        args += ["-ex", c]
    p = subprocess.run(args, capture_output=True, text=True, timeout=90)
    return p.stdout + p.stderr


def values(out: str) -> dict[int, str]:
    """gdb's `$N = ...` lines by N."""
    return {int(m.group(1)): m.group(2).strip() for m in re.finditer(r"^\$(\d+) = (.*)$", out, re.M)}


def elf_of(stderr_line: str) -> str:
    m = re.search(r"ELF (\S+?)\)", stderr_line)
    assert m, stderr_line
    return m.group(1)


SVE_COMMANDS = ["break sve_set", "continue", "p $vg", "p/x $z0.s.u", "p/x $z1.b.u", "p $p0", "p $p1",
                "p $ffr", "p/x $v0.s.u", "p/x $q1", "set $z0.s.u[1] = 99", "p $z0.s.u", "p/x $d0.u", "kill"]


@needs_gdb
@pytest.mark.parametrize("vl", [128, 256, 512])
def test_sve_registers_at_the_configured_vl(vl):
    srv = Server(SVE, "--sve-vl", str(vl))
    out = gdb_batch(srv.port, SVE_COMMANDS)          # no `file`: symbols come through qXfer:exec-file
    rc, _, err = srv.finish()
    assert rc == 0, err
    v = values(out)
    words = vl // 32
    assert v[1] == str(vl // 64)                                            # vg: 64-bit granules
    assert v[2] == "{" + ", ".join(f"{i:#x}" for i in range(1, words + 1)) + "}"   # index z0.s, #1, #1
    assert v[3] == f"{{0x5a <repeats {vl // 8} times>}}"
    pbytes = vl // 64                                                      # a predicate: VL/8 bits
    assert v[4] == "{" + ", ".join(["17"] * pbytes) + "}"                 # ptrue p0.s: every 4th bit
    assert v[5] == v[6] == "{" + ", ".join(["255"] * pbytes) + "}"        # ptrue p1.b; setffr
    assert v[7] == "{0x1, 0x2, 0x3, 0x4}"                                  # v0 = the low 128 bits of z0
    assert "0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a" in v[8]
    assert v[9].startswith("{1, 99, 3")                                    # the write reached the CPU
    assert v[10] == "0x6300000001"                                         # d0 sees it too


@needs_gdb
@pytest.mark.qemu
@pytest.mark.skipif(QEMU_A64 is None, reason="qemu-aarch64 is not installed")
def test_sve_registers_match_qemu_gdbstub():
    """The same gdb session against qemu-aarch64 -g (sve256): identical Z/V/vg views.  QEMU's
    predicate type is declared with 2*VL/8 elements (its bytes beyond VL/8 are not register
    contents), so predicates are compared on their VL/8 real bytes."""
    srv = Server(SVE, "--sve-vl", "256")
    ours = values(gdb_batch(srv.port, SVE_COMMANDS))
    rc, _, err = srv.finish()
    assert rc == 0, err
    elf = elf_of(srv.line)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    q = subprocess.Popen([QEMU_A64, "-cpu", "max,sve256=on", "-g", str(port), elf],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:                       # gdb's `target remote` retries until qemu listens (tcp auto-retry)
        theirs = values(gdb_batch(port, SVE_COMMANDS, file=elf))
    finally:
        q.kill()
        q.wait()
    for n in (1, 2, 3, 7, 8, 9, 10):
        assert ours[n] == theirs[n], (n, ours[n], theirs[n])
    for n in (4, 5, 6):
        assert theirs[n].startswith(ours[n][:-1]), (n, ours[n], theirs[n])


@needs_gdb
def test_riscv_csrs_in_the_target_description():
    srv = Server(str(DATA / "rv_vector.S"))
    from emukern.api import Machine
    start = Machine().load(str(DATA / "rv_vector.S")).kernel.symbols["vector_start"]
    out = gdb_batch(srv.port, [f"break *{start:#x}", "continue", "stepi 3",
                               "info registers vl vtype vstart vlenb vxsat vxrm vcsr",
                               "p $instret", "p $cycle >= $instret", "p $time <= $cycle", "kill"])
    rc, _, err = srv.finish()
    assert rc == 0, err
    assert re.search(r"^vl\s+0x4\s+4$", out, re.M)                     # vsetvli 4, e32, m1, ta, ma
    assert re.search(r"^vtype\s+0xd0\s+208$", out, re.M)
    assert re.search(r"^vstart\s+0x0\s+0$", out, re.M)
    assert re.search(r"^vlenb\s+0x20\s+32$", out, re.M)                # VLEN 256
    for csr in ("vxsat", "vxrm", "vcsr"):
        assert re.search(rf"^{csr}\s+0x0\s+0$", out, re.M), csr
    v = values(out)
    assert int(v[1]) > 0 and v[2] == "1" and v[3] == "1"


def test_raw_target_description_has_the_csrs_and_sve():
    srv = Server(str(DATA / "rv_vector.S"))
    c = Rsp(srv.port)
    xml = c.cmd("qXfer:features:read:target.xml:0,ffff")
    assert "org.gnu.gdb.riscv.csr" in xml
    for n in ("cycle", "time", "instret", "vstart", "vxsat", "vxrm", "vcsr", "vl", "vtype", "vlenb"):
        assert f'name="{n}"' in xml, n
    c.s.sendall(b"$k#6b")
    srv.finish()
    srv = Server(SVE, "--sve-vl", "512")
    c = Rsp(srv.port)
    xml = c.cmd("qXfer:features:read:target.xml:0,ffff")
    while xml.startswith("m"):
        xml += c.cmd(f"qXfer:features:read:target.xml:{len(xml) - 1:x},ffff")[1:]
    assert "org.gnu.gdb.aarch64.sve" in xml and "org.gnu.gdb.aarch64.fpu" not in xml
    assert 'name="z31" bitsize="512"' in xml and 'name="p15" bitsize="64"' in xml
    assert 'name="ffr" bitsize="64"' in xml and 'name="vg" bitsize="64" type="int" regnum="85"' in xml
    assert len(c.cmd("p22")) == 2 * 64                                   # z0: 512 bits
    assert int.from_bytes(bytes.fromhex(c.cmd("p55")), "little") == 8    # vg at VL 512
    c.s.sendall(b"$k#6b")
    srv.finish()


def test_exec_file_served_and_named_in_the_listening_line():
    srv = Server(RV_WATCH)
    c = Rsp(srv.port)
    assert "qXfer:exec-file:read+" in c.cmd("qSupported")
    r = c.cmd("qXfer:exec-file:read:1:0,fff")
    assert r.startswith("l")
    path = Path(r[1:])
    assert path.is_file() and path.read_bytes()[:4] == b"\x7fELF"
    c.s.sendall(b"$k#6b")
    srv.finish()
    assert f"ELF {path})" in srv.line


@needs_gdb
def test_gdb_loads_symbols_without_file():
    srv = Server(RV_WATCH)
    out = gdb_batch(srv.port, ["break *do_load", "continue", "p $pc", "kill"])
    rc, _, err = srv.finish()
    assert rc == 0, err
    assert "Reading symbols from" in out and "Breakpoint 1, " in out and "<do_load>" in out


@needs_gdb
def test_threads_listed_selected_and_reported():
    """threads.S 3 200000 2 on 2 CPUs: at `join` main has cloned three threads.  gdb lists all
    four; a switched-out thread shows its saved registers (clone returned 0 in its a0)."""
    from emukern.api import Machine
    join = Machine().load(THREADS, ["3", "200000", "2"]).kernel.symbols["join"]
    srv = Server(THREADS, "--cpus", "2", "--", "3", "200000", "2")
    out = gdb_batch(srv.port, [f"break *{join:#x}", "continue", "info threads", "thread 3", "p $a0",
                               "p $pc", "thread 1", "p $a0 != 0 || $pc == " + str(join), "p $pc",
                               "delete", "continue"])
    rc, gout, err = srv.finish()
    assert rc == 0, err
    assert "Thread 1 hit Breakpoint 1" in out                      # T stop reply names the thread
    listed = re.findall(r"^\*?\s+(\d+)\s+Thread (\d+) \(threads-riscv64 tid (\d+)", out, re.M)
    assert [t[2] for t in listed] == ["1", "2", "3", "4"], out
    v = values(out)
    assert v[1] == "0"                                             # the child's clone() return
    assert v[3] == "1" and f"{join:#x}" in v[4]
    assert "exited normally" in out                                # the threads ran to the end


def test_thread_packets_raw():
    srv = Server(THREADS, "--cpus", "1", "--", "2", "1000", "1")
    c = Rsp(srv.port)
    from emukern.api import Machine
    join = Machine().load(THREADS, ["2", "1000", "1"]).kernel.symbols["join"]
    assert c.cmd(f"Z0,{join:x},4") == "OK"
    stop = c.cmd("c")
    assert re.fullmatch(r"T05thread:1;", stop), stop
    assert c.cmd("qfThreadInfo") == "m1,2,3" and c.cmd("qsThreadInfo") == "l"
    assert c.cmd("T2") == "OK" and c.cmd("T63") == "E01"
    assert c.cmd("Hg2") == "OK"
    assert int.from_bytes(bytes.fromhex(c.cmd("pa")), "little") == 0          # a0 of thread 2
    assert c.cmd("p40") == "xx" * 8                                           # its f7: not saved here
    assert c.cmd("Hg63") == "E01"
    assert c.cmd("Hg0") == "OK"
    assert int.from_bytes(bytes.fromhex(c.cmd("p20")), "little") == join      # back to the stopped one
    assert c.cmd("Hc-1") == "OK"
    assert "tid 2" in bytes.fromhex(c.cmd("qThreadExtraInfo,2")).decode()
    c.s.sendall(b"$k#6b")
    assert srv.finish()[0] == 0


@pytest.mark.parametrize("prog", [RV_WATCH, ARM_WATCH])
def test_watchpoints_raw(prog):
    from emukern.api import Machine, run_program
    m = Machine().load(prog)
    var, store, load = (m.kernel.symbols[n] for n in ("var", "do_store", "do_load"))
    plain = run_program(prog)
    srv = Server(prog)
    c = Rsp(srv.port)
    pc_reg = "20" if "rv_" in prog else "20"
    assert c.cmd(f"Z2,{var + 4:x},4") == "OK"                  # overlaps the 8-byte store's upper half
    assert c.cmd(f"Z3,{var:x},8") == "OK"
    stop = c.cmd("c")
    assert stop == f"T05thread:1;watch:{var + 4:x};", stop
    assert int.from_bytes(bytes.fromhex(c.cmd(f"p{pc_reg}")), "little") == store   # stopped on the store
    assert c.cmd(f"m{var:x},8") == "0500000000000000"          # the write has happened
    assert c.cmd(f"z2,{var + 4:x},4") == "OK"
    stop = c.cmd("c")                                          # the store runs again, once; then the load
    assert stop == f"T05thread:1;rwatch:{var:x};", stop
    assert int.from_bytes(bytes.fromhex(c.cmd(f"p{pc_reg}")), "little") == load
    assert c.cmd(f"z3,{var:x},8") == "OK"
    assert c.cmd(f"Z4,{var + 8:x},8") == "OK"                  # nothing touches var+8: no stop
    assert c.cmd("c") == "W05"
    c.s.sendall(b"$k#6b")
    assert srv.finish()[0] == 0
    # the debugger's stops did not change what the guest computed or counted
    from emukern.debug.engine import Debugger
    d = Debugger(lambda: Machine().load(prog))
    d.add_watchpoint(var, 8, "a")
    stops = 0
    while not d.finished:
        ev = d.cont()
        stops += ev.reason == "watchpoint"
    assert stops == 2 and d.exit_status == 5
    assert d.k.cpus[0].user_insns == plain.user_insns


@needs_gdb
@pytest.mark.parametrize("prog,writeback", [(RV_WATCH, None), (ARM_WATCH, "x9")])
def test_gdb_watch_rwatch(prog, writeback):
    srv = Server(prog)
    cmds = ["watch *(long *)&var", "rwatch *(long *)&var", "continue", "continue", "delete"]
    if writeback:
        cmds.append(f"p ${writeback} - (long)&var")           # the post-index store wrote back once
    cmds.append("continue")
    out = gdb_batch(srv.port, cmds)
    rc, _, err = srv.finish()
    assert rc == 0, err
    assert re.search(r"Hardware watchpoint 1: \*\(long \*\)&var\s+Old value = 0\s+New value = 5", out), out
    assert re.search(r"Hardware read watchpoint 2: \*\(long \*\)&var\s+Value = 5", out), out
    if writeback:
        assert values(out)[1] == "8"
    assert "exited with code 05" in out


# ---- transport robustness (issue: malformed GDB packets) --------------------------------------------
def _raw(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=20)


def _read_until(s: socket.socket, pattern: bytes) -> bytes:
    buf = b""
    while not re.search(pattern, buf):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return buf


def test_bad_checksum_is_nakked_and_the_resend_answered():
    srv = Server(RV_WATCH)
    s = _raw(srv.port)
    s.sendall(b"$qC#00")                                       # wrong checksum
    assert s.recv(1) == b"-"
    s.sendall(b"$qC#b4")
    assert re.search(rb"\+\$QC1#", _read_until(s, rb"#[0-9a-f]{2}"))
    s.sendall(b"$qC#zz")                                       # not even hex
    assert s.recv(1) == b"-"
    s.sendall(b"+$k#6b")
    s.close()
    assert srv.finish()[0] == 0


def test_junk_is_drained_in_linear_time():
    srv = Server(RV_WATCH)
    s = _raw(srv.port)
    junk = bytes(range(0x04, 0x23)) * (8 << 20 // 31)           # ~8 MiB, no '$', '#' or 0x03
    t0 = time.monotonic()
    s.sendall(junk + b"$qC#b4")
    reply = _read_until(s, rb"\$QC1#")
    elapsed = time.monotonic() - t0
    assert b"$QC1#" in reply
    assert elapsed < 10, f"{len(junk)} junk bytes took {elapsed:.1f} s"
    s.sendall(b"$k#6b")
    s.close()
    assert srv.finish()[0] == 0


def test_oversized_packet_is_dropped_and_the_server_lives():
    srv = Server(RV_WATCH)
    s = _raw(srv.port)
    s.sendall(b"$" + b"m" * ((1 << 20) + 100))                  # never terminated, past the limit
    assert _read_until(s, rb"-") .endswith(b"-")
    s.sendall(b"$qC#b4")
    assert b"$QC1#" in _read_until(s, rb"\$QC1#")
    s.sendall(b"$k#6b")
    s.close()
    assert srv.finish()[0] == 0


@pytest.mark.parametrize("when", ["idle", "running"])
def test_connection_reset_ends_cleanly(when):
    srv = Server(str(REPO / "guest_asm" / "arm64" / "spin.S"), "--", "1000000000")
    s = _raw(srv.port)
    s.sendall(b"$?#3f")
    _read_until(s, rb"T05")
    if when == "running":
        s.sendall(b"+$c#63")
        time.sleep(0.5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()                                                   # RST, not FIN
    rc, _, err = srv.finish(timeout=60)
    assert rc == 0 and "Traceback" not in err
    assert "went away" in err and "done" in err


def test_deep_condition_is_a_clear_error():
    srv = Server(RV_WATCH)
    c = Rsp(srv.port)
    deep = "(" * 1000 + "vs=Dirty" + ")" * 1000
    assert "nested too deeply" in c.monitor("break when " + deep)
    assert "too long" in c.monitor("break when " + "not " * 2000 + "vs=Dirty")
    assert "nested too deeply" in c.monitor("break when " + "not " * 100 + "vs=Dirty")
    assert "Breakpoint 1: when" in c.monitor("break when ((vs=Dirty) or (vs=Clean))")
    assert c.cmd("qC") == "QC1"                                 # still serving
    c.s.sendall(b"$k#6b")
    assert srv.finish()[0] == 0


def test_killed_guest_is_an_X_stop_reply(tmp_path):
    src = tmp_path / "segv.S"
    src.write_text("# arch: arm64\n.globl _start\n_start:\n    mov x1, #8\n    ldr x0, [x1]\n")
    srv = Server(str(src))
    c = Rsp(srv.port)
    assert c.cmd("c") == "X0b"                                   # SIGSEGV
    c.s.sendall(b"$k#6b")
    assert srv.finish()[0] == 0


def test_exec_file_of_a_relative_elf_is_absolute(tmp_path):
    from emukern.loader.asm import assemble
    elf = assemble(Path(RV_WATCH), "riscv64")
    local = tmp_path / "prog.elf"
    local.write_bytes(elf.read_bytes())
    import os
    import sys
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.Popen([sys.executable, "-m", "emukern.cli", "gdbserver", "prog.elf", "--port", "0"],
                         cwd=str(tmp_path), env=env, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    port = int(re.search(r"listening on [\d.]+:(\d+)", line).group(1))
    c = Rsp(port)
    assert c.cmd("qXfer:exec-file:read:1:0,fff") == "l" + str(local)
    assert f"ELF {local})" in line
    c.s.sendall(b"$k#6b")
    p.communicate(timeout=30)
    assert p.returncode == 0
