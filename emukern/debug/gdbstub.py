"""`emukern gdbserver`: the GDB remote serial protocol over TCP, on top of the debugger engine.

One client, deterministic, all-stop; modelled on QEMU's gdbstub.  Supported: qSupported
(PacketSize, qXfer:features:read+, qXfer:exec-file:read+), target description XML, g/G, p/P,
m/M, c, s, vCont? / vCont;c / vCont;s, Z0/z0 (and Z1/z1 as the same), Z2/Z3/Z4 watchpoints
(write/read/access, stop replies with watch:/rwatch:/awatch:), ?, k, vKill, D, qAttached, qC,
threads (qfThreadInfo/qsThreadInfo list every live task, Hg/Hc select one, T stop replies name
the thread, T<tid> alive, qThreadExtraInfo), qRcmd (`monitor ...`), Ctrl-C.

Target descriptions: riscv64 x0-x31, pc, f0-f31, fcsr, with V v0-v31 (VLEN bits), and the CSRs
gdb knows that a user program has: cycle, time, instret, and with V vstart, vxsat, vxrm, vcsr,
vl, vtype, vlenb (org.gnu.gdb.riscv.csr).  aarch64: x0-x30, sp, pc, cpsr, then with SVE the
org.gnu.gdb.aarch64.sve feature at the configured VL -- z0-z31, fpsr, fpcr, p0-p15, ffr, vg, in
gdb's register numbering, as QEMU does (gdb derives v0-v31/q/d/s from the Z registers) -- or
without SVE v0-v31 (128-bit), fpsr, fpcr (org.gnu.gdb.aarch64.fpu).

Threads: a task on a CPU shows that CPU's live registers; a task that is switched out shows the
integer registers the kernel saved for it (its pt_regs) and its FP/vector registers as
unavailable.  Selecting a thread with Hg does not move the machine.

The transport verifies checksums and answers a bad packet with ``-`` (gdb resends), discards
junk between packets in linear time, and bounds a packet's length.  A client that disconnects
or resets the connection ends the session cleanly.

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

from emukern.debug.engine import Debugger, StopEvent, Watchpoint
from emukern.debug.errors import DebugError
from emukern.errors import MemoryFault
from emukern.debug.regs import (RV_ABI, RV_COUNTER_CSRS, RV_VECTOR_CSRS, has_sve, read_register,
                                read_sve, read_sve_register, write_register)
from emukern.errors import ConfigError

RUN_CONTROL = {"stepi", "step", "continue", "finish", "until", "run", "restart", "quit"}
PACKET_SIZE = 0x4000            # what qSupported advertises
MAX_PACKET = 1 << 20            # a "packet" longer than this without its '#' is dropped (NAK)

# riscv CSRs in the org.gnu.gdb.riscv.csr feature: (name, readable without V)
RV_CSRS = [(n, True) for n in RV_COUNTER_CSRS] + [(n, False) for n in RV_VECTOR_CSRS]


# ---- register layout and target descriptions -----------------------------------------------------
def reg_layout(arch: str, vlenb: int = 0, sve_vl: int = 0) -> list[tuple[str, int]]:
    """(register name for regs.read_register, size in bytes), in gdb register-number order.

    RISC-V: x0-x31, pc, f0-f31, fcsr, then (with V) v0-v31 of VLENB bytes, then the CSRs.
    aarch64: x0-x30, sp, pc, cpsr, then with SVE (``sve_vl`` bits) z0-z31, fpsr, fpcr, p0-p15,
    ffr, vg -- gdb's own numbering for an SVE target -- else v0-v31, fpsr, fpcr."""
    if arch == "riscv64":
        layout = [(f"x{i}", 8) for i in range(32)] + [("pc", 8)] + [(f"f{i}", 8) for i in range(32)]
        layout.append(("fcsr", 4))
        if vlenb:
            layout += [(f"v{i}", vlenb) for i in range(32)]
        layout += [(n, 8) for n, no_v in RV_CSRS if no_v or vlenb]
        return layout
    core = [(f"x{i}", 8) for i in range(31)] + [("sp", 8), ("pc", 8), ("cpsr", 4)]
    if sve_vl:
        vb = sve_vl // 8
        return (core + [(f"z{i}", vb) for i in range(32)] + [("fpsr", 4), ("fpcr", 4)] +
                [(f"p{i}", vb // 8) for i in range(16)] + [("ffr", vb // 8), ("vg", 8)])
    return core + [(f"v{i}", 16) for i in range(32)] + [("fpsr", 4), ("fpcr", 4)]


def _sve_feature(vl: int, first: int) -> list[str]:
    """org.gnu.gdb.aarch64.sve at VL bits (the types gdb's own aarch64-sve description uses)."""
    vq = vl // 128
    out = [f'  <vector id="svevqu" type="uint128" count="{vq}"/>',
           f'  <vector id="svevqs" type="int128" count="{vq}"/>',
           f'  <vector id="svevdf" type="ieee_double" count="{2 * vq}"/>',
           f'  <vector id="svevdu" type="uint64" count="{2 * vq}"/>',
           f'  <vector id="svevds" type="int64" count="{2 * vq}"/>',
           f'  <vector id="svevsf" type="ieee_single" count="{4 * vq}"/>',
           f'  <vector id="svevsu" type="uint32" count="{4 * vq}"/>',
           f'  <vector id="svevss" type="int32" count="{4 * vq}"/>',
           f'  <vector id="svevhf" type="ieee_half" count="{8 * vq}"/>',
           f'  <vector id="svevhu" type="uint16" count="{8 * vq}"/>',
           f'  <vector id="svevhs" type="int16" count="{8 * vq}"/>',
           f'  <vector id="svevbu" type="uint8" count="{16 * vq}"/>',
           f'  <vector id="svevbs" type="int8" count="{16 * vq}"/>',
           f'  <vector id="svep" type="uint8" count="{2 * vq}"/>',
           '  <union id="svevnq"><field name="u" type="svevqu"/><field name="s" type="svevqs"/></union>',
           '  <union id="svevnd"><field name="f" type="svevdf"/><field name="u" type="svevdu"/>'
           '<field name="s" type="svevds"/></union>',
           '  <union id="svevns"><field name="f" type="svevsf"/><field name="u" type="svevsu"/>'
           '<field name="s" type="svevss"/></union>',
           '  <union id="svevnh"><field name="f" type="svevhf"/><field name="u" type="svevhu"/>'
           '<field name="s" type="svevhs"/></union>',
           '  <union id="svevnb"><field name="u" type="svevbu"/><field name="s" type="svevbs"/></union>',
           '  <union id="svev"><field name="q" type="svevnq"/><field name="d" type="svevnd"/>'
           '<field name="s" type="svevns"/><field name="h" type="svevnh"/><field name="b" type="svevnb"/></union>']
    n = first
    for i in range(32):
        out.append(f'  <reg name="z{i}" bitsize="{vl}" type="svev" regnum="{n}"/>')
        n += 1
    out += [f'  <reg name="fpsr" bitsize="32" type="int" regnum="{n}"/>',
            f'  <reg name="fpcr" bitsize="32" type="int" regnum="{n + 1}"/>']
    n += 2
    for i in range(16):
        out.append(f'  <reg name="p{i}" bitsize="{vl // 8}" type="svep" regnum="{n}"/>')
        n += 1
    out += [f'  <reg name="ffr" bitsize="{vl // 8}" type="svep" regnum="{n}"/>',
            f'  <reg name="vg" bitsize="64" type="int" regnum="{n + 1}"/>']
    return out


def target_xml(arch: str, vlenb: int = 0, sve_vl: int = 0) -> str:
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
        n = 66
        if vlenb:
            vec = [f'  <vector id="bytes" type="uint8" count="{vlenb}"/>',
                   f'  <vector id="words" type="uint32" count="{vlenb // 4}"/>',
                   f'  <vector id="dwords" type="uint64" count="{vlenb // 8}"/>',
                   '  <union id="riscv_vector">', '    <field name="b" type="bytes"/>',
                   '    <field name="w" type="words"/>', '    <field name="d" type="dwords"/>', '  </union>']
            vec += [f'  <reg name="v{i}" bitsize="{8 * vlenb}" type="riscv_vector" regnum="{66 + i}"/>'
                    for i in range(32)]
            xml += '<feature name="org.gnu.gdb.riscv.vector">\n' + "\n".join(vec) + "\n</feature>\n"
            n = 98
        csrs = []
        for name, no_v in RV_CSRS:
            if no_v or vlenb:
                csrs.append(f'  <reg name="{name}" bitsize="64" type="int" regnum="{n}" group="csr"/>')
                n += 1
        xml += '<feature name="org.gnu.gdb.riscv.csr">\n' + "\n".join(csrs) + "\n</feature>\n"
        return xml + "</target>\n"
    core = [f'  <reg name="x{i}" bitsize="64" type="int" regnum="{i}"/>' for i in range(31)]
    core += ['  <reg name="sp" bitsize="64" type="data_ptr" regnum="31"/>',
             '  <reg name="pc" bitsize="64" type="code_ptr" regnum="32"/>',
             '  <reg name="cpsr" bitsize="32" type="int" regnum="33"/>']
    xml = (head + "<architecture>aarch64</architecture>\n<osabi>GNU/Linux</osabi>\n"
           '<feature name="org.gnu.gdb.aarch64.core">\n' + "\n".join(core) + "\n</feature>\n")
    if sve_vl:
        return xml + ('<feature name="org.gnu.gdb.aarch64.sve">\n' + "\n".join(_sve_feature(sve_vl, 34)) +
                      "\n</feature>\n</target>\n")
    fpu = ['  <vector id="v2d" type="uint64" count="2"/>',
           '  <vector id="v4s" type="uint32" count="4"/>',
           '  <vector id="v16b" type="uint8" count="16"/>',
           '  <union id="aarch64v">', '    <field name="d" type="v2d"/>', '    <field name="s" type="v4s"/>',
           '    <field name="b" type="v16b"/>', '    <field name="q" type="uint128"/>', '  </union>']
    fpu += [f'  <reg name="v{i}" bitsize="128" type="aarch64v" regnum="{34 + i}"/>' for i in range(32)]
    fpu += ['  <reg name="fpsr" bitsize="32" type="int" regnum="66"/>',
            '  <reg name="fpcr" bitsize="32" type="int" regnum="67"/>']
    return xml + '<feature name="org.gnu.gdb.aarch64.fpu">\n' + "\n".join(fpu) + "\n</feature>\n</target>\n"


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


def _xfer_chunk(data: bytes, rng: str) -> bytes | str:
    """The ``offset,length`` window of a qXfer object: ``m`` + data (more follows) or ``l`` + data."""
    try:
        off_s, _, len_s = rng.partition(",")
        off, ln = int(off_s, 16), int(len_s, 16)
    except ValueError:
        return "E00"
    chunk = data[off:off + ln]
    return (b"l" if off + ln >= len(data) else b"m") + escape_binary(chunk)


class ClientGone(Exception):
    """The gdb connection closed or was reset."""


class GdbStub:
    def __init__(self, dbg: Debugger, conn: socket.socket, verbose: bool = False) -> None:
        self.dbg = dbg
        self.conn = conn
        self.verbose = verbose
        self.buf = bytearray()
        self._scan = 0                          # how far self.buf has been searched for '#'
        self.ack = True
        self.done = False
        self.detach = False
        self.gdb_bps: dict[int, int] = {}      # address -> debugger breakpoint number
        self.gdb_wps: dict[tuple[str, int, int], int] = {}   # (kind, addr, len) -> watchpoint number
        self.g_tid: int | None = None           # thread selected by Hg (None: the stopped one)
        self.last_stop: StopEvent | None = None
        self.naks = 0
        rvv = getattr(dbg.cpu, "rvv", None) if dbg.arch == "riscv64" else None
        vlenb = rvv.vlenb if rvv is not None else 0
        self.sve_vl = int(dbg.k.config.sve_vl) if dbg.arch == "arm64" and has_sve(dbg.cpu) else 0
        self.layout = reg_layout(dbg.arch, vlenb, self.sve_vl)
        self.regnum = {name: i for i, (name, _) in enumerate(self.layout)}
        self.xml = target_xml(dbg.arch, vlenb, self.sve_vl).encode()
        self._sve_cache: dict[int, dict[str, Any]] = {}

    # ---- transport -----------------------------------------------------------------------------------
    def _log(self, msg: str) -> None:
        if self.verbose:
            print(f"gdbserver: {msg}", file=sys.stderr, flush=True)

    def _recv(self) -> bytes:
        try:
            data = self.conn.recv(65536)
        except OSError as exc:                  # ECONNRESET and friends
            raise ClientGone(str(exc)) from None
        if not data:
            raise ClientGone("gdb disconnected")
        return data

    def _sendall(self, data: bytes) -> None:
        try:
            self.conn.sendall(data)
        except OSError as exc:
            raise ClientGone(str(exc)) from None

    def _next_packet(self) -> str | None:
        """Take one packet (or Ctrl-C) from the buffer; None if it holds no complete one yet.

        Everything before a '$' or 0x03 (acks, junk) goes in one cut, and the search for the
        terminating '#' resumes where it stopped, so junk and long packets cost linear time."""
        buf = self.buf
        while True:
            if self._scan == 0:
                dollar = buf.find(b"$")
                ctrl_c = buf.find(b"\x03", 0, dollar if dollar >= 0 else len(buf))
                if ctrl_c >= 0:
                    del buf[:ctrl_c + 1]
                    return "\x03"
                if dollar < 0:
                    buf.clear()                 # only acks and junk
                    return None
                del buf[:dollar]
                self._scan = 1
            hash_at = buf.find(b"#", self._scan)
            restart = buf.find(b"$", 1, hash_at if hash_at >= 0 else len(buf))
            if restart >= 0:                    # a new packet began before this one ended: drop it
                self._log(f"dropped a truncated packet ({restart} bytes)")
                del buf[:restart]
                self._scan = 1
                continue
            if hash_at < 0:
                self._scan = max(1, len(buf))
                if len(buf) > MAX_PACKET:
                    self._log(f"dropped an unterminated packet of more than {MAX_PACKET} bytes")
                    buf.clear()
                    self._scan = 0
                    if self.ack:
                        self._sendall(b"-")
                return None
            if len(buf) < hash_at + 3:
                self._scan = hash_at
                return None
            payload = bytes(buf[1:hash_at])
            sent = bytes(buf[hash_at + 1:hash_at + 3])
            del buf[:hash_at + 3]
            self._scan = 0
            try:
                good = int(sent, 16) == checksum(payload)
            except ValueError:
                good = False
            if not good:
                self.naks += 1
                self._log(f"bad checksum {sent!r} on {payload[:60]!r}: NAK")
                if self.ack:
                    self._sendall(b"-")         # gdb retransmits
                continue
            if self.ack:
                self._sendall(b"+")
            self._log(f"<- {payload[:200]!r}")
            return payload.decode("latin-1")

    def read_packet(self) -> str | None:
        """The next packet's payload ("\\x03" for an interrupt); None on disconnect."""
        while True:
            try:
                pkt = self._next_packet()
                if pkt is not None:
                    return pkt
                self.buf += self._recv()
            except ClientGone:
                return None

    def send(self, payload: str | bytes) -> None:
        data = payload.encode("latin-1") if isinstance(payload, str) else payload
        self._log(f"-> {data[:200]!r}")
        self._sendall(b"$" + data + b"#" + f"{checksum(data):02x}".encode())

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
            return True                          # reset: stop, the reply's send ends the session
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
        try:
            while not self.done:
                pkt = self.read_packet()
                if pkt is None:
                    self._log("client disconnected")
                    return
                try:
                    reply = self.handle(pkt)
                except ClientGone:
                    raise
                except DebugError as exc:
                    self._log(f"error: {exc.message}")
                    reply = "E01"
                except Exception as exc:  # noqa: BLE001 - keep serving; gdb sees an error reply
                    self._log(f"internal error: {type(exc).__name__}: {exc}")
                    reply = "E01"
                if reply is not None:
                    self.send(reply)
        except ClientGone as exc:
            self._log(f"client gone: {exc}")

    # ---- threads -------------------------------------------------------------------------------------
    def _live_tids(self) -> list[int]:
        return sorted(t.tid for t in self.dbg.k.tasks.values() if t.alive)

    def _stop_tid(self) -> int:
        t = self.dbg.task()
        if t is not None:
            return int(t.tid)
        live = self._live_tids()
        return live[0] if live else 1

    def _cpu_of(self, tid: int) -> Any:
        for i, p in enumerate(self.dbg.k.percpu):
            if p.curr is not None and p.curr.tid == tid:
                return self.dbg.k.cpus[i]
        return None

    def _selected(self) -> tuple[Any, Any]:
        """(cpu, task) whose registers g/p/G/P use: the Hg thread, else the stopped one.
        cpu is None when the task is switched out (then its saved pt_regs are used)."""
        tid = self.g_tid if self.g_tid not in (None, 0, -1) else self._stop_tid()
        cpu = self._cpu_of(tid)
        if cpu is not None:
            return cpu, self.dbg.k.percpu[cpu.index].curr
        return None, self.dbg.k.tasks.get(tid)

    @staticmethod
    def _parse_tid(text: str) -> int:
        if text in ("-1", ""):
            return -1
        if text.startswith("p"):                # multiprocess syntax p<pid>.<tid>
            text = text.split(".", 1)[-1]
        return int(text, 16)

    def stop_reply(self, ev: StopEvent | None = None) -> str:
        if self.dbg.finished:
            sig = getattr(self.dbg, "exit_signal", 0)
            if sig:
                return f"X{sig:02x}"                # killed by a signal (gdb: "terminated with signal")
            status = getattr(self.dbg, "exit_status", 0) & 0xFF
            return f"W{status:02x}"
        ev = ev if ev is not None else self.last_stop
        sig = 2 if ev is not None and ev.reason == "interrupted" else 5
        extra = ""
        if ev is not None and ev.reason == "watchpoint" and isinstance(ev.bp, Watchpoint):
            wp = ev.bp
            key = {"w": "watch", "r": "rwatch", "a": "awatch"}[wp.access]
            extra = f"{key}:{wp.hit_addr:x};"
        return f"T{sig:02x}thread:{self._stop_tid():x};{extra}"

    # ---- packets ---------------------------------------------------------------------------------------
    def handle(self, pkt: str) -> str | None:
        dbg = self.dbg
        if pkt == "\x03":
            return self.stop_reply(StopEvent("interrupted"))
        if pkt == "?":
            return self.stop_reply()
        if pkt.startswith("qSupported"):
            return (f"PacketSize={PACKET_SIZE:x};qXfer:features:read+;qXfer:exec-file:read+;"
                    "vContSupported+;QStartNoAckMode+")
        if pkt == "QStartNoAckMode":
            self.send("OK")
            self.ack = False
            return None
        if pkt.startswith("qXfer:features:read:"):
            annex, _, rng = pkt[len("qXfer:features:read:"):].partition(":")
            if annex != "target.xml":
                return "E00"
            return _xfer_chunk(self.xml, rng)  # type: ignore[return-value]
        if pkt.startswith("qXfer:exec-file:read:"):
            _annex, _, rng = pkt[len("qXfer:exec-file:read:"):].partition(":")
            prog = getattr(dbg.m, "program", None)
            if prog is None:
                return "E01"
            from pathlib import Path
            return _xfer_chunk(str(Path(prog).resolve()).encode(), rng)  # type: ignore[return-value]
        if pkt == "qAttached" or pkt.startswith("qAttached:"):
            return "1"
        if pkt == "qC":
            return f"QC{self._stop_tid():x}"
        if pkt == "qfThreadInfo":
            return "m" + ",".join(f"{t:x}" for t in self._live_tids())
        if pkt == "qsThreadInfo":
            return "l"
        if pkt.startswith("qThreadExtraInfo,"):
            tid = self._parse_tid(pkt.split(",", 1)[1])
            t = dbg.k.tasks.get(tid)
            cpu = self._cpu_of(tid)
            text = (f"{t.comm} tid {t.tid} " + (f"on cpu {cpu.index}" if cpu is not None else t.state.value)
                    if t is not None else "gone")
            return text.encode().hex()
        if pkt.startswith("Hg"):
            tid = self._parse_tid(pkt[2:])
            if tid not in (0, -1) and tid not in self._live_tids():
                return "E01"
            self.g_tid = None if tid in (0, -1) else tid
            self._sve_cache.clear()
            return "OK"
        if pkt.startswith("H"):                 # Hc: all-stop, every thread resumes together
            return "OK"
        if pkt.startswith("T"):
            try:
                return "OK" if self._parse_tid(pkt[1:]) in self._live_tids() else "E01"
            except ValueError:
                return "E01"
        if pkt.startswith("qSymbol"):
            return "OK"
        if pkt.startswith("qRcmd,"):
            return self.monitor(bytes.fromhex(pkt[6:]).decode("utf-8", "replace"))
        if pkt == "g":
            return "".join(self._reg_hex(i) for i in range(len(self.layout)))
        if pkt.startswith("G"):
            data = bytes.fromhex(pkt[1:])
            pos = 0
            for i, (_name, size) in enumerate(self.layout):
                if pos + size > len(data):
                    break
                chunk = data[pos:pos + size]
                pos += size
                cur = self._reg_hex(i)
                if "x" in cur or bytes.fromhex(cur) == chunk:
                    continue                    # unavailable or unchanged: don't rewrite it
                self._write_reg(i, chunk)
            return "OK"
        if pkt.startswith("p"):
            n = int(pkt[1:], 16)
            return self._reg_hex(n) if n < len(self.layout) else "E45"
        if pkt.startswith("P"):
            n_s, _, v = pkt[1:].partition("=")
            n = int(n_s, 16)
            if n >= len(self.layout):
                return "E45"
            self._write_reg(n, bytes.fromhex(v))
            return "OK"
        if pkt.startswith("m"):
            a, _, ln = pkt[1:].partition(",")
            try:
                return bytes(dbg.mm().read(int(a, 16), int(ln, 16), "")).hex()
            except (MemoryFault, ValueError):     # unmapped, or not hex: gdb's E14
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
            except (MemoryFault, ValueError):     # unmapped, or not hex: gdb's E14
                return "E14"
        if pkt.startswith("X"):
            return ""                               # gdb falls back to M
        if pkt[:3] in ("Z0,", "Z1,"):
            addr = int(pkt[3:].split(",")[0], 16)
            if addr not in self.gdb_bps:
                bp = dbg.add_addr_breakpoint(hex(addr))
                self.gdb_bps[addr] = bp.num
            return "OK"
        if pkt[:3] in ("z0,", "z1,"):
            addr = int(pkt[3:].split(",")[0], 16)
            num = self.gdb_bps.pop(addr, None)
            if num is not None and num in dbg.breakpoints:
                dbg.delete_breakpoint(num)
            return "OK"
        if pkt[:3] in ("Z2,", "Z3,", "Z4,", "z2,", "z3,", "z4,"):
            return self._watchpoint(pkt)
        if pkt.startswith("Z") or pkt.startswith("z"):
            return ""
        if pkt == "vCont?":
            return "vCont;c;C;s;S"
        if pkt.startswith("vCont;"):
            actions = [a for a in pkt[6:].split(";") if a]
            for a in actions:
                verb, _, tid_s = a.partition(":")
                if verb[:1] in ("s", "S"):
                    if tid_s:
                        self._focus(tid_s)
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

    def _focus(self, tid_s: str) -> None:
        """vCont;s:TID: step that thread's CPU (a switched-out thread cannot step by itself)."""
        try:
            cpu = self._cpu_of(self._parse_tid(tid_s))
        except ValueError:
            return
        if cpu is not None:
            self.dbg.set_cpu(cpu.index)

    def _watchpoint(self, pkt: str) -> str:
        kind = {"2": "w", "3": "r", "4": "a"}[pkt[1]]
        try:
            a, ln = pkt[3:].split(",")[:2]
            addr, length = int(a, 16), int(ln.split(";")[0], 16)
        except ValueError:
            return "E01"
        key = (kind, addr, length)
        if pkt[0] == "Z":
            if key not in self.gdb_wps:
                self.gdb_wps[key] = self.dbg.add_watchpoint(addr, length, kind).num
            return "OK"
        num = self.gdb_wps.pop(key, None)
        if num is not None and num in self.dbg.breakpoints:
            self.dbg.delete_breakpoint(num)
        return "OK"

    # ---- registers ---------------------------------------------------------------------------------------
    def _sve_state(self, cpu: Any) -> dict[str, Any]:
        st = self._sve_cache.get(cpu.index)
        if st is None:
            st = self._sve_cache[cpu.index] = read_sve(cpu)
        return st

    def _read_value(self, cpu: Any, task: Any, name: str, size: int) -> bytes | None:
        """The register's bytes (little-endian, ``size`` long), or None if unavailable."""
        if cpu is None:                             # switched out: its saved integer registers
            ctx = getattr(task, "ctx", None) or {}
            v: int | None = None
            if name == "pc":
                v = ctx.get("pc")
            elif name == "sp" and "sp" in ctx:
                v = ctx["sp"]
            elif name == "cpsr":
                v = ctx.get("nzcv")
            elif name.startswith("x") and name[1:].isdigit() and int(name[1:]) < len(ctx.get("x", [])):
                v = ctx["x"][int(name[1:])]
            return None if v is None else (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        if self.sve_vl and name[0] in "zpf" and (name[1:].isdigit() or name == "ffr"):
            data = read_sve_register(cpu, name, self._sve_state(cpu))
            return data[:size].ljust(size, b"\0")    # at the configured VL (a task may have changed its own)
        try:
            v = read_register(cpu, name)
        except DebugError:
            return None
        return (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")

    def _reg_hex(self, n: int) -> str:
        name, size = self.layout[n]
        cpu, task = self._selected()
        data = self._read_value(cpu, task, name, size)
        return "xx" * size if data is None else data.hex()

    def _write_reg(self, n: int, data: bytes) -> None:
        name, size = self.layout[n]
        cpu, task = self._selected()
        value = int.from_bytes(data[:size], "little")
        if cpu is None:
            ctx = getattr(task, "ctx", None)
            if ctx is None:
                raise DebugError("no such thread")
            if name == "pc" or name == "sp":
                ctx[name] = value
            elif name.startswith("x") and name[1:].isdigit() and int(name[1:]) < len(ctx.get("x", [])):
                ctx["x"][int(name[1:])] = value
            else:
                raise DebugError(f"{name} of a switched-out thread is not available")
            return
        self._sve_cache.pop(cpu.index, None)
        if self.sve_vl and name[0] in "zp" and name[1:].isdigit() or name == "ffr":
            from emukern.debug.regs import write_sve_register
            cur = len(read_sve_register(cpu, name, read_sve(cpu)))
            write_sve_register(cpu, name, data[:cur].ljust(cur, b"\0"))
            return
        write_register(cpu, name, value)

    def _resume(self, how: str) -> str:
        dbg = self.dbg
        self._sve_cache.clear()
        if dbg.finished:
            return self.stop_reply()
        ev = dbg.step() if how == "step" else dbg.cont()
        self.last_stop = ev
        self.g_tid = None
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
        self._sve_cache.clear()
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
    elf = getattr(dbg.m, "program", None)
    if elf is not None:
        from pathlib import Path
        elf = Path(elf).resolve()
    print(f"emukern gdbserver: listening on {host}:{real_port} ({dbg.arch}, "
          f"{getattr(dbg.m, 'argv', ['?'])[0]}, ELF {elf}); connect with: target remote {host}:{real_port}",
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
    if stub.detach and not dbg.finished:
        print("emukern gdbserver: detached; running the program to its end", file=sys.stderr, flush=True)
        dbg.detach_run()
    elif not stub.done:
        print("emukern gdbserver: gdb went away without detaching; ending", file=sys.stderr, flush=True)
    print("emukern gdbserver: done", file=sys.stderr, flush=True)
    return 0
