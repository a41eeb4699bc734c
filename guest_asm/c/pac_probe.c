/* Pointer authentication as a Linux user program sees it (arm64 only).  Built with
 * -march=armv8.3-a -mbranch-protection=pac-ret.  Every line printed is the same on any run of a
 * Linux kernel with address and generic authentication (keys are random, so only comparisons
 * of signatures are printed, never the signatures).
 *
 *   pac_probe [SELF]          the whole probe (forks and execs itself: SELF, else argv[0])
 *   pac_probe sig             prints this process's signature of a fixed pointer (for the parent)
 *   pac_probe corrupt         overwrites its own signed return address and returns through it
 *   pac_probe core            prints its keys (read through ptrace from a forked copy) and aborts
 *                             with RLIMIT_CORE unlimited: the core's PACA/PACG notes are those keys
 *
 * PR_PAC_RESET_KEYS invalidates every return address signed with the old key that is still on
 * the stack, so the resets run in a child that leaves with _exit().
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PR_PAC_RESET_KEYS
#define PR_PAC_RESET_KEYS 54
#endif
#ifndef PR_PAC_SET_ENABLED_KEYS
#define PR_PAC_SET_ENABLED_KEYS 60
#define PR_PAC_GET_ENABLED_KEYS 61
#endif
#define NT_ARM_PAC_MASK 0x406
#define NT_ARM_PACA_KEYS 0x407
#define NT_ARM_PACG_KEYS 0x408
#define NT_ARM_PAC_ENABLED_KEYS 0x40a

static const uint64_t PTR = 0x0000aaaabbbb1000ull, MOD = 0x1234;

static uint64_t pacia(uint64_t p, uint64_t m) {
    __asm__ volatile("pacia %0, %1" : "+r"(p) : "r"(m));
    return p;
}
static uint64_t autia(uint64_t p, uint64_t m) {
    __asm__ volatile("autia %0, %1" : "+r"(p) : "r"(m));
    return p;
}
static uint64_t pacda(uint64_t p, uint64_t m) {
    __asm__ volatile("pacda %0, %1" : "+r"(p) : "r"(m));
    return p;
}
static uint64_t pacga(uint64_t p, uint64_t m) {
    uint64_t r;
    __asm__ volatile("pacga %0, %1, %2" : "=r"(r) : "r"(p), "r"(m));
    return r;
}

static uint64_t child_sig(const char *self, const char *mode) {
    int fd[2];
    if (pipe(fd)) return 0;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        execl(self, self, mode, (char *)0);
        _exit(127);
    }
    close(fd[1]);
    char buf[64] = {0};
    ssize_t n = read(fd[0], buf, sizeof buf - 1);
    (void)n;
    close(fd[0]);
    waitpid(pid, 0, 0);
    return strtoull(buf, 0, 16);
}

__attribute__((noinline)) static void sink(volatile uint64_t *p) { (void)p; }

/* the saved x30 is at [x29 + 8] in this non-leaf function's frame record */
__attribute__((noinline)) static int victim(int flip) {
    volatile uint64_t *frame = __builtin_frame_address(0);
    sink(frame);
    if (flip) frame[1] ^= 1ull << 50;       /* one bit of the PAC */
    return flip;
}

static pid_t traced_copy(void) {
    pid_t pid = fork();
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        _exit(0);
    }
    waitpid(pid, 0, 0);
    return pid;
}

static void dump_keys(void) {
    pid_t pid = traced_copy();
    uint64_t a[8] = {0}, g[2] = {0};
    struct iovec iov = {a, sizeof a}, iog = {g, sizeof g};
    ptrace(PTRACE_GETREGSET, pid, NT_ARM_PACA_KEYS, &iov);
    ptrace(PTRACE_GETREGSET, pid, NT_ARM_PACG_KEYS, &iog);
    for (int i = 0; i < 8; i++) printf("%016llx", (unsigned long long)a[i]);
    printf("\n%016llx%016llx\n", (unsigned long long)g[0], (unsigned long long)g[1]);
    kill(pid, SIGKILL);
    waitpid(pid, 0, 0);
}

