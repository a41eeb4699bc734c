"""landlock_create_ruleset / landlock_add_rule / landlock_restrict_self <-> security/landlock/
syscall.c, as a kernel built without CONFIG_SECURITY_LANDLOCK has them.

Such a kernel routes the three numbers to sys_ni_syscall (kernel/sys_ni.c): ENOSYS whatever the
arguments, before any of them is read.  That is the answer emukern gives, on purpose: emukern
has no LSM to enforce a ruleset with, and a sandboxing program must be told "no Landlock here"
(ENOSYS, which every Landlock user -- systemd, tar, apt's methods -- takes as "run
unsandboxed") rather than be handed a ruleset fd that restricts nothing.  Naming the calls here
keeps them out of the unknown-syscall counts: the trap log shows them by name.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_landlock_create_ruleset(k: "Kernel", cpu, task, *a):
    """No Landlock in this kernel: ENOSYS (also for the ABI-version query, flags=1)."""
    cpu.charge(k.cost.syscall_body)
    return -E.ENOSYS


def sys_landlock_add_rule(k: "Kernel", cpu, task, *a):
    """No Landlock in this kernel: ENOSYS (no ruleset fd can exist to add a rule to)."""
    cpu.charge(k.cost.syscall_body)
    return -E.ENOSYS


def sys_landlock_restrict_self(k: "Kernel", cpu, task, *a):
    """No Landlock in this kernel: ENOSYS (the task stays unrestricted)."""
    cpu.charge(k.cost.syscall_body)
    return -E.ENOSYS
