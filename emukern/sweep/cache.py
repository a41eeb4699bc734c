"""The content-addressed result cache.

A point's key is the SHA-256 of everything its result depends on — and nothing else:

* the program's bytes (the ELF that runs: a .S is assembled first, so its includes count),
* the guest arguments and every resolved machine option (:class:`emukern.config.MachineConfig`),
* the resolved cost table (defaults, ``--cost-file`` and ``--cost`` applied),
* emukern itself: its version and a digest of its source files (a changed model is a new key).

Host time is not part of a result (``RunResult.to_json`` leaves it out), so a cached answer is
byte-for-byte the answer a new run would give.  Entries are JSON files named by key, written
atomically, so several workers — or machines sharing the directory — can fill one cache.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    base = os.environ.get("EMUKERN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "emukern")
    return Path(base) / "results"


@lru_cache(maxsize=1)
def emukern_identity() -> str:
    """emukern's version plus a digest of its Python and C sources."""
    import emukern
    root = Path(emukern.__file__).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".c") and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    version = getattr(emukern, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v
            version = _v("emukern")
        except Exception:           # not installed as a distribution (PYTHONPATH checkout)
            version = "0+unknown"
    return f"{version}+{h.hexdigest()[:16]}"


def config_fingerprint(cfg: Any) -> dict[str, Any]:
    """Every MachineConfig field, JSON-able (stdin bytes as their digest)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        if isinstance(v, bytes):
            v = "sha256:" + hashlib.sha256(v).hexdigest()
        elif isinstance(v, dict):
            v = {str(k): (dict(sorted(x.items())) if isinstance(x, dict) else x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
        elif isinstance(v, tuple):
            v = list(v)
        out[f.name] = v
    return out


def resolved_costs(cfg: Any) -> dict[str, int]:
    from emukern.kernel.cost import CostTable
    ct = CostTable()
    if cfg.cost_file:
        ct.load_file(cfg.cost_file)
    for k, v in cfg.costs.items():
        ct.override(k, v)
    return dict(sorted(ct.values.items()))


def point_key(elf: bytes, argv: list[str], cfg: Any) -> str:
    blob = json.dumps({"elf": hashlib.sha256(elf).hexdigest(), "argv": list(argv),
                       "config": config_fingerprint(cfg), "costs": resolved_costs(cfg),
                       "emukern": emukern_identity()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResultCache:
    """JSON results by key in one directory (``None`` directory: no caching)."""

    def __init__(self, directory: Path | None) -> None:
        self.dir = directory

    def get(self, key: str) -> dict[str, Any] | None:
        if self.dir is None:
            return None
        try:
            return json.loads((self.dir / f"{key[:2]}/{key}.json").read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: dict[str, Any]) -> None:
        if self.dir is None:
            return
        d = self.dir / key[:2]
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, sort_keys=True)
        os.replace(tmp, d / f"{key}.json")
