"""Suite-wide settings.

Hypothesis runs derandomized by default so CI is repeatable (the same examples every run);
``HYPOTHESIS_PROFILE=fuzz`` explores new random examples (and more of them) when hunting bugs.
"""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", derandomize=False, deadline=None, max_examples=2000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


import pytest  # noqa: E402

from emukern.kernel.kernel import Kernel  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "warn_ok: the test provokes a kernel WARN_ON on purpose")


@pytest.fixture(autouse=True)
def _no_kernel_warnings(request, monkeypatch):
    """Every test: no kernel model may reach a condition Linux WARNs about (Kernel.warn_on),
    unless the test says it provokes one (``@pytest.mark.warn_ok``)."""
    hit: list[str] = []
    real = Kernel.warn_on

    def spy(self, condition, what):
        if condition:
            hit.append(what)
        return real(self, condition, what)

    monkeypatch.setattr(Kernel, "warn_on", spy)
    yield
    if hit and request.node.get_closest_marker("warn_ok") is None:
        pytest.fail(f"kernel WARN_ON hit during the test: {sorted(set(hit))}")


# ---- C guests built with the Debian cross compilers (tests/cguests.py) -----------------------------
from cguests import build_cguest  # noqa: E402


@pytest.fixture(scope="session")
def cguest():
    """cguest(source, arch, *flags) -> the built static ELF (see cguests.build_cguest)."""
    return build_cguest
