"""Capability sets (emukern/kernel/cred.py, syscalls/capability.py, the set*id family in
syscalls/sys.py, the exec transitions in kernel/exec.py) with guest_asm/c/caps_probe.c: capset's
round trips and EPERM cases, the bounding set, the ambient set's rules, the securebits and their
locks, setuid/seteuid/setfsuid from root with and without SECBIT_KEEP_CAPS and
SECBIT_NO_SETUID_FIXUP, commit_creds making a process that changed ids non-dumpable (and
forgetting its parent-death signal), and execve of root, non-root (with ambient),
set-user-ID-root and set-group-ID-root programs, with no_new_privs and AT_SECURE.

test_capabilities.expected is what the probe printed under Debian 13's arm64 kernel
(``emukern compare --kernel debian-13-arm64 --root ROOT ROOT/caps_probe``, ROOT holding the
probe and its 04755 / 02755 copies, as ``_root`` builds it: 152/152 lines agree); the probe
prints nothing architecture-specific, and ``emukern compare --kernel debian-13-riscv64`` agreed
line by line too."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.kernel.cred import CAP_FULL, CAP_NET_RAW, ROOT, Cred, bprm_creds_from_file, fix_setuid

EXPECTED = Path(__file__).with_name("test_capabilities.expected")


def _root(cguest, arch: str, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    exe = cguest("caps_probe", arch)
    for name, mode in (("caps_probe", 0o755), ("caps_probe_suid", 0o4755), ("caps_probe_sgid", 0o2755)):
        shutil.copyfile(exe, root / name)
        os.chmod(root / name, mode)
    return root


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_caps_probe_matches_linux(cguest, arch, tmp_path):
    root = _root(cguest, arch, tmp_path)
    r = Machine(arch=arch, root=str(root)).load(root / "caps_probe", []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text()


def test_default_root_keeps_its_answers():
    """A task that never touches its capabilities holds all of them while its euid is 0 and none
    once it leaves uid 0, as the uid-only model answered before the sets were kept."""
    assert ROOT.cap_effective == ROOT.cap_permitted == ROOT.cap_bset == CAP_FULL
    gone = fix_setuid(ROOT, Cred(uid=1000, euid=1000, suid=1000, fsuid=1000))
    assert (gone.cap_effective, gone.cap_permitted, gone.cap_ambient) == (0, 0, 0)
    eff_only = fix_setuid(ROOT, Cred(euid=1000, fsuid=1000))
    assert (eff_only.cap_effective, eff_only.cap_permitted) == (0, CAP_FULL)


def test_exec_of_root_program_by_root_is_unchanged():
    new, secure, per_clear = bprm_creds_from_file(ROOT, 0o100755, 0, 0, False)
    assert (new, secure, per_clear) == (ROOT, False, False)


def test_no_new_privs_ignores_setuid_bit():
    user = Cred(uid=1000, euid=1000, suid=1000, fsuid=1000, cap_permitted=0, cap_effective=0)
    new, secure, _ = bprm_creds_from_file(user, 0o104755, 0, 0, True)
    assert new.euid == 1000 and new.cap_permitted == 0 and not secure
    new, secure, _ = bprm_creds_from_file(user, 0o104755, 0, 0, False)
    assert new.euid == 0 and new.cap_effective == CAP_FULL and secure
    # a dropped bounding-set bit stays out of what a set-user-ID-root program gets
    capped = Cred(uid=1000, euid=1000, suid=1000, fsuid=1000, cap_permitted=0, cap_effective=0,
                  cap_bset=CAP_FULL & ~(1 << CAP_NET_RAW))
    new, _, _ = bprm_creds_from_file(capped, 0o104755, 0, 0, False)
    assert new.cap_permitted == CAP_FULL & ~(1 << CAP_NET_RAW)


def test_untrusted_tracer_keeps_setuid_exec_from_gaining():
    """LSM_UNSAFE_PTRACE: a task traced by a tracer without CAP_SYS_PTRACE that runs a
    set-user-ID-root program keeps its uid and gains no capability (its own CAP_SETUID would let
    it keep the new euid, but not the new permitted bits)."""
    user = Cred(uid=1000, euid=1000, suid=1000, fsuid=1000, cap_permitted=0, cap_effective=0)
    new, _, _ = bprm_creds_from_file(user, 0o104755, 0, 0, False, untrusted_tracer=True)
    assert (new.euid, new.cap_permitted, new.cap_effective) == (1000, 0, 0)
