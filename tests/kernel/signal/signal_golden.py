"""Golden record of signal-heavy runs: each case's JSON summary and the bytes of every signal
frame it delivered (read from the user stack when the handler's frame is set up), as sha256
digests.  Recorded before issue 12's speed work so that the faster delivery and rt_sigreturn
paths can be checked to build byte-identical frames and leave every figure unchanged.

    python -m tests.kernel.signal.signal_golden --update     # re-record (only for an intended change)
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from emukern.api import Machine
from emukern.pytest_plugin import GUEST_ASM

DATA = Path(__file__).parent / "data" / "signal_golden.json"
CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
C_PARTS = ["dispositions", "masks", "nested", "altstack", "sync", "eintr", "children", "threads",
           "posix-timer", "die"]

# name -> (Machine options, program: a guest_asm path or ("c", arch), argv)
CASES: dict[str, tuple[dict[str, Any], Any, list[str]]] = {}
for _arch, _sub in (("riscv64", "riscv"), ("arm64", "arm64")):
    CASES[f"{_arch}-sig_loop"] = ({"arch": _arch}, f"{_sub}/sig_loop.S", ["40"])
for _pol in ("eager", "deferred"):
    for _knob in (0, 1):
        CASES[f"riscv64-sig_vstate-{_pol}-discard{_knob}"] = (
            {"arch": "riscv64", "vlen": 256, "policies": {"riscv-discard": _pol},
             "sysctls": {"abi.riscv_v_vstate_discard": str(_knob)}}, "riscv/sig_vstate.S", [])
for _pol in ("legacy", "p1", "p1+p2"):
    for _vl in (512, 2048):
        CASES[f"arm64-sig_sve-{_pol}-vl{_vl}"] = (
            {"arch": "arm64", "sve_vl": _vl, "sve_vls": sorted({128, 256, 512, _vl}),
             "policies": {"arm64-sve": _pol}}, "arm64/sig_sve.S", [])
for _arch in CC:
    for _part in C_PARTS:
        CASES[f"{_arch}-signals.c-{_part}"] = ({}, ("c", _arch), [_part])


def build_c(arch: str, out_dir: Path) -> Path | None:
    cc = CC[arch]
    if shutil.which(cc) is None:
        return None
    exe = out_dir / f"signals-{arch}"
    if not exe.exists():
        subprocess.run([cc, "-O2", "-static", "-o", str(exe), str(GUEST_ASM / "c" / "signals.c"),
                        "-lpthread"], check=True, capture_output=True)
    return exe


def _fixed_copy(elf: Path) -> Path:
    data = elf.read_bytes()
    d = Path("/tmp/emukern-signal-golden")
    d.mkdir(exist_ok=True)
    dst = d / f"{hashlib.sha256(data).hexdigest()[:16]}.elf"
    if not dst.exists():
        tmp = d / f"{dst.name}.{os.getpid()}"
        tmp.write_bytes(data)
        os.replace(tmp, dst)             # atomic: parallel test workers may race here
    return dst


def record(name: str, build_dir: Path) -> dict[str, Any] | None:
    """{json, frames, n_frames} digests of one case; None when its compiler is missing."""
    opts, prog, argv = CASES[name]
    if isinstance(prog, tuple):
        path = build_c(prog[1], build_dir)
        if path is None:
            return None
    else:
        path = GUEST_ASM / prog
    # the round-robin queue the records were made with: they pin the signal paths' frames and
    # cycles, not the run-queue policy (the fair class reorders the threads case's switches);
    # likewise without the vDSO they were made before: under --vdso auto the C cases get it, whose
    # auxv entry moves the stack 16 bytes and whose clock_gettime adds a call (kernel/vdso)
    m = Machine(**{"sched": "rr", "vdso": "off", **opts}).load(path, argv)
    # the same argv[0] wherever the checkout or the build directory is (its length moves the stack)
    from emukern.kernel.kernel import Kernel
    # and the same file name (execve copies it onto the stack): a fixed path named by content
    m.kernel = Kernel(m.config)
    m.kernel.load(str(_fixed_copy(Path(m.program))), [f"/golden/{Path(path).name}"] + argv,
                  ["PATH=/bin", "EMUKERN=1"])
    k = m.kernel
    frames: list[bytes] = []

    def on_signal(cpu: Any, task: Any, info: Any) -> None:
        # the frame only (above it lies the caller's stack, argv strings with the build path)
        if k.config.arch == "riscv64":
            from emukern.kernel.arch.riscv.signal import get_rt_frame_size
            sp, n = cpu.reg(2), get_rt_frame_size(k, cpu, False)
        else:
            from emukern.kernel.arch.arm64.signal import FRAME_RECORD, setup_sigframe_layout
            lay, _ = setup_sigframe_layout(k, task.thread, bool(task.sigstate.fault_code), False)
            sp, n = cpu.sp, lay.frame_size + FRAME_RECORD
        frames.append(sp.to_bytes(8, "little") + task.mm.read(sp, n))
    k.signal_listeners.append(on_signal)
    r = m.run()
    summary = r.to_json()
    # instructions retired by the CPUs (user + kernel stubs) are kept apart: an FPSIMD save done
    # through the register file (fpsimd_save_state_regs) charges the stub's cycles without
    # running its 21 instructions, so this count may only go down; everything else is equal
    insns = [c.pop("insns") for c in summary["cpus"]]
    js = json.dumps(summary, sort_keys=True).encode()
    h = hashlib.sha256()
    for f in frames:
        h.update(len(f).to_bytes(8, "little") + f)
    return {"json": hashlib.sha256(js).hexdigest(), "frames": h.hexdigest(), "n_frames": len(frames),
            "exit_status": r.exit_status, "insns": insns}


def main(argv: list[str]) -> int:
    if "--update" not in argv:
        print(__doc__)
        return 2
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for name in CASES:
            rec = record(name, Path(d))
            if rec is not None:
                out[name] = rec
                print(name, rec)
    DATA.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
