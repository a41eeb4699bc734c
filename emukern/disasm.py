"""Disassembly for traces and error messages (capstone; never raises on garbage bytes).

RISC-V vector instructions, which capstone 5 does not decode, are handed to
``emukern.machine.rvv.disasm(word)`` when that module is available.  Anything nobody can
decode is shown as ``.word 0x...`` (``.half`` for a 16-bit RISC-V parcel, ``.byte`` for a
trailing fragment).
"""
from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["disasm", "disasm_one"]

_cs_cache: dict[str, Any] = {}
_cs_lock = threading.Lock()
_ARCH_ALIASES = {"riscv64": "riscv64", "riscv": "riscv64", "rv64": "riscv64",
                 "arm64": "arm64", "aarch64": "arm64"}


def _capstone(arch: str) -> Any | None:
    with _cs_lock:
        if arch in _cs_cache:
            return _cs_cache[arch]
        cs = None
        try:
            import capstone

            if arch == "riscv64":
                cs = capstone.Cs(capstone.CS_ARCH_RISCV,
                                 capstone.CS_MODE_RISCV64 | capstone.CS_MODE_RISCVC)
            else:
                arm64 = getattr(capstone, "CS_ARCH_ARM64", None)
                if arm64 is None:  # capstone 6 renamed it
                    arm64 = capstone.CS_ARCH_AARCH64
                cs = capstone.Cs(arm64, capstone.CS_MODE_ARM)
        except Exception:
            cs = None
        _cs_cache[arch] = cs
        return cs


def _rvv_disasm() -> Callable[[int], Any] | None:
    try:
        from emukern.machine import rvv  # type: ignore[attr-defined]
    except Exception:
        return None
    fn = getattr(rvv, "disasm", None)
    return fn if callable(fn) else None


def _one_capstone(cs: Any, chunk: bytes, addr: int) -> tuple[int, str] | None:
    if cs is None:
        return None
    try:
        for ins in cs.disasm(chunk, addr, 1):
            text = f"{ins.mnemonic} {ins.op_str}".strip()
            return ins.size, text
    except Exception:
        return None
    return None


def _fallback_rv(word: int) -> str | None:
    fn = _rvv_disasm()
    if fn is None:
        return None
    try:
        r = fn(word)
    except Exception:
        return None
    return r if isinstance(r, str) and r else None


def disasm(arch: str, code: bytes, addr: int, count: int = 1) -> list[tuple[int, int, str]]:
    """Decode up to ``count`` instructions from ``code`` at ``addr``: ``[(addr, size, text)]``.

    Stops early when ``code`` runs out.  Undecodable words become ``.word 0x...`` entries, so
    every byte consumed is accounted for.
    """
    out: list[tuple[int, int, str]] = []
    try:
        a = _ARCH_ALIASES.get(str(arch).lower(), "")
        code = bytes(code)
        cs = _capstone(a) if a else None
        off = 0
        n = len(code)
        while len(out) < count and off < n:
            pc = addr + off
            if a == "riscv64":
                lo = code[off]
                size = 4 if (lo & 3) == 3 else 2
                if off + size > n:
                    out.append((pc, n - off, ".byte " + ", ".join(
                        f"0x{b:02x}" for b in code[off:])))
                    break
                got = _one_capstone(cs, code[off:off + size], pc)
                if got is None or got[0] != size:
                    word = int.from_bytes(code[off:off + size], "little")
                    text = _fallback_rv(word) if size == 4 else None
                    if text is None:
                        text = f".word {word:#010x}" if size == 4 else f".half {word:#06x}"
                    got = (size, text)
            else:
                size = 4
                if off + size > n:
                    out.append((pc, n - off, ".byte " + ", ".join(
                        f"0x{b:02x}" for b in code[off:])))
                    break
                got = _one_capstone(cs, code[off:off + 4], pc)
                if got is None:
                    word = int.from_bytes(code[off:off + 4], "little")
                    got = (4, f".word {word:#010x}")
            out.append((pc, got[0], got[1]))
            off += got[0]
    except Exception:  # never raise on garbage
        pass
    return out


def disasm_one(arch: str, code: bytes, addr: int) -> str:
    """Text of the single instruction at the start of ``code`` (``"(no bytes)"`` if empty)."""
    r = disasm(arch, code, addr, 1)
    if not r:
        return "(no bytes)" if not code else ".byte " + ", ".join(f"0x{b:02x}" for b in code)
    return r[0][2]
