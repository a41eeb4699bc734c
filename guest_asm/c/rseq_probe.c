/* rseq: registration (and glibc's own), the CPU fields, and the abort of a critical section
 * on preemption and on signal delivery (kernel/rseq.c semantics).  Prints one line per check;
 * the same lines under Linux (qemu-user passes rseq through to the host kernel for the errno
 * checks).  Usage: rseq_probe [cpu1]  -- "cpu1" also pins itself to CPU 1 and reads cpu_id. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RSEQ_SIG
#if defined(__riscv)
#define RSEQ_SIG 0xf1401073         /* Linux's selftests' value for RISC-V (csrr mhartid) */
#endif
#endif

#if defined(__aarch64__)
#define SIG_WORD ".inst 0xd428bc00\n"
/* spin_in_cs(&area->rseq_cs, &desc): arm the section, spin in it until the kernel aborts it */
asm(".text\n.p2align 2\n.globl spin_in_cs\n.type spin_in_cs,%function\nspin_in_cs:\n"
    "  str x1, [x0]\n"
    ".globl cs_start\ncs_start:\n"
    "1: b 1b\n"
    ".globl cs_post\ncs_post:\n"
    "  mov x0, #0\n  ret\n"
    SIG_WORD
    ".globl cs_abort\ncs_abort:\n"
    "  mov x0, #1\n  ret\n"
    ".word 0\n"
    ".globl cs_abort_bad\ncs_abort_bad:\n"
    "  mov x0, #2\n  ret\n");
#elif defined(__riscv)
asm(".text\n.p2align 2\n.option push\n.option norvc\n.globl spin_in_cs\n.type spin_in_cs,@function\nspin_in_cs:\n"
    "  sd a1, 0(a0)\n"
    ".globl cs_start\ncs_start:\n"
    "1: j 1b\n"
    ".globl cs_post\ncs_post:\n"
    "  li a0, 0\n  ret\n"
    ".word 0xf1401073\n"
    ".globl cs_abort\ncs_abort:\n"
    "  li a0, 1\n  ret\n"
    ".word 0\n"
    ".globl cs_abort_bad\ncs_abort_bad:\n"
    "  li a0, 2\n  ret\n.option pop\n");
#endif

extern long spin_in_cs(volatile uint64_t *cs_field, struct rseq_cs *desc);
extern char cs_start[], cs_post[], cs_abort[], cs_abort_bad[];

/* struct rseq as Linux 6.3+ defines it (glibc's header may stop at flags) */
struct krseq {
    uint32_t cpu_id_start, cpu_id;
    uint64_t rseq_cs;
    uint32_t flags, node_id, mm_cid;
} __attribute__((aligned(32)));

static struct krseq area;
static char big[64] __attribute__((aligned(32)));
static struct rseq_cs desc, bad_desc;
static volatile int signals;

static long sys_rseq(void *a, unsigned len, int flags, unsigned sig)
{
    long r = syscall(SYS_rseq, a, len, flags, sig);
    return r < 0 ? -errno : r;
}

static void on_alarm(int sig) { (void)sig; signals++; }

static void arm_vtimer(void)
{
    struct itimerval it = {{0, 0}, {0, 2000}};     /* 2 ms of this process's user time */
    setitimer(ITIMER_VIRTUAL, &it, NULL);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    /* glibc's own registration (every thread it starts, when the kernel has rseq) */
    if (__rseq_size > 0) {
        struct krseq *g = (struct krseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
        printf("glibc registered: size %u cpu_id %d sched_getcpu %d\n", __rseq_size,
               (int)g->cpu_id, sched_getcpu());
        printf("again, same args: %ld\n", sys_rseq(g, 32, 0, RSEQ_SIG));           /* EBUSY */
        printf("again, other area: %ld\n", sys_rseq(&area, 32, 0, RSEQ_SIG));      /* EINVAL */
        printf("again, other sig: %ld\n", sys_rseq(g, 32, 0, RSEQ_SIG + 1));       /* EPERM */
        printf("unregister, wrong sig: %ld\n", sys_rseq(g, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG + 1));
        printf("unregister, other len: %ld\n", sys_rseq(g, 64, RSEQ_FLAG_UNREGISTER, RSEQ_SIG));
        printf("unregister: %ld cpu_id now %d\n", sys_rseq(g, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG),
               (int)g->cpu_id);
    } else {
        printf("glibc registered: none\n");
    }
    printf("unregister, none registered: %ld\n", sys_rseq(&area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG));
    printf("misaligned: %ld\n", sys_rseq((char *)&area + 4, 32, 0, RSEQ_SIG));
    printf("too short: %ld\n", sys_rseq(&area, 16, 0, RSEQ_SIG));
    printf("unknown flag: %ld\n", sys_rseq(&area, 32, 2, RSEQ_SIG));
    printf("longer area: %ld\n", sys_rseq(big, 64, 0, RSEQ_SIG));
    printf("unregister longer: %ld\n", sys_rseq(big, 64, RSEQ_FLAG_UNREGISTER, RSEQ_SIG));
    area.cpu_id = 0xdeadbeef;
    printf("register: %ld cpu_id %d cpu_id_start %u mm_cid %u\n", sys_rseq(&area, 32, 0, RSEQ_SIG),
           (int)area.cpu_id, area.cpu_id_start, area.mm_cid);

    if (argc > 1 && !strcmp(argv[1], "cpu1")) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(1, &set);
        int r = sched_setaffinity(0, sizeof set, &set);
        printf("pinned to cpu 1: %d cpu_id %d\n", r, (int)area.cpu_id);
    }

    desc.start_ip = (uintptr_t)cs_start;
    desc.post_commit_offset = (uintptr_t)(cs_post - cs_start);
    desc.abort_ip = (uintptr_t)cs_abort;

    /* preemption: a sibling spins too, the tick switches us out mid-section */
    pid_t sib = fork();
    if (sib == 0)
        for (;;)
            ;
    long r = spin_in_cs(&area.rseq_cs, &desc);
    printf("preempted in the section: returned %ld (1: abort handler), rseq_cs now %llu\n", r,
           (unsigned long long)area.rseq_cs);
    kill(sib, SIGKILL);
    waitpid(sib, NULL, 0);

    /* signal delivery: alone on the CPU, a signal's delivery aborts the section */
    signal(SIGVTALRM, on_alarm);
    arm_vtimer();
    /* (on a real machine another task may switch us out first: that aborts it too, so go
     * back into the section until the signal has come) */
    do
        r = spin_in_cs(&area.rseq_cs, &desc);
    while (!signals);
    printf("signal in the section: returned %ld, handler ran %d\n", r, signals);

    /* a bad signature before abort_ip: SIGSEGV (in a child, which keeps the registration) */
    bad_desc = desc;
    bad_desc.abort_ip = (uintptr_t)cs_abort_bad;
    pid_t c = fork();
    if (c == 0) {
        arm_vtimer();
        spin_in_cs(&area.rseq_cs, &bad_desc);
        _exit(3);
    }
    int st = 0;
    waitpid(c, &st, 0);
    printf("bad signature: %s %d\n", WIFSIGNALED(st) ? "killed by" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));

    /* exec clears the registration: a fresh program could register another area */
    printf("done\n");
    return 0;
}
