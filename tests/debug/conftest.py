"""Fixtures for the debugger tests; shared constants live in debug_testutil (a unique module name,
so other test folders' conftest modules cannot shadow it)."""
from debug_testutil import debug_script  # noqa: F401  (re-exported as a fixture)
