"""The `real_kernel` pytest fixture's object: run guests under a real kernel, compare with emukern.

    @pytest.mark.linux
    def test_my_guest(real_kernel):
        c = real_kernel.compare("guests/my_guest.S", kernel="debian-13-riscv64")
        assert c.agree, c.report()

Every method skips the test (pytest.skip) when the real kernel cannot be had here: no
qemu-system, no cross compiler for the runner, no way to download the kernel package.  A kernel
that boots but misbehaves (a panic, a hang) fails the test instead.

Several programs can share one boot (``run_many``); answers are remembered for the session and,
keyed by the exact initramfs bytes and qemu command line, in ~/.cache/emukern/oracle/runs/ (so
parallel pytest workers boot each batch once; ``EMUKERN_ORACLE_CACHE=0`` turns the disk cache
off).  Only the real kernel's answer is cached; the emukern side always runs.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from emukern.debian import cache_root
from emukern.oracle import OracleError
from emukern.oracle.compare import Comparison, check_policies, compare_runs, emukern_config, run_emukern
from emukern.oracle.console import ProgramRun
from emukern.oracle.initramfs import CROSS_GCC, Program
from emukern.oracle.kernels import KernelProfile, fetch_kernel, profile
from emukern.oracle.qemu import QEMU_PKG, boot


class Unavailable(OracleError):
    """The real kernel cannot be had on this machine (a reason to skip, not to fail)."""


@dataclass
class Answer:
    release: str
    runs: list[ProgramRun]
    seconds: float               # wall time of the boot that produced it (0 when from the cache)
    cached: bool = False


def _resolve(program: str | Path, arch: str | None) -> tuple[Path, str]:
    from emukern.api import elf_arch, resolve_program
    prog, src_arch = resolve_program(program, arch)
    a = src_arch or elf_arch(prog) or arch
    if a is None:
        raise OracleError(f"cannot tell the architecture of {program}")
    return prog, a


class RealKernel:
    def __init__(self, disk_cache: bool | None = None) -> None:
        self.disk_cache = (os.environ.get("EMUKERN_ORACLE_CACHE", "1") != "0") if disk_cache is None else disk_cache
        self._memo: dict[str, Answer] = {}
        self.boots: list[tuple[str, float]] = []     # (kernel, seconds) of every real boot

    # ---- availability --------------------------------------------------------------------------
    def unavailable(self, p: KernelProfile) -> str | None:
        """Why ``p`` cannot be booted here (None when it can, as far as tools go)."""
        if shutil.which(p.qemu) is None:
            return f"{p.qemu} not installed (apt-get install {QEMU_PKG[p.qemu]})"
        if shutil.which(CROSS_GCC[p.arch]) is None:
            return f"{CROSS_GCC[p.arch]} not installed (it builds the runner /init)"
        return None

    def _image(self, p: KernelProfile) -> Any:
        why = self.unavailable(p)
        if why:
            raise Unavailable(why)
        try:
            return fetch_kernel(p)
        except OracleError as exc:
            if exc.message.startswith(("cannot fetch", "cannot unpack")):   # no archive, no dpkg-deb
                raise Unavailable(exc.message, hint=exc.hint) from None
            raise

    # ---- running -------------------------------------------------------------------------------
    def run_many(self, programs: Sequence[tuple[str | Path, Sequence[str]]], kernel: str | None = None,
                 arch: str | None = None, vlen: int = 256, sve_vl: int = 256, cpus: int = 1,
                 timeout: int = 60, sysctls: dict[str, str] | None = None) -> Answer:
        """Boot once and run every (program, args) in order (``sysctls`` written to /proc/sys first)."""
        resolved = [_resolve(prog, arch) for prog, _ in programs]
        arches = {a for _, a in resolved}
        if len(arches) != 1:
            raise OracleError("one boot runs programs of one architecture", hint=f"got {sorted(arches)}")
        p = profile(kernel, arches.pop())
        progs = [Program(elf, list(args), timeout=timeout, label=str(src))
                 for (elf, _), (src, args) in zip(resolved, programs)]
        key = self._key(p, progs, vlen, sve_vl, cpus, sysctls)
        if key in self._memo:
            return self._memo[key]
        img = self._image(p)
        ans = self._cached_boot(key, lambda: boot(img, progs, cpus=cpus, vlen=vlen, sve_vl=sve_vl,
                                                  sysctls=sysctls or None), p)
        self._memo[key] = ans
        return ans

    def run(self, program: str | Path, args: Sequence[str] = (), **kw: Any) -> ProgramRun:
        return self.run_many([(program, args)], **kw).runs[0]

    def compare(self, program: str | Path, args: Sequence[str] = (), kernel: str | None = None,
                arch: str | None = None, vlen: int = 256, sve_vl: int = 256, cpus: int = 1,
                timeout: int = 60, policies: dict[str, str] | None = None, batch: Sequence[tuple[str | Path, Sequence[str]]] = (),
                sysctls: dict[str, str] | None = None) -> Comparison:
        """``program`` under emukern (the profile's policies) and under the real kernel.

        ``batch``: the other programs of the same boot (so that a suite boots once per kernel)."""
        prog, a = _resolve(program, arch)
        p = profile(kernel, a)
        check_policies(p, policies or {})
        progs = list(batch) or [(program, args)]
        if (program, tuple(args)) not in [(x, tuple(y)) for x, y in progs]:
            progs.append((program, args))
        ans = self.run_many(progs, kernel=p.name, vlen=vlen, sve_vl=sve_vl, cpus=cpus, timeout=timeout,
                            sysctls=sysctls)
        real = ans.runs[[(x, tuple(y)) for x, y in progs].index((program, tuple(args)))]
        cfg = emukern_config(p, cpus=cpus, vlen=vlen, sve_vl=sve_vl, sysctls=sysctls)
        out, err, status = run_emukern(cfg, prog, list(args))
        return compare_runs(p, ans.release, str(program), out, err, status, real)

    # ---- the cache -----------------------------------------------------------------------------
    @staticmethod
    def _key(p: KernelProfile, progs: list[Program], vlen: int, sve_vl: int, cpus: int,
             sysctls: dict[str, str] | None = None) -> str:
        from emukern.oracle.initramfs import RUNNER_SRC
        from emukern.oracle.qemu import cpu_option
        h = hashlib.sha256()
        h.update(json.dumps([p.name, cpu_option(p.arch, vlen, sve_vl), cpus,
                             [[hashlib.sha256(x.elf.read_bytes()).hexdigest(), x.elf.name, x.args, x.timeout]
                              for x in progs]]).encode())
        if sysctls:                  # (absent from the key without them: older cached answers stay valid)
            h.update(json.dumps(sorted(sysctls.items())).encode())
        h.update(RUNNER_SRC.read_bytes())
        return h.hexdigest()[:32]

    def _cached_boot(self, key: str, do_boot: Any, p: KernelProfile) -> Answer:
        if not self.disk_cache:
            return self._fresh(do_boot, p)
        d = cache_root() / "oracle" / "runs"
        d.mkdir(parents=True, exist_ok=True)
        # the image's package version is part of the answer's identity too
        from emukern.oracle.kernels import _cached
        img = _cached(p)
        path = d / f"{p.name}-{img.version if img else 'x'}-{key}.json"
        with open(d / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)        # a parallel worker booting the same batch waits
            if path.exists():
                try:
                    return _load(path)
                except (OSError, ValueError, KeyError):
                    pass
            ans = self._fresh(do_boot, p)
            path.write_text(json.dumps(_dump(ans)) + "\n")
            return ans

    def _fresh(self, do_boot: Any, p: KernelProfile) -> Answer:
        res = do_boot()
        n = len(res.log.runs)
        runs = [res.log.runs.get(i, ProgramRun(i)) for i in range(n)]
        self.boots.append((p.name, res.seconds))
        return Answer(res.log.release or "?", runs, res.seconds)


def _dump(a: Answer) -> dict[str, Any]:
    return {"release": a.release, "seconds": a.seconds,
            "runs": [{"stdout": r.stdout.hex(), "stderr": r.stderr.hex(), "exit_status": r.exit_status,
                      "timed_out": r.timed_out, "errors": r.errors,
                      "stopped": r.stopped, "signal": r.signal} for r in a.runs]}


def _load(path: Path) -> Answer:
    d = json.loads(path.read_text())
    runs = [ProgramRun(i, bytes.fromhex(r["stdout"]), bytes.fromhex(r["stderr"]), r["exit_status"],
                       r["timed_out"], list(r["errors"]), r.get("signal", 0), r.get("stopped", 0)) for i, r in enumerate(d["runs"])]
    return Answer(d["release"], runs, 0.0, cached=True)
