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
