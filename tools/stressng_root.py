"""Build the guest root the stress-ng suite runs from (Debian trixie's stress-ng and the shared
libraries it links), without running anything; the suite builds it itself on first use.

    python tools/stressng_root.py arm64|riscv64      # -> ~/.cache/emukern/test-roots/stress-ng-<arch>
    emukern selftests --suite stress-ng --arch arm64 --only fork
    emukern run --root R --root-rw -- R/usr/bin/stress-ng --verify --seed 1 --fork 1 --fork-ops 5 -t 20

The builder lives in emukern/selftests/stressng.py (build_root).
"""
from __future__ import annotations

import sys

from emukern.selftests.stressng import build_root

if __name__ == "__main__":
    print(build_root(sys.argv[1] if len(sys.argv) > 1 else "arm64",
                     progress=lambda s: print(s, file=sys.stderr)))
