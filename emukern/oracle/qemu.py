"""Boot a real kernel under qemu-system with the CPU options that match an emukern machine.

arm64:   qemu-system-aarch64 -M virt -cpu max,sve<VL>=on      (SVE VLs: the powers of two up to VL)
riscv64: qemu-system-riscv64 -M virt -cpu rv64,v=true,vlen=<VLEN>,vext_spec=v1.0,<RISCV_OFF> -bios default
         (OpenSBI as the M-mode firmware; the kernel runs in S-mode)

The serial console is the board's UART (ttyAMA0 / ttyS0); ``panic=-1`` and ``-no-reboot`` turn
a kernel panic into qemu exiting, and the runner powers off when it is done, so a boot always
ends: by itself, or at the timeout, when qemu is killed and the console tail is shown.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from emukern.oracle import OracleError
from emukern.oracle.console import ConsoleLog, parse_console
from emukern.oracle.initramfs import Program, build_initramfs
from emukern.oracle.kernels import KernelImage, check_bootable

QEMU_PKG = {"qemu-system-aarch64": "qemu-system-arm", "qemu-system-riscv64": "qemu-system-misc"}
RISCV_VLENS = (128, 256, 512, 1024)          # what QEMU 7.2's RVV implementation accepts
RISCV_OFF = "h=false,Zihintpause=false,zba=false,zbb=false,zbc=false,zbs=false,sstc=false"
BOOT_ALLOWANCE = 300                         # seconds for firmware + kernel boot under TCG


@dataclass
class BootResult:
    log: ConsoleLog
    seconds: float                           # wall time of the whole qemu run (boot + programs)
    command: list[str]
    returncode: int | None


def qemu_available(arch: str) -> bool:
    return shutil.which("qemu-system-aarch64" if arch == "arm64" else "qemu-system-riscv64") is not None


def cpu_option(arch: str, vlen: int = 256, sve_vl: int = 256) -> str:
    if arch == "arm64":
        if sve_vl % 128 or not 128 <= sve_vl <= 2048:
            raise OracleError(f"--sve-vl {sve_vl} is not an SVE vector length",
                              hint="use a multiple of 128 between 128 and 2048")
        return f"max,sve{sve_vl}=on"
    if vlen not in RISCV_VLENS:
        raise OracleError(f"--vlen {vlen}: QEMU's RISC-V vector unit supports VLEN "
                          + ", ".join(map(str, RISCV_VLENS)), hint="pick one of those")
    # QEMU 7.2's rv64 also has H, Zihintpause, Zba/Zbb/Zbc/Zbs and Sstc, which emukern's hart
    # (Unicorn's RV64GC: QEMU 5.0, before the bit-manipulation extensions) lacks: turned off, so
    # the kernel sees the same ISA in the device tree (and prints the same /proc/cpuinfo "isa")
    return f"rv64,v=true,vlen={vlen},vext_spec=v1.0,{RISCV_OFF}"


def sve_vls(sve_vl: int) -> tuple[int, ...]:
    """The vector lengths QEMU's ``sve<VL>=on`` enables: every power of two below VL, and VL."""
    out = [v for v in (128, 256, 512, 1024, 2048) if v < sve_vl]
    return tuple(out + [sve_vl])


def qemu_command(img: KernelImage, initrd: Path, cpus: int = 1, vlen: int = 256,
                 sve_vl: int = 256, memory_mb: int = 1024) -> list[str]:
    p = img.profile
    exe = shutil.which(p.qemu)
    if exe is None:
        raise OracleError(f"{p.qemu} not found: it runs the real {p.arch} kernel",
                          hint=f"apt-get install {QEMU_PKG[p.qemu]} (tools/setup.sh installs it)")
    if not 1 <= cpus <= 64:
        raise OracleError(f"--cpus must be between 1 and 64, got {cpus}")
    cmd = [exe, "-M", "virt", "-cpu", cpu_option(p.arch, vlen, sve_vl), "-smp", str(cpus),
           "-m", f"{memory_mb}M", "-nodefaults", "-display", "none", "-serial", "stdio",
           "-no-reboot", "-kernel", str(img.image), "-initrd", str(initrd),
           "-append", f"console={p.console} panic=-1 quiet"]
    if p.arch == "riscv64":
        cmd[3:3] = ["-bios", "default"]
    return cmd


