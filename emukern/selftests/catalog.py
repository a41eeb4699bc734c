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
    make_vars: tuple[str, ...] = ()  # VAR=value on its make command line (each one a documented substitution)
    time_limit: float | None = None  # host seconds for one run, when below --time-limit
    slow_limit: float | None = None  # host seconds a known-slow test needs, when above --time-limit
    generic: bool = False          # under selftests/<dir> (architecture-independent), not selftests/<karch>/<dir>
    # a selftest newer than the tree: the file (under build.UPSTREAM_DIR) compiled in place of a
    # Makefile target, and which version it is (build.py says how)
    upstream: str = ""
    upstream_version: str = ""
    # libraries its Makefile links that a static cross build has to get elsewhere (build.py says how):
    # Debian -dev packages whose .a it links (fetched for the test's arch), and a source file of its
    # own directory that the Makefile builds as a shared library, built here as lib<name>.a instead
    deb_libs: tuple[str, ...] = ()
    static_lib: str = ""
    # a generic test that must start in a directory of its own below the guest root, as
    # kselftest's runner starts it (cd <dir>; ./<name>): one that mounts over its cwd would
    # otherwise mount over its own root, which its walks never see (on Linux too)
    own_dir: bool = False

    @property
    def suite(self) -> str:
        """``--suite`` it belongs to: "vector" (the arch directories) or "generic"."""
        return "generic" if self.generic else "vector"

    @property
    def srcdir(self) -> str:
        """Its Makefile's directory, relative to tools/testing/selftests."""
        return self.dir if self.generic else f"{self.karch}/{self.dir}"

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
                  "every VQ 1-17; the Streaming SVE half skips itself without SME (72 of 144 at each "
                  "configuration: get/set VL and the three set/get pairs at VQ 1-17, FPSIMD set via "
                  "SVE, FPSIMD read, VL_INHERIT set/cleared -- NT_ARM_SSVE needs SME, which the machine "
                  "lacks); 42 more are the three set/get pairs at the 14 VQs the machine does not "
                  "offer (only VL 128/256/512); 30 pass"),
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
    # the V regset's selftests are newer than 6.12's tree: built from the stored upstream copies
    SelfTest(_R, "vector", "vstate_ptrace", switches=RV, vector=True,
             upstream="src-torvalds-linux-b8304863-tools-testing-selftests-riscv-vector-vstate_ptrace.c",
             upstream_version="torvalds/linux b8304863 (mainline: ebreak stops, 2 tests)",
             note="a tracer reads v31 at an ebreak, writes it back changed; the child checks it"),
    SelfTest(_R, "vector", "vstate_ptrace_v3", switches=RV, vector=True,
             upstream="src-tchiu-TT-linux-1085303c-tools-testing-selftests-riscv-vector-vstate_ptrace.c",
             upstream_version="tchiu-TT/linux 1085303c (the optimize-restore series' version, 4 tests)",
             note="vstate_ptrace plus the series' syscall-stop case (PTRACE_SYSCALL): v31 reads -1 at "
                  "the stop and a SETREGSET there is dropped"),
    SelfTest(_R, "vector", "validate_v_ptrace", switches=RV, vector=True,
             upstream="src-torvalds-linux-2c9e7a5f-tools-testing-selftests-riscv-vector-validate_v_ptrace.c",
             upstream_version="torvalds/linux 2c9e7a5f (Sergey Matyukevich's tests, merged for 7.0)",
             note="ptrace_v_not_enabled, ptrace_v_early_debug, ptrace_v_syscall_clobbering and the "
                  "v_csr_invalid (12) / v_csr_valid (4) variants; the XTheadVector ones skip"),
    SelfTest(_R, "mm", "mmap_default"),
    SelfTest(_R, "mm", "mmap_bottomup", rlimits=(("STACK", "unlimited"),),
             note="run_mmap.sh runs it after `ulimit -s unlimited` (so do emukern's and the real-kernel runs)"),
]


