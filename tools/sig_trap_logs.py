"""Digests of the signal golden cases (tests/kernel/signal/signal_golden.py) with their trap logs
added: for each case the golden record (JSON summary and signal frames, as sha256) and a sha256
of every trap-log record's text (seq, cpu, tid, time, kind, pc, handler, decision with its notes,
cycles, thread flags).  Run it under two trees and compare the outputs: a change meant to leave
recorded behaviour alone must print the same JSON.

    PYTHONPATH=OLD python tools/sig_trap_logs.py OLD > old.json
    PYTHONPATH=NEW python tools/sig_trap_logs.py NEW > new.json && cmp old.json new.json
"""
from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def main(tree: str) -> int:
    sys.path.insert(0, tree)            # the tree's tests package (its golden case list)
    import tests.kernel.signal.signal_golden as golden
    from emukern.api import Machine
    last: dict[str, Any] = {}
    run = Machine.run

    def logged_run(self: Any) -> Any:
        r = run(self)
        h = hashlib.sha256()
        for rec in self.kernel.trap_log:
            h.update(f"{rec.seq} {rec.cpu} {rec.tid} {rec.time} {rec.kind} {rec.pc} {rec.handler} "
                     f"{rec.decision} {rec.cycles} {rec.tif}\n".encode())
        last["log"] = (h.hexdigest(), len(self.kernel.trap_log))
        return r
    Machine.run = logged_run            # type: ignore[method-assign]
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for name in golden.CASES:
            rec = golden.record(name, Path(d))
            if rec is not None:
                out[name] = {"golden": rec, "trap_log": last["log"]}
    print(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
