"""pytest configuration for the RVV unit tests: make rvv_helpers (and emukern) importable."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
_root = os.path.dirname(os.path.dirname(os.path.dirname(_here)))
if _root not in sys.path:
    sys.path.append(_root)
