"""The oracle: boot a real Linux kernel (Debian's) under qemu-system on the same guest, and compare.

    kernels.py   named kernel profiles (debian-12-arm64, ...) and the emukern policies each matches
    cpio.py      the initramfs archive (newc), written without root
    runner.c     the /init that runs the programs and frames their output on the console
    initramfs.py builds the runner (GCC cross compiler) and the initramfs
    console.py   reads the console protocol back (the kernel's own lines are never guest output)
    qemu.py      boots qemu-system-aarch64 / qemu-system-riscv64 with the matching CPU options
    compare.py   emukern vs the real kernel, per line; timing is never compared
    (their command lines, `emukern linux` and `emukern compare`, are emukern/cli/oracle.py)
"""
from emukern.errors import EmukernError

# (here, not in compare.py: the CLI's help text needs it without importing the comparison code)
TIMING_NOTE = ("timing is not compared: QEMU's TCG has no cycle model, so only output values and "
               "exit status are checked")


class OracleError(EmukernError):
    """The real kernel could not be booted or did not answer (no qemu-system, no image, a hang)."""
