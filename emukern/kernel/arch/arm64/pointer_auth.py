"""arm64 pointer authentication for user tasks (arch/arm64/kernel/pointer_auth.c and
asm/pointer_auth.h; the regsets of arch/arm64/kernel/ptrace.c).

The hardware half is the machine's: Unicorn signs and authenticates (QARMA5, FEAT_PAuth without
FPAC: ID_AA64ISAR1_EL1.APA = 1) once ``Arm64Cpu.enable_pointer_auth`` has taken the EL3/EL2 traps
off and a task's keys are in the key registers.  The kernel half is here, as Linux keeps it:

* each thread has ``struct ptrauth_keys_user`` (APIA, APIB, APDA, APDB, APGA: 128 bits each) and
  the EnIA/EnIB/EnDA/EnDB bits of its ``sctlr_user``; both live in the arch thread state;
* execve makes new keys and enables all four address keys (ptrauth_thread_init_user); fork and
  clone copy the parent's (dup_task_struct copies thread_struct), so a child authenticates the
  return addresses its parent signed;
* the context switch loads the next task's keys (ptrauth_keys_install_user) and its EnXX bits;
  the CPU writes only the registers that differ, which for threads of one process (same keys)
  is nothing.  No cycles are charged for it: Linux does these MSRs inside __switch_to, whose
  cost the cost model already counts as one figure;
* prctl PR_PAC_RESET_KEYS / PR_PAC_SET_ENABLED_KEYS / PR_PAC_GET_ENABLED_KEYS, with Linux's
  argument checks, and EINVAL when the system has no address authentication;
* ptrace: NT_ARM_PAC_MASK (read only), NT_ARM_PAC_ENABLED_KEYS, NT_ARM_PACA_KEYS and
  NT_ARM_PACG_KEYS; the core dump writes the same regsets as notes.

Keys are not random: emukern's other "random" bytes (AT_RANDOM, getrandom) are fixed functions
of the thread id, and the keys are a hash of the thread id and a machine-wide count of key
generations (so a second exec of the same thread, or a reset, gets new keys), so a run signs
the same pointers the same way every time.

A failed AUT* (no FPAC) leaves an error code in the pointer's PAC bits; the branch or load
through it then faults on the non-canonical address: SIGSEGV, as on Linux without FPAC.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from emukern.kernel import errno as E
from emukern.machine.cpu_arm64 import SCTLR_ENDA, SCTLR_ENDB, SCTLR_ENIA, SCTLR_ENIB

if TYPE_CHECKING:
    from emukern.machine.cpu_arm64 import Arm64Cpu
    from emukern.kernel.task import Task
    from emukern.kernel.types import Kernel

PR_PAC_RESET_KEYS = 54
PR_PAC_SET_ENABLED_KEYS, PR_PAC_GET_ENABLED_KEYS = 60, 61
PR_PAC_APIAKEY, PR_PAC_APIBKEY, PR_PAC_APDAKEY, PR_PAC_APDBKEY, PR_PAC_APGAKEY = 1, 2, 4, 8, 16
PR_PAC_ADDR_KEYS = PR_PAC_APIAKEY | PR_PAC_APIBKEY | PR_PAC_APDAKEY | PR_PAC_APDBKEY
PR_PAC_ENABLED_KEYS_MASK = PR_PAC_ADDR_KEYS
# prctl key bit -> SCTLR_EL1 enable bit (arg_to_enxx_mask)
_ENXX = ((PR_PAC_APIAKEY, SCTLR_ENIA), (PR_PAC_APIBKEY, SCTLR_ENIB), (PR_PAC_APDAKEY, SCTLR_ENDA),
         (PR_PAC_APDBKEY, SCTLR_ENDB))
SCTLR_USER_ALL = SCTLR_ENIA | SCTLR_ENIB | SCTLR_ENDA | SCTLR_ENDB

# vabits_actual: 48, the machine's TCR_EL1.T0SZ.  The modelled CPU has no FEAT_LVA (nor has
# Unicorn's, which puts the PAC of a 48-bit VA in bits 54:48 and cannot use 52-bit VAs), so the
# mask is the 48-bit one; Debian 13's kernel (CONFIG_ARM64_VA_BITS_52) on QEMU's max CPU, which
# has LVA, reports 54:52 instead (emukern compare of guest_asm/c/pac_probe.c: the one line that
# differs)
VA_BITS = 48


@dataclass
class PtrauthUser:
    """struct ptrauth_keys_user (five 128-bit keys) and the EnXX bits of thread.sctlr_user."""
    keys: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    sctlr: int = 0

    def copy(self) -> "PtrauthUser":
        return PtrauthUser(self.keys, self.sctlr)


def system_supports_address_auth(k: "Kernel") -> bool:
    return bool(k.arch.hwcap() >> 30 & 1)            # HWCAP_PACA


def system_supports_generic_auth(k: "Kernel") -> bool:
    return bool(k.arch.hwcap() >> 31 & 1)            # HWCAP_PACG


def ptrauth_user_pac_mask() -> int:
    """The bits of a user pointer that hold its PAC: 54 down to the VA size (bit 55 selects the
    half of the address space, 63:56 are the TBI tag)."""
    return ((1 << 55) - 1) & ~((1 << VA_BITS) - 1)


def _random_key(k: "Kernel", task: "Task", which: int) -> int:
    """get_random_bytes for one 128-bit key: deterministic (see the module docstring)."""
    arch: Any = k.arch
    arch.ptrauth_generation += 1
    h = hashlib.blake2b(struct.pack("<4sQQI", b"pac", task.tid, arch.ptrauth_generation, which),
                        digest_size=16)
    return int.from_bytes(h.digest(), "little")


def ptrauth_keys_init_user(k: "Kernel", task: "Task", pa: PtrauthUser) -> None:
    """New address keys when the system has address authentication, a new generic key when it
    has generic authentication."""
    keys = list(pa.keys)
    if system_supports_address_auth(k):
        for i in range(4):
            keys[i] = _random_key(k, task, i)
    if system_supports_generic_auth(k):
        keys[4] = _random_key(k, task, 4)
    pa.keys = (keys[0], keys[1], keys[2], keys[3], keys[4])


def thread_state(task: "Task") -> PtrauthUser | None:
    th = task.thread
    return getattr(th, "ptrauth", None) if th is not None else None


def setup(k: "Kernel") -> None:
    """Boot: every CPU lets EL0 use its keys when the system has pointer authentication (the
    sanitised ID registers, as the hwcaps say), else the instructions stay NOPs/UNDEF as before."""
    if system_supports_address_auth(k) or system_supports_generic_auth(k):
        for cpu in k.cpus:
            cast("Arm64Cpu", cpu).enable_pointer_auth()


def ptrauth_thread_init_user(k: "Kernel", task: "Task", th: Any) -> None:
    """execve: new keys, every address key enabled.  ``th`` is the arch thread state (Linux's
    thread_struct), which carries them as ``ptrauth``."""
    if not (system_supports_address_auth(k) or system_supports_generic_auth(k)):
        return
    pa = th.ptrauth = PtrauthUser()
    ptrauth_keys_init_user(k, task, pa)
    if system_supports_address_auth(k):
        pa.sctlr = SCTLR_USER_ALL


def ptrauth_thread_copy(th: Any, parent: "Task | None") -> None:
    """dup_task_struct: the child thread (arch state ``th``) runs with its parent's keys and
    enabled keys."""
    pa = thread_state(parent) if parent is not None else None
    if pa is not None:
        th.ptrauth = pa.copy()


def ptrauth_keys_install_user(cpu: Any, task: "Task") -> None:
    """The task's keys and EnXX bits into the CPU (the CPU skips what it already holds)."""
    pa = thread_state(task)
    if pa is not None:
        cpu.load_ptrauth_keys(pa.keys, pa.sctlr)


