"""emukern: real RISC-V (RV64GCV) and AArch64 (+SVE) Linux user programs in Unicorn, with the
kernel side modelled in Python.  The public API is :mod:`emukern.api` (``Machine``,
``run_program``) and the pytest fixtures of :mod:`emukern.pytest_plugin`."""

__version__ = "0.1.0"
