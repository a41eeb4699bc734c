"""`emukern gdbserver`: the GDB remote serial protocol over TCP, on top of the debugger engine.

One client, deterministic, all-stop.  Supported: qSupported (PacketSize, qXfer:features:read+),
target description XML (riscv64: x0-x31, pc, f0-f31, fcsr, v0-v31 with V; aarch64: x0-x30, sp, pc, cpsr, v0-v31 (128-bit),
fpsr, fpcr), g/G, p/P, m/M, c, s, vCont? / vCont;c / vCont;s, Z0/z0 (and Z1/z1 as the same),
?, k, vKill, D, qAttached, qC, qfThreadInfo/qsThreadInfo, H, T, qRcmd (`monitor ...`), Ctrl-C.

`monitor CMD` runs the REPL's commands that do not move the machine (trap, traps, info kernel,
info task, break trap KIND, break when COND, sysctl, policy, x/..., help ...).  A stop at a trap
breakpoint or condition is reported as SIGTRAP (T05) like any breakpoint.  ``s`` is one guest
instruction *including* the kernel's handling of a trap it raises, so gdb sees the PC move past
an ecall/svc; `monitor trap` then shows what the handler decided.
"""
from __future__ import annotations

import socket
import sys
from typing import Any

from emukern.debug.engine import Debugger, StopEvent
from emukern.debug.errors import DebugError
from emukern.debug.regs import RV_ABI, read_register, write_register
from emukern.errors import ConfigError

RUN_CONTROL = {"stepi", "step", "continue", "finish", "until", "run", "restart", "quit"}


# ---- register layout and target descriptions -----------------------------------------------------
def reg_layout(arch: str, vlenb: int = 0) -> list[tuple[str, int]]:
    """(register name for regs.read_register, size in bytes), in gdb register-number order.
    RISC-V: x0-x31, pc, f0-f31, fcsr, then (with V) v0-v31 of VLENB bytes."""
    if arch == "riscv64":
        layout = [(f"x{i}", 8) for i in range(32)] + [("pc", 8)] + [(f"f{i}", 8) for i in range(32)]
        layout.append(("fcsr", 4))
        if vlenb:
            layout += [(f"v{i}", vlenb) for i in range(32)]
        return layout
    return ([(f"x{i}", 8) for i in range(31)] + [("sp", 8), ("pc", 8), ("cpsr", 4)] +
            [(f"v{i}", 16) for i in range(32)] + [("fpsr", 4), ("fpcr", 4)])


def target_xml(arch: str, vlenb: int = 0) -> str:
    head = '<?xml version="1.0"?>\n<!DOCTYPE target SYSTEM "gdb-target.dtd">\n<target version="1.0">\n'
    if arch == "riscv64":
        names = list(RV_ABI)
        names[8] = "fp"
        regs = []
        for i, n in enumerate(names):
            t = "code_ptr" if n == "ra" else "data_ptr" if n in ("sp", "gp", "tp", "fp") else "int"
            regs.append(f'  <reg name="{n}" bitsize="64" type="{t}" regnum="{i}"/>')
        regs.append('  <reg name="pc" bitsize="64" type="code_ptr" regnum="32"/>')
        fpu = [f'  <reg name="f{i}" bitsize="64" type="ieee_double" regnum="{33 + i}"/>' for i in range(32)]
        fpu.append('  <reg name="fcsr" bitsize="32" type="int" regnum="65"/>')
        xml = (head + "<architecture>riscv:rv64</architecture>\n<osabi>GNU/Linux</osabi>\n"
               '<feature name="org.gnu.gdb.riscv.cpu">\n' + "\n".join(regs) + "\n</feature>\n"
               '<feature name="org.gnu.gdb.riscv.fpu">\n' + "\n".join(fpu) + "\n</feature>\n")
        if vlenb:
            vec = [f'  <vector id="bytes" type="uint8" count="{vlenb}"/>',
                   f'  <vector id="words" type="uint32" count="{vlenb // 4}"/>',
                   f'  <vector id="dwords" type="uint64" count="{vlenb // 8}"/>',
                   '  <union id="riscv_vector">', '    <field name="b" type="bytes"/>',
                   '    <field name="w" type="words"/>', '    <field name="d" type="dwords"/>', '  </union>']
            vec += [f'  <reg name="v{i}" bitsize="{8 * vlenb}" type="riscv_vector" regnum="{66 + i}"/>'
                    for i in range(32)]
            xml += '<feature name="org.gnu.gdb.riscv.vector">\n' + "\n".join(vec) + "\n</feature>\n"
        return xml + "</target>\n"
    core = [f'  <reg name="x{i}" bitsize="64" type="int" regnum="{i}"/>' for i in range(31)]
    core += ['  <reg name="sp" bitsize="64" type="data_ptr" regnum="31"/>',
             '  <reg name="pc" bitsize="64" type="code_ptr" regnum="32"/>',
             '  <reg name="cpsr" bitsize="32" type="int" regnum="33"/>']
    fpu = ['  <vector id="v2d" type="uint64" count="2"/>',
           '  <vector id="v4s" type="uint32" count="4"/>',
           '  <vector id="v16b" type="uint8" count="16"/>',
           '  <union id="aarch64v">', '    <field name="d" type="v2d"/>', '    <field name="s" type="v4s"/>',
           '    <field name="b" type="v16b"/>', '    <field name="q" type="uint128"/>', '  </union>']
    fpu += [f'  <reg name="v{i}" bitsize="128" type="aarch64v" regnum="{34 + i}"/>' for i in range(32)]
    fpu += ['  <reg name="fpsr" bitsize="32" type="int" regnum="66"/>',
            '  <reg name="fpcr" bitsize="32" type="int" regnum="67"/>']
    return (head + "<architecture>aarch64</architecture>\n<osabi>GNU/Linux</osabi>\n"
            '<feature name="org.gnu.gdb.aarch64.core">\n' + "\n".join(core) + "\n</feature>\n"
            '<feature name="org.gnu.gdb.aarch64.fpu">\n' + "\n".join(fpu) + "\n</feature>\n</target>\n")


