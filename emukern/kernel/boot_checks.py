"""The checks of a :class:`~emukern.config.MachineConfig` that need the kernel model's knowledge:
the preemption model and RISCV_ISA_V_PREEMPTIVE (:mod:`emukern.kernel.preempt`), the Linux release
named by ``kernel`` (:mod:`emukern.kernel.versions`) and the ``rlimits``
(:mod:`emukern.kernel.resource`).

:meth:`MachineConfig.validate` checks only the plain data, so :mod:`emukern.config` imports
nothing from the kernel; these checks belong to the kernel's boot.  Until the kernel calls
:func:`validate_for_kernel` itself, :class:`emukern.api.Machine` calls it just before it builds a
kernel, and the command line (:func:`emukern.options.config_from_args`) calls it as soon as the
options are parsed, so a bad option is refused before anything runs."""
from __future__ import annotations

from typing import Any

from emukern.errors import ConfigError
from emukern.kernel.preempt import validate_preempt_config


def validate_for_kernel(config: Any) -> None:
    """Raise :class:`~emukern.errors.ConfigError` for an option the kernel model refuses.

    Does not change ``config``; the plain-data checks are :meth:`MachineConfig.validate`'s."""
    validate_preempt_config(config)
    if config.kernel is not None:
        from emukern.kernel.versions import KERNELS
        if config.kernel not in KERNELS:
            raise ConfigError(f"unknown kernel {config.kernel!r}",
                              hint="`emukern info kernels` lists them: " + ", ".join(KERNELS))
    if isinstance(config.rlimits, dict):     # (not a dict: MachineConfig.validate says so)
        from emukern.kernel.resource import parse_rlimit_option
        for name, value in config.rlimits.items():
            parse_rlimit_option(name, value)
