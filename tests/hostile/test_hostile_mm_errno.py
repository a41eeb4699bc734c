"""Issue 33 item 14: mprotect and madvise answer with Linux's errnos (mm/mprotect.c
do_mprotect_pkey, mm/madvise.c do_madvise), and a patched vDSO (sigreturn) page is what a
forked child inherits.

- mprotect: a hole inside the range is ENOMEM, with the mappings before it already changed;
  a range starting in a hole is ENOMEM and changes nothing; unknown prot bits, PROT_GROWSDOWN
  with PROT_GROWSUP, and PROT_GROWSDOWN/UP on a mapping that does not grow are EINVAL; PROT_SEM
  is accepted; 0x10 is PROT_BTI on arm64 (the default CPU has BTI) and unknown on riscv.
- madvise: an unknown advice is EINVAL before anything else; a hole is ENOMEM.
(qemu-user hangs on the probe's fault-and-siglongjmp checks, so this is Linux's answer as read
from the code.)"""
from __future__ import annotations

import pytest

from emukern.api import Machine

ARCHES = ("riscv64", "arm64")
EXPECTED = """\
hole_after=-12 w0=0 w1=0 w3=1
start_in_hole=-12 w3=1
unknown_0x40=-22
prot_sem=0
prot_0x10={bti}
grows_both=-22
growsdown_anon=-22
growsup_anon=-22
growsdown_stack=0
len0_unmapped=0
unaligned=-22
wraps=-12
unmapped_only=-12
whole_ok=0 w0=0
madv_5=-22
madv_999=-22
madv_neg=-22
madv_normal_hole=-12
madv_unmapped=-12
madv_cold=0
madv_wipeonfork=0
madv_unaligned=-22
madv_len0=0
madv_wraps=-22
madv_bad_and_unaligned=-22
vdso_patch=0 child_sees=1
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_mprotect_madvise_errnos_as_linux(cprog, arch):
    m = Machine()
    m.load(cprog("mm_errno", arch))
    r = m.run()
    assert r.exit_code == 0, r.message
    assert r.stdout.decode() == EXPECTED.format(bti="0" if arch == "arm64" else "-22")
