"""`emukern gdbserver`: the GDB remote protocol, raw over a socket and with gdb-multiarch in batch mode."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

from debug_testutil import ARM, REPO, RV

GDB = shutil.which("gdb-multiarch")
needs_gdb = pytest.mark.skipif(GDB is None, reason="gdb-multiarch is not installed (apt-get install gdb-multiarch)")


class Server:
    def __init__(self, prog: str, *opts: str, port: int = 0) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen([sys.executable, "-m", "emukern.cli", "gdbserver", prog, "--port", str(port),
                                      *opts], cwd=str(REPO), env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        self.line = line
        m = re.search(r"listening on [\d.]+:(\d+)", line)
        if m is None:
            self.proc.kill()
            raise AssertionError(f"no listening line: {line!r} {self.proc.stderr.read()!r}")
        self.port = int(m.group(1))

    def finish(self, timeout: float = 20) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err


class Rsp:
    """A minimal GDB remote client."""

    def __init__(self, port: int) -> None:
        self.s = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.buf = b""

    def cmd(self, payload: str) -> str:
        data = payload.encode()
        self.s.sendall(b"$" + data + b"#" + f"{sum(data) & 0xFF:02x}".encode())
        return self.reply()

    def reply(self) -> str:
        while True:
            m = re.search(rb"\$([^#]*)#[0-9a-f]{2}", self.buf)
            if m:
                self.buf = self.buf[m.end():]
                self.s.sendall(b"+")
                return m.group(1).decode("latin-1")
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("server closed")
            self.buf += chunk

    def monitor(self, text: str) -> str:
        out = ""
        r = self.cmd("qRcmd," + text.encode().hex())
        while r.startswith("O") and r != "OK":
            out += bytes.fromhex(r[1:]).decode()
            r = self.reply()
        assert r == "OK"
        return out


def test_raw_protocol_riscv():
    srv = Server(RV)
    c = Rsp(srv.port)
    assert "qXfer:features:read+" in c.cmd("qSupported:multiprocess+;swbreak+")
    assert "PacketSize=" in c.cmd("qSupported")
    xml = c.cmd("qXfer:features:read:target.xml:0,ffff")
    assert xml.startswith("l") and "org.gnu.gdb.riscv.cpu" in xml and 'name="pc"' in xml
    assert c.cmd("?").startswith("T05")
    assert c.cmd("qAttached") == "1" and c.cmd("qC") == "QC1"
    assert c.cmd("qfThreadInfo") == "m1" and c.cmd("qsThreadInfo") == "l"
    assert c.cmd("Hg0") == "OK"
    assert c.cmd("vCont?").startswith("vCont;c")
    g = c.cmd("g")
    vlenb = 256 // 8                      # the default VLEN
    # x0-x31, pc, f0-f31 (8 bytes each), fcsr (4), v0-v31 (VLENB each), 10 CSRs (8 each), hex-encoded
    assert len(g) == 2 * (33 * 8 + 32 * 8 + 4 + 32 * vlenb + 10 * 8)
    pc = int.from_bytes(bytes.fromhex(c.cmd("p20")), "little")
    assert pc == int.from_bytes(bytes.fromhex(g[32 * 16:33 * 16]), "little")
    assert len(c.cmd(f"p{66:x}")) == 2 * vlenb      # v0, the whole VLEN-bit register
    # a breakpoint at the ecall (pc + 16: c.li, auipc, addi, c.li, addi)
    ecall = pc + 16
    assert c.cmd(f"Z0,{ecall:x},4") == "OK"
    assert c.cmd("c").startswith("T05")
    assert int.from_bytes(bytes.fromhex(c.cmd("p20")), "little") == ecall
    assert c.cmd(f"m{ecall:x},4") == "73000000"
    assert c.cmd("m10,4").startswith("E")
    assert c.cmd(f"z0,{ecall:x},4") == "OK"
    assert c.cmd("vCont;s:1").startswith("T05")           # steps over the ecall: the write happens
    assert int.from_bytes(bytes.fromhex(c.cmd("p20")), "little") == ecall + 4
    assert c.cmd("Pa=3412000000000000") == "OK"            # a0
    assert c.cmd("pa") == "3412000000000000"
    out = c.monitor("trap")
    assert "syscall" in out and "handler   write" in out and "decision  returned 6" in out
    assert "sstatus.VS Off" in c.monitor("info kernel")
    assert "moves the machine" in c.monitor("continue")
    assert "Trap breakpoint 2: first-use" in c.monitor("break trap first-use")
    assert c.cmd("c").startswith("T05")
    assert "riscv_v_first_use_handler" in c.monitor("trap")
    assert c.cmd("c") == "W00"
    c.s.sendall(b"$k#6b")
    rc, out, err = srv.finish()
    assert rc == 0 and "hello" in out and "done" in err


def test_port_in_use_is_a_clean_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        p = subprocess.run([sys.executable, "-m", "emukern.cli", "gdbserver", RV, "--port", str(port)],
                           cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                           text=True, timeout=30)
    finally:
        s.close()
    assert p.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in p.stderr and "Traceback" not in p.stderr


def test_disconnect_exits_cleanly():
    srv = Server(ARM)
    c = Rsp(srv.port)
    assert c.cmd("?").startswith("T05")
    c.s.close()
    rc, out, err = srv.finish()
    assert rc == 0 and "done" in err


def run_gdb(port: int, arch: str, commands: list[str]) -> str:
    args = [GDB, "-nx", "-batch", "-ex", "set confirm off", "-ex", f"set architecture {arch}",
            "-ex", f"target remote 127.0.0.1:{port}"]
    for c in commands:
        args += ["-ex", c]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    return p.stdout + p.stderr


@needs_gdb
@pytest.mark.parametrize("prog,arch,bp_sym,steps_to", [
    (RV, "riscv:rv64", "vector_start", 0x1113A),
    (ARM, "aarch64", "read_id", None),
])
def test_gdb_multiarch_batch(prog, arch, bp_sym, steps_to):
    from emukern.api import Machine
    m = Machine().load(prog)
    bp = m.kernel.symbols[bp_sym]
    # the instruction before the breakpoint is the write syscall's ecall/svc
    srv = Server(prog)
    out = run_gdb(srv.port, arch, [f"break *{bp - 4:#x}", "continue", "info registers pc", "stepi",
                                   "info registers pc", "x/4xb $pc", "monitor trap", "monitor info kernel",
                                   "kill"])
    rc, gout, err = srv.finish()
    assert rc == 0, err
    assert f"Breakpoint 1, {bp - 4:#018x}" in out
    assert re.search(rf"pc\s+{bp - 4:#x}", out)
    assert re.search(rf"pc\s+{bp:#x}", out)                 # stepped over the syscall
    assert re.search(rf"{bp:#x} <{bp_sym}>:\t0x", out)        # x/4xb, with the symbol gdb loaded itself
    assert "handler   write" in out and "decision  returned 6" in out
    assert "policies:" in out
    assert "killed" in out
    assert "hello" in gout


@needs_gdb
def test_gdb_trap_stop_and_registers_arm64():
    srv = Server(ARM)
    out = run_gdb(srv.port, "aarch64", ["monitor break trap sve-access", "continue", "x/i $pc",
                                        "monitor trap", "stepi", "info registers x0", "p/x $v0.q",
                                        "info registers cpsr", "kill"])
    rc, gout, err = srv.finish()
    assert rc == 0, err
    assert "Program received signal SIGTRAP" in out
    assert "rdvl" in out
    assert "do_sve_acc" in out and "stopped before the handler" in out
    assert re.search(r"x0\s+0x40\s+64", out)                  # rdvl re-executed: boot default VL 512


@needs_gdb
def test_gdb_reads_riscv_vector_and_fp_registers():
    """The riscv64 target description carries f0-f31/fcsr and v0-v31 (VLEN bits) from the RVV
    unit: after `vmv.v.i v1, 7` with vl=4, e32, gdb sees 7 in the first four 32-bit elements."""
    from emukern.api import Machine
    m = Machine().load(RV)
    start = m.kernel.symbols["vector_start"]
    srv = Server(RV)
    out = run_gdb(srv.port, "riscv:rv64", [f"break *{start:#x}", "continue", "stepi 3", "p/x $v1.w",
                                           "p $f0", "info registers fcsr", "kill"])
    rc, _, err = srv.finish()
    assert rc == 0, err
    assert "{0x7, 0x7, 0x7, 0x7, 0x0, 0x0, 0x0, 0x0}" in out
    assert "fcsr" in out and "double = 0" in out