def checksum(data: bytes) -> int:
    return sum(data) & 0xFF


def escape_binary(data: bytes) -> bytes:
    out = bytearray()
    for b in data:
        if b in b"#$}*":
            out += bytes([0x7D, b ^ 0x20])
        else:
            out.append(b)
    return bytes(out)


class GdbStub:
    def __init__(self, dbg: Debugger, conn: socket.socket, verbose: bool = False) -> None:
        self.dbg = dbg
        self.conn = conn
        self.verbose = verbose
        self.buf = b""
        self.ack = True
        self.done = False
        self.gdb_bps: dict[int, int] = {}      # address -> debugger breakpoint number
        rvv = getattr(dbg.cpu, "rvv", None) if dbg.arch == "riscv64" else None
        vlenb = rvv.vlenb if rvv is not None else 0
        self.layout = reg_layout(dbg.arch, vlenb)
        self.xml = target_xml(dbg.arch, vlenb).encode()

    # ---- transport -----------------------------------------------------------------------------------
    def _log(self, msg: str) -> None:
        if self.verbose:
            print(f"gdbserver: {msg}", file=sys.stderr, flush=True)

    def _recv(self) -> bytes:
        data = self.conn.recv(65536)
        if not data:
            raise ConnectionError("gdb disconnected")
        return data

    def read_packet(self) -> str | None:
        """The next packet's payload ("\\x03" for an interrupt); None on disconnect."""
        while True:
            while self.buf[:1] in (b"+", b"-"):
                self.buf = self.buf[1:]
            if self.buf[:1] == b"\x03":
                self.buf = self.buf[1:]
                return "\x03"
            start = self.buf.find(b"$")
            if start >= 0:
                end = self.buf.find(b"#", start)
                if end >= 0 and len(self.buf) >= end + 3:
                    payload = self.buf[start + 1:end]
                    self.buf = self.buf[end + 3:]
                    if self.ack:
                        self.conn.sendall(b"+")
                    self._log(f"<- {payload[:200]!r}")
                    return payload.decode("latin-1")
            elif self.buf and self.buf[:1] not in (b"$",):
                self.buf = self.buf[1:]           # junk
                continue
            try:
                self.buf += self._recv()
            except (ConnectionError, OSError):
                return None

    def send(self, payload: str | bytes) -> None:
        data = payload.encode("latin-1") if isinstance(payload, str) else payload
        self._log(f"-> {data[:200]!r}")
        self.conn.sendall(b"$" + data + b"#" + f"{checksum(data):02x}".encode())

    def _interrupt_pending(self) -> bool:
        """Poll the socket (without blocking) for gdb's Ctrl-C while the guest runs."""
        try:
            self.conn.setblocking(False)
            try:
                data = self.conn.recv(4096)
            finally:
                self.conn.setblocking(True)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True
        if not data:
            return True
        if b"\x03" in data:
            self.buf += data.replace(b"\x03", b"", 1)
            return True
        self.buf += data
        return False

    # ---- main loop -----------------------------------------------------------------------------------
    def run(self) -> None:
        self.dbg.interrupt_check = self._interrupt_pending
        while not self.done:
            pkt = self.read_packet()
            if pkt is None:
                self._log("client disconnected")
                return
            try:
                reply = self.handle(pkt)
            except DebugError as exc:
                self._log(f"error: {exc.message}")
                reply = "E01"
            except Exception as exc:  # noqa: BLE001 - keep serving; gdb sees an error reply
                self._log(f"internal error: {type(exc).__name__}: {exc}")
                reply = "E01"
            if reply is not None:
                self.send(reply)

    def stop_reply(self, ev: StopEvent | None = None) -> str:
        if self.dbg.finished:
            status = getattr(self.dbg, "exit_status", 0) & 0xFF
            return f"W{status:02x}"
        sig = 2 if ev is not None and ev.reason == "interrupted" else 5
        return f"T{sig:02x}thread:01;"

    def handle(self, pkt: str) -> str | None:
        dbg = self.dbg
        if pkt == "\x03":
            return self.stop_reply(StopEvent("interrupted"))
        if pkt == "?":
            return self.stop_reply()
        if pkt.startswith("qSupported"):
            return "PacketSize=4000;qXfer:features:read+;vContSupported+;QStartNoAckMode+"
        if pkt == "QStartNoAckMode":
            self.send("OK")
            self.ack = False
            return None
        if pkt.startswith("qXfer:features:read:"):
            annex, _, rng = pkt[len("qXfer:features:read:"):].partition(":")
            if annex != "target.xml":
                return "E00"
            off_s, _, len_s = rng.partition(",")
            off, ln = int(off_s, 16), int(len_s, 16)
            chunk = self.xml[off:off + ln]
            return (b"l" if off + ln >= len(self.xml) else b"m") + escape_binary(chunk)  # type: ignore[return-value]
        if pkt == "qAttached" or pkt.startswith("qAttached:"):
            return "1"
        if pkt == "qC":
            return "QC01"
        if pkt == "qfThreadInfo":
            return "m01"
        if pkt == "qsThreadInfo":
            return "l"
        if pkt.startswith("qThreadExtraInfo"):
            t = dbg.task()
            return (f"tid {t.tid} on cpu {dbg.cur}" if t else "idle").encode().hex()
        if pkt.startswith("H") or pkt.startswith("T"):
            return "OK"
        if pkt.startswith("qSymbol"):
            return "OK"
        if pkt.startswith("qRcmd,"):
            return self.monitor(bytes.fromhex(pkt[6:]).decode("utf-8", "replace"))
        if pkt == "g":
            return "".join(self._reg_hex(i) for i in range(len(self.layout)))
        if pkt.startswith("G"):
            data = bytes.fromhex(pkt[1:])
            pos = 0
            for name, size in self.layout:
                if pos + size > len(data):
                    break
                write_register(dbg.cpu, name, int.from_bytes(data[pos:pos + size], "little"))
                pos += size
            return "OK"
        if pkt.startswith("p"):
            n = int(pkt[1:], 16)
            return self._reg_hex(n) if n < len(self.layout) else "E45"
        if pkt.startswith("P"):
            n_s, _, v = pkt[1:].partition("=")
            n = int(n_s, 16)
            if n >= len(self.layout):
                return "E45"
            write_register(dbg.cpu, self.layout[n][0], int.from_bytes(bytes.fromhex(v), "little"))
            return "OK"
        if pkt.startswith("m"):
            a, _, ln = pkt[1:].partition(",")
            try:
                return bytes(dbg.mm().read(int(a, 16), int(ln, 16), "")).hex()
            except Exception:
                return "E14"
        if pkt.startswith("M"):
            head, _, hexdata = pkt[1:].partition(":")
            a, _, ln = head.partition(",")
            data = bytes.fromhex(hexdata)[:int(ln, 16)]
            try:
                addr = int(a, 16)
                dbg.mm().write(addr, data, "")
                from unicorn import UcError
                for cpu in dbg.k.cpus:
                    try:
                        cpu.uc.ctl_remove_cache(addr, addr + max(1, len(data)))
                    except UcError as exc:
                        # memory changed but translated code may be stale: tell gdb it failed
                        print(f"emukern gdbserver: M {addr:#x}: cpu {cpu.index} could not drop translated "
                              f"code: {exc}", file=sys.stderr, flush=True)
                        return "E15"
                return "OK"
            except Exception:
                return "E14"
        if pkt.startswith("X"):
            return ""                               # gdb falls back to M
        if pkt.startswith("Z0,") or pkt.startswith("Z1,"):
            addr = int(pkt[3:].split(",")[0], 16)
            if addr not in self.gdb_bps:
                bp = dbg.add_addr_breakpoint(hex(addr))
                self.gdb_bps[addr] = bp.num
            return "OK"
        if pkt.startswith("z0,") or pkt.startswith("z1,"):
            addr = int(pkt[3:].split(",")[0], 16)
            num = self.gdb_bps.pop(addr, None)
            if num is not None and num in dbg.breakpoints:
                dbg.delete_breakpoint(num)
            return "OK"
        if pkt.startswith("Z") or pkt.startswith("z"):
            return ""                               # watchpoints: not supported
        if pkt == "vCont?":
            return "vCont;c;C;s;S"
        if pkt.startswith("vCont;"):
            actions = [a.split(":")[0] for a in pkt[6:].split(";") if a]
            if any(a[:1] in ("s", "S") for a in actions):
                return self._resume("step")
            return self._resume("cont")
        if pkt.startswith("c") or pkt.startswith("C"):
            return self._resume("cont")
        if pkt.startswith("s") or pkt.startswith("S"):
            return self._resume("step")
        if pkt == "k" or pkt.startswith("vKill"):
            self.done = True
            if pkt.startswith("vKill"):
                return "OK"
            return None
        if pkt == "D" or pkt.startswith("D;"):
            self.send("OK")
            self.done = True
            self.detach = True
            return None
        return ""                                   # unsupported packet

    def _reg_hex(self, n: int) -> str:
        name, size = self.layout[n]
        try:
            v = read_register(self.dbg.cpu, name)
        except DebugError:
            return "xx" * size
        return (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little").hex()

    def _resume(self, how: str) -> str:
        dbg = self.dbg
        if dbg.finished:
            return self.stop_reply()
        ev = dbg.step() if how == "step" else dbg.cont()
        return self.stop_reply(ev)

    def monitor(self, cmdline: str) -> str:
        from rich.console import Console

        from emukern.debug.commands import Session, find_command
        import io
        buf = io.StringIO()
        con = Console(file=buf, highlight=False, no_color=True, force_terminal=False, color_system=None,
                      width=1000, soft_wrap=True)
        sess = Session(self.dbg, lambda line: con.print(line))
        word = cmdline.strip().split(" ", 1)[0].split("/", 1)[0]
        try:
            cmd = find_command(word) if word else None
        except DebugError:
            cmd = None
        if cmd is not None and cmd.name in RUN_CONTROL:
            con.print(f"`{cmd.name}` moves the machine: use gdb's own stepi/continue/kill instead", markup=False)
        else:
            sess.execute(cmdline or "help")
        text = buf.getvalue()
        for i in range(0, len(text), 1024):
            self.send("O" + text[i:i + 1024].encode().hex())
        return "OK"


def serve(dbg: Debugger, host: str = "127.0.0.1", port: int = 1234, verbose: bool = False) -> int:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        srv.bind((host, port))
    except OSError as exc:
        srv.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                          hint="the port is probably in use: pick another --port (0 picks a free one)") from None
    srv.listen(1)
    real_port = srv.getsockname()[1]
    print(f"emukern gdbserver: listening on {host}:{real_port} ({dbg.arch}, "
          f"{getattr(dbg.m, 'argv', ['?'])[0]}); connect with: target remote {host}:{real_port}",
          file=sys.stderr, flush=True)
    try:
        conn, peer = srv.accept()
    finally:
        srv.close()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print(f"emukern gdbserver: gdb connected from {peer[0]}:{peer[1]}", file=sys.stderr, flush=True)
    stub = GdbStub(dbg, conn, verbose)
    try:
        stub.run()
    finally:
        try:
            conn.close()
        except OSError:
            pass
    if getattr(stub, "detach", False) and not dbg.finished:
        print("emukern gdbserver: detached; running the program to its end", file=sys.stderr, flush=True)
        dbg.detach_run()
    print("emukern gdbserver: done", file=sys.stderr, flush=True)
    return 0