# ---- the generic selftests (--suite generic) ---------------------------------------------------
# Architecture-independent directories of tools/testing/selftests, built for each arch exactly as
# for the vector suite (static, the Makefile's own target).  A test is here when it is about a
# process's view of the kernel (syscalls, signals, /proc/self, its own memory) and ends on its own
# in bounded time; the rest of each directory is in NOT_RUN with the reason.
def _generic(dir: str, names: tuple[str, ...], **kw: object) -> list[SelfTest]:
    return [SelfTest(a, dir, n, generic=True, **kw) for a in (_A, _R) for n in names]  # type: ignore[arg-type]


GENERIC: list[SelfTest] = [
    *_generic("sigaltstack", ("sas",)),
    *_generic("futex/functional", ("futex_wait_timeout", "futex_wait_wouldblock", "futex_wait",
                                   "futex_requeue", "futex_waitv", "futex_wait_uninitialized_heap",
                                   "futex_wait_private_mapped_file", "futex_requeue_pi",
                                   "futex_requeue_pi_mismatched_ops",
                                   "futex_requeue_pi_signal_restart")),
    *_generic("clone3", ("clone3", "clone3_clear_sighand", "clone3_set_tid"), make_vars=("LDLIBS=",),
              note="LDLIBS= on make's command line: the Makefile links -lcap into every program, but only "
                   "clone3_cap_checkpoint_restore calls libcap, and the cross toolchains have no static libcap"),
    *_generic("exec", ("execveat",), helpers=("execveat.symlink", "execveat.denatured", "script", "subdir"),
              note="its Makefile's TEST_GEN_FILES (a symlink, a copy without +x, a script, a directory) beside it"),
    *_generic("exec", ("null-argv", "recursion-depth", "non-regular")),
    *_generic("kcmp", ("kcmp_test",)),
    *_generic("mm", ("mremap_test",), time_limit=15.0,
              note="validates every remapped byte of regions up to 1 GB: bounded at 15 host seconds"),
    *_generic("mm", ("map_fixed_noreplace", "mremap_dontunmap", "mlock2-tests",
                     "madv_populate", "mdwe_test", "map_populate")),
    *_generic("mm", ("mlock-random-test",), deb_libs=("libcap-dev",),
              note="links Debian trixie's static libcap.a of its arch (libcap-dev), as its Makefile's -lcap"),
    *_generic("mm", ("cow",),
              note="its base-page cases (COW after fork, vmsplice across fork): the THP, hugetlb, "
                   "swap (MADV_PAGEOUT) and gup_test cases skip themselves, as the model has none"),
    *_generic("timers", ("nanosleep", "nsleep-lat", "set-timer-lat")),
    *_generic("timers", ("posix_timers",), time_limit=15.0,
              note="ITIMER_VIRTUAL/PROF need seconds of CPU time: bounded at 15 host seconds"),
    *_generic("timers", ("inconsistency-check",), args=("-t", "1", "-c", "1"), time_limit=15.0,
              freq_hz=5_000_000,
              note="-t 1 -c 1: one simulated second of CLOCK_MONOTONIC (the kselftest run: 10 s per clock); "
                   "the CPU runs at 5 MHz so that second is 5 M cycles of back-to-back clock reads"),
    *_generic("timers", ("threadtest",), args=("-t", "1", "-n", "2"), time_limit=15.0,
              freq_hz=2_000_000,
              note="-t 1 -n 2: two threads for one simulated second (default: 8 threads, 30 s), "
                   "at 2 MHz (2 M cycles: at 5 MHz it reached 0.82 s in its 15 host seconds)"),
    *_generic("proc", ("fd-001-lookup", "fd-002-posix-eq", "proc-self-map-files-001",
                       "proc-self-map-files-002", "proc-self-isnt-kthread", "proc-self-syscall",
                       "proc-self-wchan", "proc-loadavg-001", "proc-empty-vm",
                       "self", "thread-self", "read")),
    *_generic("proc", ("proc-uptime-001", "proc-tid0"), freq_hz=5_000_000,
              note="each loops for one simulated second (uptime until it moved 1.00 s; tid0 until "
                   "alarm(1)): the CPU runs at 5 MHz so that second is 5 M cycles"),
    *_generic("ptrace", ("get_syscall_info", "peeksiginfo", "vmaccess")),
    *_generic("pidfd", ("pidfd_open_test", "pidfd_test")),
    *_generic("pidfd", ("pidfd_poll_test",), slow_limit=300.0,
              note="10,000 fork/pidfd_send_signal/poll/waitpid rounds: about 10-17 ms host each, "
                   "so up to 300 host seconds (above the default 120)"),
    *_generic("pidfd", ("pidfd_wait", "pidfd_getfd_test", "pidfd_fdinfo_test")),
    *_generic("membarrier", ("membarrier_test_single_thread",)),
    *_generic("filesystems/eventfd", ("eventfd_test",)),
    # ---- AF_UNIX, epoll and dnotify (net/af_unix, filesystems/epoll, filesystems/dnotify_test) ----
    *_generic("net/af_unix", ("diag_uid", "msg_oob", "scm_pidfd", "scm_rights", "unix_connect")),
    *_generic("filesystems/epoll", ("epoll_wakeup_test",), freq_hz=5_000_000, slow_limit=300.0,
              note="a kselftest_harness of 64 cases (EPOLLET/ONESHOT/EXCLUSIVE, nested epoll, pipes, "
                   "eventfd, sockets, waiters in several threads); epoll59/60 spin until another thread "
                   "runs, so the CPU runs at 5 MHz (their 30 s harness limit is 150 M cycles, about "
                   "35 host seconds in all) and a loaded host may need up to 300 s"),
    *_generic("filesystems", ("dnotify_test",), time_limit=10.0,
              note="TEST_GEN_PROGS_EXTENDED (kselftest never runs it): it asks F_NOTIFY for \".\" "
                   "with SIGRTMIN+1 and then pauses for ever, printing a line per event; nothing in "
                   "its directory changes, so a correct kernel prints nothing and it never ends"),
    *_generic("mount_setattr", ("mount_setattr_test",)),
    *_generic("size", ("get_size",)),
    *_generic("vDSO", ("vdso_test_gettimeofday", "vdso_test_getcpu", "vdso_test_abi",
                       "vdso_test_clock_getres")),
    # its Makefile links -ldl; static glibc's dlopen(RTLD_NOLOAD) finds the vDSO that
    # _dl_non_dynamic_init registered from AT_SYSINFO_EHDR, so the static build works as is
    *_generic("vDSO", ("vdso_test_correctness",)),
    *_generic("sync", ("sync_test",)),
    # ---- what NOT_RUN_GENERIC left for "not done yet" -------------------------------------------
    *_generic("rseq", ("basic_test", "basic_percpu_ops_test", "basic_percpu_ops_mm_cid_test"),
              static_lib="rseq.c", make_vars=("TEST_GEN_PROGS_EXTENDED=",), time_limit=30.0,
              note="librseq is rseq.c built into each test (librseq.a, the Makefile's -lrseq) instead of "
                   "librseq.so: the registration uses glibc's own __rseq_offset/__rseq_size, as it does "
                   "when dynamically linked against a glibc that registers rseq"),
    # run_param_test.sh runs every param_test build over 8 test types with -r 1000 and 6 threads per
    # CPU; here each of the four builds runs one type, -r 100 (the script's SLOW_REPS) -t 4
    *[SelfTest(a, "rseq", prog, generic=True, kind="exit", args=("-T", typ, *more, "-r", "100", "-t", "4"),
               static_lib="rseq.c", make_vars=("TEST_GEN_PROGS_EXTENDED=",), time_limit=60.0,
               note=f"run_param_test.sh's {what} case, -r 100 -t 4 (the script: -r 1000, 6 threads per CPU)")
      for a in (_A, _R)
      for prog, typ, more, what in (("param_test", "s", (), "spinlock"),
                                    ("param_test_compare_twice", "l", (), "list"),
                                    ("param_test_mm_cid", "r", (), "membarrier"),
                                    ("param_test_mm_cid_compare_twice", "b", ("-M",), "buffer with barrier"))],
    *_generic("openat2", ("openat2_test", "resolve_test", "rename_attack_test"),
              make_vars=("CFLAGS=-Wall -O2 -g -D_GNU_SOURCE=",), time_limit=30.0,
              note="built without its -fsanitize=address,undefined -static-libasan (CFLAGS= on make's "
                   "command line): ASan has no static runtime, and the sanitizers check the test's own "
                   "code, not the kernel's answers"),
    *_generic("mqueue", ("mq_open_tests",), deb_libs=("libpopt-dev",),
              note="links Debian trixie's static libpopt.a of its arch (libpopt-dev)"),
    *_generic("timers", ("mqueue-lat",), time_limit=30.0),
    *_generic("clone3", ("clone3_cap_checkpoint_restore",), deb_libs=("libcap-dev",),
              note="links Debian trixie's static libcap.a of its arch (libcap-dev)"),
    *_generic("capabilities", ("test_execve",), deb_libs=("libcap-ng-dev",), helpers=("validate_cap",), own_dir=True,
              note="links Debian trixie's static libcap-ng.a (libcap-ng-dev); validate_cap is the helper "
                   "it execs (its TEST_GEN_FILES)"),
    *_generic("splice", ("default_file_splice_read",), kind="exit",
              note="default_file_splice_read.sh's run: stdin is empty (the script's </dev/null) and it "
                   "must write nothing"),
    # ---- the core syscall layer: core, ipc, filelock, memfd, mincore, cachestat, fchmodat2,
    # pid_namespace, and mm's process-model programs ----------------------------------------------
    *_generic("core", ("close_range_test", "unshare_test"), time_limit=30.0),
    *_generic("ipc", ("msgque",), time_limit=30.0),
    *_generic("filelock", ("ofdlocks",), time_limit=30.0),
    *_generic("memfd", ("memfd_test",), time_limit=60.0),
    *_generic("mincore", ("mincore_selftest",), time_limit=30.0),
    *_generic("cachestat", ("test_cachestat",), time_limit=30.0),
    *_generic("fchmodat2", ("fchmodat2_test",), make_vars=("CFLAGS=-Wall -O2 -g $(KHDR_INCLUDES)",), time_limit=30.0,
              note="built without its -fsanitize=address,undefined -static-libasan (CFLAGS= on make's "
                   "command line): ASan has no static runtime, and the sanitizers check the test's own "
                   "code, not the kernel's answers"),
    *_generic("pid_namespace", ("regression_enomem",), time_limit=30.0),
    *_generic("mm", ("mseal_test", "seal_elf", "mrelease_test", "on-fault-limit", "droppable",
                     "mkdirty"), time_limit=60.0),
    *_generic("mm", ("virtual_address_range",), time_limit=60.0),
    *_generic("mm", ("memfd_secret",), deb_libs=("libcap-dev",), time_limit=30.0,
              note="links Debian trixie's static libcap.a of its arch (libcap-dev), as its Makefile's -lcap"),
]

