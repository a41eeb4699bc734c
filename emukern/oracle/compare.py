"""emukern against the real kernel: the same program, the matching kernel profile, line by line.

What is compared: the bytes a program writes to stdout and stderr, and its exit status.  Output
that is text is compared line by line; output that is not (register dumps) is cut into rows of
8 bytes, shown as hex and as a little-endian 64-bit value, and compared row by row.

What is NOT compared: timing.  QEMU's TCG has no cycle model (its instruction counts and clocks
say nothing about a real CPU), so `compare` is about the ABI and the values only.

emukern runs with the policies of the real kernel's profile (emukern.oracle.kernels).  A real
kernel has one behaviour per change, so a --policy that disagrees with it is refused.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from emukern.config import MachineConfig
from emukern.errors import ConfigError
from emukern.kernel.policies import SWITCHES
from emukern.oracle import TIMING_NOTE, OracleError
from emukern.oracle.console import ProgramRun
from emukern.oracle.kernels import KernelProfile
from emukern.oracle.qemu import sve_vls


# the patch each switch models, by its subject and author, for messages
PATCHES = {
    "riscv-vstate-sysctl": '"riscv: Add sysctl to control discard of VS state" by Drew Fustini',
    "riscv-discard": '"riscv: vector: treat VS_INITIAL as discard" by Andy Chiu',
    "arm64-mrs": '"arm64: rework EL0 MRS emulation" by Mark Rutland',
    "arm64-sve": '"arm64/sve: Performance improvements with SVE state saving" by Mark Brown',
}


def check_policies(p: KernelProfile, requested: dict[str, str]) -> dict[str, str]:
    """The profile's policies; a requested value the real kernel does not have is refused."""
    for name, value in requested.items():
        sw = SWITCHES.get(name)
        if sw is None:
            raise ConfigError(f"unknown policy {name!r}", hint="known policies: " + ", ".join(SWITCHES))
        if sw.arch != p.arch:
            raise ConfigError(f"policy {name} is about {sw.arch}; {p.name} is an {p.arch} kernel",
                              hint="drop it: compare runs each kernel with the one behaviour it has")
        have = p.policies.get(name)
        if have is not None and value != have:
            contains = "contains" if _contains(name, have) else "does not contain"
            raise ConfigError(
                f"--policy {name}={value}: the real kernel {p.name} (Linux {p.linux}) only has "
                f"{name}={have} (it {contains} {PATCHES.get(name, name)})",
                hint=f"drop --policy, or use `emukern run --policy {name}={value}` to try the other "
                     "variant in emukern alone")
    return dict(p.policies)


def _contains(name: str, value: str) -> bool:
    before = {"riscv-vstate-sysctl": "absent", "riscv-discard": "eager",
              "arm64-mrs": "hook-list", "arm64-sve": "legacy"}
    return value != before.get(name)


def emukern_config(p: KernelProfile, cpus: int = 1, vlen: int = 256, sve_vl: int = 256,
                   sysctls: dict[str, str] | None = None, max_insns: int | None = 2_000_000_000
                   ) -> MachineConfig:
    """The emukern machine that matches what qemu-system runs the real kernel on."""
    cfg = MachineConfig(arch=p.arch, cpus=cpus, policies=dict(p.policies), kernel=p.emukern_kernel,
                        sysctls=dict(sysctls or {}), max_insns=max_insns)
    if p.arch == "arm64":
        cfg.sve_vl = sve_vl
        cfg.sve_vls = sve_vls(sve_vl)
        cfg.idst = True          # QEMU's "max" CPU implements FEAT_IDST: ID reads trap as EC 0x18
    else:
        cfg.vlen = vlen
    return cfg


def _is_text(b: bytes) -> bool:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch in "\n\t\r" for ch in s)


def render(b: bytes, as_text: bool) -> list[str]:
    """Lines to compare: text lines, or rows of 8 bytes for binary output."""
    if as_text:
        return b.decode("utf-8").splitlines()
    rows = []
    for off in range(0, len(b), 8):
        chunk = b[off:off + 8]
        val = f"  {int.from_bytes(chunk, 'little'):#018x}" if len(chunk) == 8 else ""
        rows.append(f"{off:#06x}: {chunk.hex(' ')}{val}")
    return rows


START_HINT = ("the program must be a static ELF for the kernel's architecture; a dynamic one needs "
              "its interpreter and libraries in --root")


def explain_errors(errors: list[str]) -> str:
    import errno as _errno
    import os as _os
    out = []
    for e in errors:
        parts = e.split()
        if len(parts) == 2 and parts[1].isdigit():
            code = int(parts[1])
            out.append(f"{parts[0]}: {_errno.errorcode.get(code, code)} ({_os.strerror(code)})")
        else:
            out.append(e)
    return "; ".join(out)


@dataclass
class StreamDiff:
    name: str
    emukern: list[str]
    linux: list[str]
    agree: int = 0
    total: int = 0
    diff: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return self.emukern == self.linux


def diff_stream(name: str, ours: bytes, theirs: bytes) -> StreamDiff:
    as_text = _is_text(ours) and _is_text(theirs)
    a, b = render(ours, as_text), render(theirs, as_text)
    d = StreamDiff(name, a, b)
    d.total = max(len(a), len(b))
    d.agree = sum(1 for x, y in zip(a, b) if x == y)
    d.diff = list(difflib.unified_diff(a, b, fromfile=f"emukern {name}", tofile=f"linux {name}",
                                       lineterm="", n=2))
    return d


@dataclass
class Comparison:
    profile: KernelProfile
    release: str
    program: str
    emukern_status: int
    linux_status: int | None
    streams: list[StreamDiff]
    linux_timed_out: bool = False

    @property
    def agree(self) -> bool:
        return self.emukern_status == self.linux_status and all(s.equal for s in self.streams)

    def report(self) -> str:
        out = [f"compare {self.program}: emukern (policies "
               + ", ".join(f"{k}={v}" for k, v in sorted(self.profile.policies.items()))
               + f") vs Linux {self.release} ({self.profile.name}) under {self.profile.qemu}"]
        for s in self.streams:
            if s.total == 0:
                out.append(f"  {s.name}: both empty")
                continue
            out.append(f"  {s.name}: {s.agree}/{s.total} lines agree" + ("" if s.equal else "  DIFFERENT"))
        ls = "timed out" if self.linux_timed_out else str(self.linux_status)
        out.append(f"  exit status: emukern {self.emukern_status}, linux {ls}"
                   + ("" if self.emukern_status == self.linux_status else "  DIFFERENT"))
        for s in self.streams:
            if not s.equal:
                out.append("")
                out.extend(s.diff)
        out.append("")
        out.append(("AGREE" if self.agree else "DISAGREE") + f" ({TIMING_NOTE})")
        return "\n".join(out)


def compare_runs(p: KernelProfile, release: str, program: str, emu_stdout: bytes, emu_stderr: bytes,
                 emu_status: int, real: ProgramRun) -> Comparison:
    if real.errors:
        raise OracleError(f"the runner could not start {program} under the real kernel: "
                          + explain_errors(real.errors), hint=START_HINT)
    return Comparison(p, release, program, emu_status, real.exit_status,
                      [diff_stream("stdout", emu_stdout, real.stdout),
                       diff_stream("stderr", emu_stderr, real.stderr)], real.timed_out)


def run_emukern(cfg: MachineConfig, prog: Path, args: list[str]) -> tuple[bytes, bytes, int]:
    from emukern.api import Machine
    m = Machine(cfg)
    m.explicit_arch = cfg.arch
    m.load(prog, args)
    r = m.run()
    return r.stdout, r.stderr, r.exit_status
