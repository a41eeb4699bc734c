"""execve, execveat <-> fs/exec.c.

Only the syscall entries: ``sys_execve`` and ``sys_execveat`` hand over to ``do_execve`` in kernel/exec.py, imported
at call time, which loads the image and replaces the task's mm.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from emukern.kernel.exec import do_execve, do_execveat

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_execve(k: "Kernel", cpu, task, path_ptr, argv_ptr, envp_ptr, *a):
    return do_execve(k, cpu, task, path_ptr, argv_ptr, envp_ptr)


def sys_execveat(k: "Kernel", cpu, task, dirfd, path_ptr, argv_ptr, envp_ptr, flags, *a):
    return do_execveat(k, cpu, task, dirfd, path_ptr, argv_ptr, envp_ptr, flags)