static void resets(uint64_t s) {
    pid_t pid = fork();
    if (pid) {
        waitpid(pid, 0, 0);
        return;
    }
    printf("RESET_KEYS bad key: %d %d\n", prctl(PR_PAC_RESET_KEYS, 1 << 5, 0, 0, 0), errno);
    printf("RESET_KEYS arg3: %d %d\n", prctl(PR_PAC_RESET_KEYS, 1, 1, 0, 0), errno);
    uint64_t d = pacda(PTR, MOD);
    printf("RESET_KEYS APIB: %d\n", prctl(PR_PAC_RESET_KEYS, 2, 0, 0, 0));
    printf("  APIA signature kept: %d\n", pacia(PTR, MOD) == s);
    printf("RESET_KEYS APIA: %d\n", prctl(PR_PAC_RESET_KEYS, 1, 0, 0, 0));
    uint64_t s2 = pacia(PTR, MOD);
    printf("  APIA signature changed: %d  APDA kept: %d\n", s2 != s, pacda(PTR, MOD) == d);
    printf("RESET_KEYS 0 (all): %d\n", prctl(PR_PAC_RESET_KEYS, 0, 0, 0, 0));
    printf("  APIA and APDA changed: %d %d\n", pacia(PTR, MOD) != s2, pacda(PTR, MOD) != d);
    _exit(0);
}

/* A traced copy that stops with an inline svc (no libc frame signed with the old keys is live
 * across the stop), then reports its APIA and APDA signatures through the pipe. */
static pid_t traced_signer(int wfd) {
    pid_t pid = fork();
    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        register long x8 __asm__("x8") = 172, x0 __asm__("x0"), x1 __asm__("x1");
        __asm__ volatile("svc #0" : "=r"(x0) : "r"(x8) : "memory");        /* getpid */
        x8 = 129, x1 = SIGSTOP;
        __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory"); /* kill */
        uint64_t sig[2] = {pacia(PTR, MOD), pacda(PTR, MOD)};
        write(wfd, sig, sizeof sig);
        _exit(0);
    }
    waitpid(pid, 0, 0);
    return pid;
}