SUITES = ("vector", "generic", "all")

BY_ID = {t.id: t for t in [*TESTS, *GENERIC]}

# selftest directories of the tree that are not in the matrix, and why (printed under the table)
NOT_RUN = {
    "arm64/bti": "not in this suite yet (it runs arm64 fp/, abi/ and signal/)",
    "arm64/mte": "not in this suite yet (it runs arm64 fp/, abi/ and signal/)",
    "arm64/pauth": "not in this suite yet; tests/kernel/arm64/test_pac.py builds and runs it (7/7 pass)",
    "arm64/signal (SME testcases)": "sme_*, ssve_*, za_*, zt_*, tpidr2_*, fake_sigreturn_sme_change_vl: "
                                    "the machine has no SME",
    "arm64/fp (SME programs)": "za-fork, za-ptrace, zt-ptrace: SME and its ptrace regsets "
                               "(NT_ARM_SSVE, NT_ARM_ZA, NT_ARM_ZT); ssve-test, za-test, zt-test, "
                               "rdvl-sme: SME (built as fp-stress's children only)",
}

# the generic directories (and programs) --suite generic leaves out, and why
NOT_RUN_GENERIC = {
    "generic/rseq (param_test_benchmark, param_test_mm_cid_benchmark, run_param_test.sh's other cases)":
        "the benchmark builds only time the same code; run_param_test.sh's 8 cases x 4 builds x "
        "(default, then 10,000-loop injections) at -r 1000 with 6 threads per CPU are hours of emulation: "
        "each build runs one case here",
    "generic/mqueue (mq_perf_tests)": "sets SCHED_FIFO priorities and CPU affinity over every CPU and times "
                                      "millions of messages per test: a benchmark, not a pass/fail check",
    "generic/prctl": "every program is x86-only (its Makefile builds nothing for arm64/riscv)",
    "generic/timers (destructive)": "set-2038, leap-a-day, set-tai, set-tz, clocksource-switch, "
                                    "change_skew, skew_consistency, freq-step, adjtick, valid-adjtimex, "
                                    "alarmtimer-suspend: they set the system clock or need RTC/suspend",
    "generic/timers (rtcpie, raw_skew)": "need /dev/rtc, or minutes of NTP-adjusted time",
    "generic/mm (hugetlb, THP, KSM, uffd, gup, hmm, migration, pkeys, soft-dirty, mkdirty, pagemap_ioctl)":
        "need hugetlbfs, transparent huge pages, userfaultfd, debugfs gup_test, NUMA, protection keys, "
        "/proc/self/mem or the PAGEMAP_SCAN ioctl; soft-dirty skips itself on arm64 and riscv64 (6.12 "
        "has no soft-dirty tracking there: no 'sd' in VmFlags, on the real kernels too)",
    "generic/proc (kthread, setns, hidepid, multiple-procfs, subset-pid, pid-vm, uptime-002)":
        "about kernel threads, namespaces (setns/unshare), mount options of procfs, or x86 vsyscall; "
        "uptime-002 pins to every CPU in turn",
    "generic/splice (splice_read, short_splice_read.sh)": "splice_read splices a file into its stdout, which "
        "short_splice_read.sh makes a pipe (| cat) over a list of /proc and /sys files: the runner gives a "
        "test no pipe for stdout, and the script needs a shell",
    "generic/timens": "time namespaces (CLONE_NEWTIME) are not modelled",
    "generic/user_events": "needs tracefs (/sys/kernel/tracing/user_events_*): no tracing in the model",
    "generic/ptrace (get_set_sud)": "syscall user dispatch (PR_SET_SYSCALL_USER_DISPATCH) is not modelled",
    "generic/filesystems (binderfs, devpts, overlayfs, fat, statmount)":
        "they mount filesystems or need binder/devpts",
    "generic/net (all but af_unix/)": "IP, netlink, packet sockets, namespaces and shell scripts over "
                                      "ip(8); epoll_busy_poll (AF_UNIX, but for net busy-polling) "
                                      "links -lcap (no static cross libcap)",
    "generic/vDSO (getrandom, chacha)": "they need vgetrandom in the vDSO (emukern's exports none, "
                                        "so glibc's getrandom is the syscall)",
    "generic/memfd (fuse_test, run_hugetlbfs_test.sh)": "fuse_test maps a file of a FUSE mount (fuse_mnt, "
        "libfuse) to check that a seal waits for pinned pages: the model has no FUSE; the hugetlbfs run "
        "is memfd_test with MFD_HUGETLB, and there is no hugetlbfs",
    "generic/mm (va_high_addr_switch, write_to_hugetlbfs, compaction_test, thuge-gen, transhuge-stress)":
        "va_high_addr_switch.sh and write_to_hugetlbfs need hugetlbfs pages; compaction_test and the "
        "transhuge/thuge programs measure physical-memory compaction and huge pages, which a "
        "page-granular process model has none of",
}


def select(arch: str | None = None, only: list[str] | None = None, suite: str = "vector") -> list[SelfTest]:
    """Tests of ``suite`` ("vector", "generic" or "all") and ``arch`` (both by default) whose id
    ends with, or program equals, one of ``only``."""
    out = []
    pool = {"vector": TESTS, "generic": GENERIC}.get(suite, [*TESTS, *GENERIC])
    for t in pool:
        if arch and t.arch != arch:
            continue
        if only and not any(t.id == o or t.id.endswith("/" + o) or t.name == o or
                            f"{t.dir}/{t.name}" == o for o in only):
            continue
        out.append(t)
    return out