def _current_on(k: "Kernel", task: "Task") -> Any:
    """The CPU ``task`` is running on, or None (a stopped tracee: loaded at its next switch-in)."""
    for cpu, pc in zip(k.cpus, k.percpu):
        if pc.curr is task:
            return cpu
    return None


def ptrauth_prctl_reset_keys(k: "Kernel", task: "Task", arg: int) -> int:
    if not system_supports_address_auth(k) and not system_supports_generic_auth(k):
        return -E.EINVAL
    pa = thread_state(task)
    if pa is None:
        return -E.EINVAL
    if not arg:
        ptrauth_keys_init_user(k, task, pa)
    else:
        if arg & ~(PR_PAC_ADDR_KEYS | PR_PAC_APGAKEY):
            return -E.EINVAL
        if (arg & PR_PAC_ADDR_KEYS and not system_supports_address_auth(k)) or \
                (arg & PR_PAC_APGAKEY and not system_supports_generic_auth(k)):
            return -E.EINVAL
        keys = list(pa.keys)
        for i in range(5):
            if arg >> i & 1:
                keys[i] = _random_key(k, task, i)
        pa.keys = (keys[0], keys[1], keys[2], keys[3], keys[4])
    cpu = _current_on(k, task)
    if cpu is not None:
        ptrauth_keys_install_user(cpu, task)
    return 0


