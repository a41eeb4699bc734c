"""Which of Linux's selftests emukern runs, how each is built and run, and which switches matter.

A test is named ``<arch>/<dir>/<program>`` after its place under tools/testing/selftests.  Each one
carries how its Makefile builds it (the make target; signal testcases are built as
``testcases/<name>`` and copied, like their Makefile's own rule), how it reports (kselftest TAP, a
plain exit status, or an endless stress loop that its harness ends with a signal), and which
emukern switches it exercises — the matrix runs it under every value of those switches at every
vector length the machine offers.  The expected verdicts live in ``expected.toml``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SIGTERM = 15                       # what fp-stress and the *-stress scripts end children with

SVE_VLS = (128, 256, 512)          # the machine's default --sve-vls
RVV_VLENS = (128, 256, 512)


@dataclass(frozen=True)
class SelfTest:
    arch: str                      # "arm64" | "riscv64"
    dir: str                       # subdirectory under selftests/<karch>/
    name: str                      # program name (the make target under $(OUTPUT))
    kind: str = "tap"              # tap | exit | stress | bench | helper
    args: tuple[str, ...] = ()
    switches: tuple[str, ...] = () # the policies whose every value the matrix runs
    vector: bool = False           # run at every VL/VLEN the machine offers
    stop_signal: int = 0           # stress tests: the signal their harness ends them with
    helpers: tuple[str, ...] = ()  # other programs of the same dir it needs beside it (exec)
    make_target: str = ""          # when not $(OUTPUT)/<name>
    freq_hz: int | None = None     # a lower CPU frequency for tests that run for simulated seconds
    exit_ok: tuple[int, ...] = (0,)  # kind "exit": the exit codes that mean it worked (and silent)
    note: str = ""
    rlimits: tuple[tuple[str, str], ...] = ()  # the limits its run script sets first (ulimit)

    @property
    def stack_unlimited(self) -> bool:
        """Its kselftest script runs it under `ulimit -s unlimited` (the real-kernel runner's flag)."""
        return ("STACK", "unlimited") in self.rlimits

    @property
    def id(self) -> str:
        return f"{self.arch}/{self.dir}/{self.name}"

    @property
    def karch(self) -> str:
        return "arm64" if self.arch == "arm64" else "riscv"


SVE = ("arm64-sve",)
RV = ("riscv-discard", "riscv-vstate-sysctl")

_A = "arm64"
_R = "riscv64"

TESTS: list[SelfTest] = [
    # ---- arm64 fp/ ------------------------------------------------------------------------------
    SelfTest(_A, "fp", "sve-probe-vls", switches=SVE, vector=True),
    SelfTest(_A, "fp", "vec-syscfg", helpers=("rdvl-sve", "rdvl-sme"), switches=SVE, vector=True),
    SelfTest(_A, "fp", "rdvl-sve", kind="exit", switches=SVE, vector=True,
             note="prints the VL; the table's run is through vlset, below"),
    SelfTest(_A, "fp", "vlset", kind="exit", args=("--inherit", "256", "./rdvl-sve"),
             helpers=("rdvl-sve",), switches=SVE, vector=True,
             note="vlset --inherit 256 ./rdvl-sve: set the VL, exec the program"),
    SelfTest(_A, "fp", "sve-test", kind="stress", switches=SVE, vector=True, stop_signal=SIGTERM),
    SelfTest(_A, "fp", "fpsimd-test", kind="stress", switches=SVE, stop_signal=SIGTERM),
    SelfTest(_A, "fp", "fp-stress", args=("-t", "1"), switches=SVE, vector=True, freq_hz=1_000_000,
             helpers=("fpsimd-test", "sve-test", "ssve-test", "za-test", "zt-test", "kernel-test"),
             note="-t 1: the harness runs its children one simulated second, then SIGTERMs them; "
                  "the CPU runs at 1 MHz so that second is 1 M cycles"),
    SelfTest(_A, "fp", "fp-pidbench", kind="bench", switches=SVE, vector=True,
             note="built with the iteration count substituted (see build.PIDBENCH_ITERS)"),
    SelfTest(_A, "fp", "sve-ptrace", switches=SVE, vector=True,
             note="a tracer reads and writes its stopped child's NT_ARM_SVE / NT_PRFPREG regsets at "
                  "every VQ 1-17; the Streaming SVE half skips itself without SME"),
    SelfTest(_A, "fp", "fp-ptrace", switches=SVE, vector=True,
             note="a tracer rewrites its child's FPSIMD/SVE state (NT_PRFPREG, NT_ARM_SVE in both "
                  "forms) at every VL while the child sits in a brk, and the child checks it; the SME "
                  "and FPMR cases skip themselves"),
    SelfTest(_A, "fp", "kernel-test", kind="stress", stop_signal=SIGTERM, helpers=("fpsimd-test",),
             note="fp-stress's KERNEL child: hashes through AF_ALG sockets until SIGTERM"),
    # ---- arm64 abi/ -----------------------------------------------------------------------------
    SelfTest(_A, "abi", "syscall-abi", switches=SVE, vector=True),
    SelfTest(_A, "abi", "hwcap", switches=("arm64-mrs",)),
    SelfTest(_A, "abi", "tpidr2", note="SME's TPIDR2; the test skips itself without SME"),
    SelfTest(_A, "abi", "ptrace"),
    # ---- arm64 tags/ ----------------------------------------------------------------------------
    SelfTest(_A, "tags", "tags_test", note="uname() through a tagged pointer after "
             "PR_SET_TAGGED_ADDR_CTRL; glibc's free() then loads through the tag (TBI)"),
    # ---- arm64 signal/: the testcases that apply to a CPU without SME ---------------------------
    *[SelfTest(_A, "signal", n, make_target=f"testcases/{n}",
               switches=SVE if "sve" in n else (), vector="sve" in n)
      for n in ("fake_sigreturn_bad_magic", "fake_sigreturn_bad_size",
                "fake_sigreturn_bad_size_for_magic0", "fake_sigreturn_duplicated_fpsimd",
                "fake_sigreturn_misaligned_sp", "fake_sigreturn_missing_fpsimd",
                "fake_sigreturn_sve_change_vl", "fpmr_siginfo",
                "mangle_pstate_invalid_compat_toggle", "mangle_pstate_invalid_daif_bits",
                "mangle_pstate_invalid_mode_el1h", "mangle_pstate_invalid_mode_el1t",
                "mangle_pstate_invalid_mode_el2h", "mangle_pstate_invalid_mode_el2t",
                "mangle_pstate_invalid_mode_el3h", "mangle_pstate_invalid_mode_el3t",
                "poe_siginfo", "sve_regs", "sve_vl")],
    # ---- riscv ----------------------------------------------------------------------------------
    SelfTest(_R, "hwprobe", "hwprobe"),
    SelfTest(_R, "hwprobe", "cbo"),
    SelfTest(_R, "hwprobe", "which-cpus"),
    SelfTest(_R, "vector", "v_initval_nolibc", switches=RV, vector=True),
    SelfTest(_R, "vector", "vstate_exec_nolibc", kind="exit", switches=RV, vector=True,
             exit_ok=tuple(range(0x20)),
             note="the helper vstate_prctl execs; run alone it forks a child that uses V and exits "
                  "with PR_RISCV_V_GET_CONTROL's value (any failure prints and exits 255)"),
    SelfTest(_R, "vector", "vstate_prctl", switches=RV, vector=True, helpers=("vstate_exec_nolibc",)),
    SelfTest(_R, "sigreturn", "sigreturn", switches=RV, vector=True),
    SelfTest(_R, "mm", "mmap_default"),
    SelfTest(_R, "mm", "mmap_bottomup", rlimits=(("STACK", "unlimited"),),
             note="run_mmap.sh runs it after `ulimit -s unlimited` (so do emukern's and the real-kernel runs)"),
]

BY_ID = {t.id: t for t in TESTS}

# selftest directories of the tree that are not in the matrix, and why (printed under the table)
NOT_RUN = {
    "arm64/bti": "not in this suite yet (it runs arm64 fp/, abi/ and signal/)",
    "arm64/mte": "not in this suite yet (it runs arm64 fp/, abi/ and signal/)",
    "arm64/pauth": "not in this suite yet (it runs arm64 fp/, abi/ and signal/)",
    "arm64/signal (SME testcases)": "sme_*, ssve_*, za_*, zt_*, tpidr2_*, fake_sigreturn_sme_change_vl: "
                                    "the machine has no SME",
    "arm64/fp (SME programs)": "za-fork, za-ptrace, zt-ptrace: SME and its ptrace regsets "
                               "(NT_ARM_SSVE, NT_ARM_ZA, NT_ARM_ZT); ssve-test, za-test, zt-test, "
                               "rdvl-sme: SME (built as fp-stress's children only)",
}


def select(arch: str | None = None, only: list[str] | None = None) -> list[SelfTest]:
    """Tests of ``arch`` (both by default) whose id ends with, or program equals, one of ``only``."""
    out = []
    for t in TESTS:
        if arch and t.arch != arch:
            continue
        if only and not any(t.id == o or t.id.endswith("/" + o) or t.name == o or
                            f"{t.dir}/{t.name}" == o for o in only):
            continue
        out.append(t)
    return out