def boot(img: KernelImage, programs: list[Program], cpus: int = 1, vlen: int = 256, sve_vl: int = 256,
         root: Path | None = None, timeout: float | None = None,
         sysctls: dict[str, str] | None = None, files: dict[str, Path] | None = None) -> BootResult:
    """Boot ``img`` once and run ``programs`` in order under it; the console, parsed."""
    arch = img.profile.arch
    cpu_option(arch, vlen, sve_vl)          # bad CPU options fail before anything is built
    check_bootable(img)
    setup: dict[str, str] = {}
    if arch == "arm64":
        # Linux's default SVE VL is 64 bytes (or the largest below); emukern's --sve-vl sets the
        # default itself, so the runner writes the same default before any program starts
        setup["/proc/sys/abi/sve_default_vector_length"] = str(sve_vl // 8)
    for key, value in (sysctls or {}).items():
        # the same knob emukern's --sysctl sets, written through /proc/sys before any program
        setup["/proc/sys/" + key.replace(".", "/")] = value
    data = build_initramfs(arch, programs, setup=setup, root=root, files=files)
    limit = timeout if timeout is not None else BOOT_ALLOWANCE + sum(p.timeout for p in programs)
    with tempfile.TemporaryDirectory(prefix="emukern-linux-") as tmp:
        initrd = Path(tmp) / "initrd.cpio"
        initrd.write_bytes(data)
        cmd = qemu_command(img, initrd, cpus=cpus, vlen=vlen, sve_vl=sve_vl)
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        except OSError as exc:
            raise OracleError(f"cannot start {cmd[0]}: {exc.strerror}") from None
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            log = parse_console(out)
            raise OracleError(f"the real kernel did not finish within {limit:.0f} s "
                              f"({_progress(log, programs)}); console tail:\n{_tail(log, out)}",
                              hint="a guest that never exits is killed after its own time limit "
                                   "(--timeout); is the kernel hanging at boot?") from None
        finally:
            if proc.poll() is None:      # interrupted (Ctrl-C): never leave a qemu behind
                proc.kill()
                proc.wait()
        seconds = time.monotonic() - t0
    log = parse_console(out)
    if log.release is None:
        msg = err.decode(errors="replace").strip()
        if proc.returncode != 0 and msg:
            raise OracleError(f"{Path(cmd[0]).name} failed (exit {proc.returncode}): {msg[-1500:]}",
                              hint="check the CPU options (--vlen / --sve-vl / --cpus)")
        raise OracleError("the kernel stopped before emukern's /init ran (an early panic?); "
                          f"console tail:\n{_tail(log, out)}",
                          hint=f"the image is {img.image}; try another --kernel")
    if log.setup_errors:
        raise OracleError("the real kernel refused a setting: " + "; ".join(log.setup_errors)
                          + " (path, errno)", hint="that /proc/sys file does not exist in this kernel: "
                          "drop the --sysctl (or --sve-vl the CPU cannot have)")
    if not log.done:
        why = (f"the runner (/init) died, exitcode={log.init_exitcode:#x}"
               if log.init_exitcode is not None else "the console ended early")
        raise OracleError(f"{why} ({_progress(log, programs)}); console tail:\n{_tail(log, out)}",
                          hint="this is a bug in emukern's runner or a kernel crash; the console tail shows which")
    return BootResult(log, seconds, cmd, proc.returncode)


def _progress(log: ConsoleLog, programs: list[Program]) -> str:
    if log.release is None:
        return "no sign of /init yet"
    done = sum(1 for r in log.runs.values() if r.exit_status is not None)
    return f"Linux {log.release} booted, {done} of {len(programs)} programs finished"


def _tail(log: ConsoleLog, raw: bytes, n: int = 20) -> str:
    lines = log.kernel_lines[-n:]
    # show the console as a user would see it, but never raw binary
    return "\n".join("  | " + "".join(ch if ch.isprintable() else "?" for ch in ln) for ln in lines) \
        or "  | (nothing)"