static void regsets(uint64_t s) {
    int fd[2];
    pipe(fd);
    pid_t pid = traced_signer(fd[1]);
    uint64_t buf[8];
    struct iovec iov = {buf, sizeof buf};
    memset(buf, 0, sizeof buf);
    long r = ptrace(PTRACE_GETREGSET, pid, NT_ARM_PAC_MASK, &iov);
    printf("PAC_MASK: %ld len %zu data %#llx insn %#llx\n", r, iov.iov_len, (unsigned long long)buf[0],
           (unsigned long long)buf[1]);
    iov.iov_len = 16;
    r = ptrace(PTRACE_SETREGSET, pid, NT_ARM_PAC_MASK, &iov);
    printf("PAC_MASK set: %ld %s\n", r, r ? strerror(errno) : "");
    iov.iov_len = sizeof buf;
    r = ptrace(PTRACE_GETREGSET, pid, NT_ARM_PAC_ENABLED_KEYS, &iov);
    printf("PAC_ENABLED_KEYS: %ld len %zu %#llx\n", r, iov.iov_len, (unsigned long long)buf[0]);
    buf[0] = 1;
    iov.iov_len = 8;
    r = ptrace(PTRACE_SETREGSET, pid, NT_ARM_PAC_ENABLED_KEYS, &iov);
    iov.iov_len = 8;
    buf[0] = 0;
    ptrace(PTRACE_GETREGSET, pid, NT_ARM_PAC_ENABLED_KEYS, &iov);
    printf("PAC_ENABLED_KEYS set 1: %ld now %#llx\n", r, (unsigned long long)buf[0]);
    buf[0] = 0x10;
    r = ptrace(PTRACE_SETREGSET, pid, NT_ARM_PAC_ENABLED_KEYS, &iov);
    printf("PAC_ENABLED_KEYS set 0x10: %ld %s\n", r, r ? strerror(errno) : "");
    iov.iov_len = sizeof buf;
    memset(buf, 0, sizeof buf);
    r = ptrace(PTRACE_GETREGSET, pid, NT_ARM_PACA_KEYS, &iov);
    int nz = 0, distinct = 1;
    for (int i = 0; i < 8; i++) nz += buf[i] != 0;
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (buf[2 * i] == buf[2 * j] && buf[2 * i + 1] == buf[2 * j + 1]) distinct = 0;
    printf("PACA_KEYS: %ld len %zu nonzero words %d distinct %d\n", r, iov.iov_len, nz, distinct);
    /* write back the same keys with APIA changed: only the tracee's keys change */
    buf[0] ^= 1;
    r = ptrace(PTRACE_SETREGSET, pid, NT_ARM_PACA_KEYS, &iov);
    uint64_t back[8];
    struct iovec iov2 = {back, sizeof back};
    ptrace(PTRACE_GETREGSET, pid, NT_ARM_PACA_KEYS, &iov2);
    printf("PACA_KEYS set: %ld read back equal %d\n", r, memcmp(buf, back, 64) == 0);
    iov.iov_len = sizeof buf;
    r = ptrace(PTRACE_GETREGSET, pid, NT_ARM_PACG_KEYS, &iov);
    printf("PACG_KEYS: %ld len %zu\n", r, iov.iov_len);
    iov.iov_len = 24;
    r = ptrace(PTRACE_GETREGSET, pid, NT_ARM_PACA_KEYS, &iov);
    printf("PACA_KEYS len 24: %ld %s\n", r, r ? strerror(errno) : "");
    /* the tracee runs on with what was written: APIA changed, only APIA enabled */
    ptrace(PTRACE_CONT, pid, 0, 0);
    uint64_t sig[2] = {0, 0};
    read(fd[0], sig, sizeof sig);
    waitpid(pid, 0, 0);
    printf("tracee after SETREGSET: APIA signature changed %d, pacda a NOP %d\n", sig[0] != s && sig[0] != PTR,
           sig[1] == PTR);
    close(fd[0]);
    close(fd[1]);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "sig")) {
        printf("%llx\n", (unsigned long long)pacia(PTR, MOD));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "corrupt")) {
        victim(1);
        printf("corrupt: returned\n");
        return 0;
    }
    setvbuf(stdout, 0, _IONBF, 0);
    if (argc > 1 && !strcmp(argv[1], "core")) {
        struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
        setrlimit(RLIMIT_CORE, &rl);
        dump_keys();
        abort();
    }
    const char *self = argc > 1 && argv[1][0] == '/' ? argv[1] : argv[0];
    uint64_t s = pacia(PTR, MOD);
    printf("pacia signs: %d\n", s != PTR);
    printf("only PAC bits 54:48: %d\n", (s & ~0x007f000000000000ull) == PTR);
    printf("autia restores: %d\n", autia(s, MOD) == PTR);
    printf("autia wrong modifier: error code in bits 54:53: %#llx\n",
           (unsigned long long)(autia(s, MOD + 1) >> 53 & 3));
    printf("pacda differs from pacia: %d\n", pacda(PTR, MOD) != s);
    printf("pacga nonzero low half zero: %d %d\n", pacga(PTR, MOD) >> 32 != 0, (pacga(PTR, MOD) & 0xffffffff) == 0);
    printf("victim(0) returns: %d\n", victim(0));
    printf("GET_ENABLED_KEYS: %d\n", prctl(PR_PAC_GET_ENABLED_KEYS, 0, 0, 0, 0));
    printf("GET_ENABLED_KEYS bad arg: %d %d\n", prctl(PR_PAC_GET_ENABLED_KEYS, 1, 0, 0, 0), errno);

    int fd[2];
    pipe(fd);
    pid_t pid = fork();
    if (pid == 0) {
        uint64_t c = pacia(PTR, MOD);
        write(fd[1], &c, 8);
        _exit(0);
    }
    uint64_t c = 0;
    read(fd[0], &c, 8);
    waitpid(pid, 0, 0);
    printf("fork child signs the same: %d\n", c == s);

    uint64_t e1 = child_sig(self, "sig"), e2 = child_sig(self, "sig");
    printf("exec'd children sign differently from us: %d %d\n", e1 != s, e2 != s);
    printf("two exec'd children differ: %d\n", e1 != e2);

    resets(s);

    printf("SET_ENABLED_KEYS enabled not in keys: %d %d\n", prctl(PR_PAC_SET_ENABLED_KEYS, 1, 3, 0, 0), errno);
    printf("SET_ENABLED_KEYS APGA: %d %d\n", prctl(PR_PAC_SET_ENABLED_KEYS, 16, 0, 0, 0), errno);
    printf("SET_ENABLED_KEYS arg4: %d %d\n", prctl(PR_PAC_SET_ENABLED_KEYS, 1, 0, 1, 0), errno);
    printf("SET_ENABLED_KEYS IA off: %d\n", prctl(PR_PAC_SET_ENABLED_KEYS, 1, 0, 0, 0));
    printf("  GET_ENABLED_KEYS: %d  pacia is a NOP: %d\n", prctl(PR_PAC_GET_ENABLED_KEYS, 0, 0, 0, 0),
           pacia(PTR, MOD) == PTR);
    printf("SET_ENABLED_KEYS IA on: %d\n", prctl(PR_PAC_SET_ENABLED_KEYS, 1, 1, 0, 0));
    printf("  GET_ENABLED_KEYS: %d  pacia signs: %d\n", prctl(PR_PAC_GET_ENABLED_KEYS, 0, 0, 0, 0),
           pacia(PTR, MOD) != PTR);

    regsets(s);

    pid = fork();
    if (pid == 0) {
        execl(self, self, "corrupt", (char *)0);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("corrupted return address: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    return 0;
}