def _enxx(arg: int) -> int:
    return sum(bit for key, bit in _ENXX if arg & key)


def ptrauth_set_enabled_keys(k: "Kernel", task: "Task", keys: int, enabled: int) -> int:
    if not system_supports_address_auth(k):
        return -E.EINVAL
    pa = thread_state(task)
    if pa is None:
        return -E.EINVAL
    if keys & ~PR_PAC_ENABLED_KEYS_MASK or enabled & ~keys:
        return -E.EINVAL
    pa.sctlr = (pa.sctlr & ~_enxx(keys)) | _enxx(enabled)
    cpu = _current_on(k, task)
    if cpu is not None:
        ptrauth_keys_install_user(cpu, task)       # update_sctlr_el1 when tsk == current
    return 0


def ptrauth_get_enabled_keys(k: "Kernel", task: "Task") -> int:
    if not system_supports_address_auth(k):
        return -E.EINVAL
    pa = thread_state(task)
    if pa is None:
        return -E.EINVAL
    return sum(key for key, bit in _ENXX if pa.sctlr & bit)


def ptrauth_prctl(k: "Kernel", task: "Task", option: int, a2: int, a3: int, a4: int, a5: int) -> int | None:
    """kernel/sys.c's three PAC options (None: not one of them), with its checks that the
    unused arguments are 0."""
    if option == PR_PAC_RESET_KEYS:
        return -E.EINVAL if a3 or a4 or a5 else ptrauth_prctl_reset_keys(k, task, a2)
    if option == PR_PAC_SET_ENABLED_KEYS:
        return -E.EINVAL if a4 or a5 else ptrauth_set_enabled_keys(k, task, a2, a3)
    if option == PR_PAC_GET_ENABLED_KEYS:
        return -E.EINVAL if a2 or a3 or a4 or a5 else ptrauth_get_enabled_keys(k, task)
    return None


# ---- the regsets (arch/arm64/kernel/ptrace.c) ----------------------------------------------------
def pac_mask_get() -> bytes:
    """struct user_pac_mask: data_mask, insn_mask (the same bits: TBI covers both)."""
    m = ptrauth_user_pac_mask()
    return struct.pack("<QQ", m, m)


def pac_enabled_keys_get(k: "Kernel", task: "Task") -> bytes:
    return struct.pack("<q", ptrauth_get_enabled_keys(k, task))


def pac_address_keys_get(task: "Task") -> bytes:
    """struct user_pac_address_keys: the four address keys as __uint128_t."""
    pa = thread_state(task)
    keys = pa.keys if pa is not None else (0,) * 5
    return b"".join(key.to_bytes(16, "little") for key in keys[:4])


def pac_generic_keys_get(task: "Task") -> bytes:
    pa = thread_state(task)
    return (pa.keys[4] if pa is not None else 0).to_bytes(16, "little")


def pac_keys_set(k: "Kernel", task: "Task", data: bytes, generic: bool) -> int:
    """pac_address_keys_set / pac_generic_keys_set: the whole structure, loaded at the tracee's
    next switch-in (a tracee is stopped, so not current)."""
    pa = thread_state(task)
    if pa is None:
        return -E.EINVAL
    keys = list(pa.keys)
    if generic:
        keys[4] = int.from_bytes(data[:16], "little")
    else:
        for i in range(4):
            keys[i] = int.from_bytes(data[16 * i:16 * i + 16], "little")
    pa.keys = (keys[0], keys[1], keys[2], keys[3], keys[4])
    return 0
