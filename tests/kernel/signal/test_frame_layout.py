"""The frame constants in kernel/arch/riscv/signal.py and kernel/arch/arm64/signal.py, checked field by
field against the uapi headers installed with the Debian cross compilers: a C file of
_Static_asserts must compile.  (The riscv headers there are Linux 6.1's, older than the V
record; its constants are pinned to the upstream uapi values in the second test.)"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.kernel.arch.arm64 import signal as A
from emukern.kernel.arch.riscv import signal as R

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
HEADERS = "#include <stddef.h>\n#include <asm/signal.h>\n#include <asm/sigcontext.h>\n#include <asm/ucontext.h>\n"


def _asserts(arch: str) -> list[str]:
    uc = "offsetof(struct ucontext, uc_mcontext)"
    if arch == "riscv64":
        return [
            f"{uc} + 128 == {R.MCONTEXT}",
            f"offsetof(struct ucontext, uc_stack) + 128 == {R.UC_STACK}",
            f"offsetof(struct ucontext, uc_sigmask) + 128 == {R.UC_SIGMASK}",
            f"offsetof(struct sigcontext, sc_fpregs) + {R.MCONTEXT} == {R.SC_FPREGS}",
            f"sizeof(struct sigcontext) == {R.SIZEOF_SIGCONTEXT}",
            f"128 + sizeof(struct ucontext) == {R.SIZEOF_FRAME}",
            # __riscv_extra_ext_header.reserved overlays q.reserved[0]; its hdr follows
            f"offsetof(union __riscv_fp_state, q.reserved) + {R.SC_FPREGS} == {R.SC_RESERVED}",
            f"offsetof(union __riscv_fp_state, q.reserved) + 4 + {R.SC_FPREGS} == {R.SC_EXT_HDR}",
            "offsetof(struct __riscv_d_ext_state, fcsr) == 256",
            "sizeof(stack_t) == 24 && sizeof(sigset_t) == 8",
        ]
    return [
        f"{uc} + 128 == {A.MCONTEXT}",
        f"offsetof(struct ucontext, uc_stack) + 128 == {A.UC_STACK}",
        f"offsetof(struct ucontext, uc_sigmask) + 128 == {A.UC_SIGMASK}",
        f"offsetof(struct sigcontext, regs) + {A.MCONTEXT} == {A.SC_REGS}",
        f"offsetof(struct sigcontext, sp) + {A.MCONTEXT} == {A.SC_SP}",
        f"offsetof(struct sigcontext, pc) + {A.MCONTEXT} == {A.SC_PC}",
        f"offsetof(struct sigcontext, pstate) + {A.MCONTEXT} == {A.SC_PSTATE}",
        f"offsetof(struct sigcontext, __reserved) + {A.MCONTEXT} == {A.RESERVED}",
        f"sizeof(((struct sigcontext *)0)->__reserved) == {A.RESERVED_SIZE}",
        f"128 + sizeof(struct ucontext) == {A.SIZEOF_FRAME}",
        f"FPSIMD_MAGIC == {A.FPSIMD_MAGIC} && sizeof(struct fpsimd_context) == {A.FPSIMD_CONTEXT_SIZE}",
        f"ESR_MAGIC == {A.ESR_MAGIC} && sizeof(struct esr_context) == {A.ESR_CONTEXT_SIZE}",
        f"EXTRA_MAGIC == {A.EXTRA_MAGIC} && sizeof(struct extra_context) == {A.EXTRA_CONTEXT_SIZE}",
        f"SVE_MAGIC == {A.SVE_MAGIC} && sizeof(struct sve_context) == {A.SVE_CONTEXT_HDR}",
        f"SVE_SIG_REGS_OFFSET == {A.SVE_CONTEXT_HDR} && SVE_SIG_FLAG_SM == {A.SVE_SIG_FLAG_SM}",
        *[f"SVE_SIG_CONTEXT_SIZE({vq}) == {A.sve_sig_context_size(vq)}" for vq in (1, 2, 4, 8, 16)],
        *[f"SVE_SIG_REGS_SIZE({vq}) == {A.sve_sig_regs_size(vq)}" for vq in (1, 3, 16)],
        *[f"SVE_SIG_ZREG_OFFSET({vq}, 1) == {16 + vq * 16}" for vq in (1, 16)],
        *[f"SVE_SIG_FFR_OFFSET({vq}) == {16 + 32 * vq * 16 + 16 * vq * 2}" for vq in (1, 16)],
    ]


@pytest.mark.parametrize("arch", list(CC))
def test_offsets_match_the_uapi_headers(arch, tmp_path):
    if shutil.which(CC[arch]) is None:
        pytest.skip(f"{CC[arch]} is not installed")
    src = tmp_path / "layout.c"
    src.write_text(HEADERS + "".join(f"_Static_assert({a}, \"{a}\");\n" for a in _asserts(arch)))
    res = subprocess.run([CC[arch], "-c", "-o", str(tmp_path / "layout.o"), str(src)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_riscv_v_record_constants():
    """Upstream arch/riscv/include/uapi/asm/sigcontext.h + ptrace.h (Linux 6.5+): RISCV_V_MAGIC,
    END_MAGIC/END_HDR_SIZE = 0, __riscv_v_ext_state = 6 longs (vstart vl vtype vcsr vlenb datap);
    riscv_v_sc_size = header + state + 32 * vlenb (signal.c init_rt_signal_env)."""
    assert R.RISCV_V_MAGIC == 0x53465457 and R.END_MAGIC == 0 and R.END_HDR_SIZE == 0
    assert R.V_STATE == 6 * 8 and R.CTX_HDR == 8
    assert [R.riscv_v_sc_size(v // 8) for v in (128, 256, 512, 1024)] == [568, 1080, 2104, 4152]
