/* clone3 (kernel/fork.c): struct clone_args size checks, field and flag checks, a fork-like
 * child (exit signal, parent/child tid words, CLONE_CLEAR_SIGHAND) and a thread on its own
 * stack with its own TLS pointer (raw asm: the child never returns into syscall()).
 * Prints return values, errnos and what the children saw, never pids or addresses. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
struct args { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
              set_tid, set_tid_size, cgroup; };
#define T(name, expr) do { errno = 0; long _r = (long)(expr); \
    printf("%-30s %ld errno=%d\n", name, _r, _r < 0 ? errno : 0); } while (0)

static long c3(void *a, size_t size) { return syscall(SYS_clone3, a, size); }

/* a clone3 that must fail: if it does not, the child leaves at once */
static long c3_fail(void *a, size_t size) {
    long r = c3(a, size);
    if (r == 0) _exit(0);
    if (r > 0) waitpid(r, NULL, 0);
    return r;
}

static volatile int thread_ran;
static volatile uint64_t thread_tp;
static volatile int thread_ctid;

static void thread_fn(void) {
    uint64_t tp;
#ifdef __aarch64__
    asm volatile("mrs %0, tpidr_el0" : "=r"(tp));
#else
    asm volatile("mv %0, tp" : "=r"(tp));
#endif
    thread_tp = tp;
    thread_ran = 42;
}

static long raw_clone3(struct args *a, size_t sz, void (*fn)(void)) {
#ifdef __aarch64__
    register long x0 asm("x0") = (long)a;
    register long x1 asm("x1") = (long)sz;
    register long x2 asm("x2") = (long)fn;
    register long x8 asm("x8") = SYS_clone3;
    asm volatile("svc #0\n cbnz x0, 1f\n blr x2\n mov x0, #0\n mov x8, #93\n svc #0\n1:"
                 : "+r"(x0) : "r"(x1), "r"(x2), "r"(x8) : "memory", "x30");
    return x0;
#else
    register long a0 asm("a0") = (long)a;
    register long a1 asm("a1") = (long)sz;
    register long a2 asm("a2") = (long)fn;
    register long a7 asm("a7") = SYS_clone3;
    asm volatile("ecall\n bnez a0, 1f\n jalr a2\n li a0, 0\n li a7, 93\n ecall\n1:"
                 : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory", "ra");
    return a0;
#endif
}

static void on_usr1(int s) { (void)s; }

int main(void) {
    static unsigned char big[8192];
    struct args a;
    memset(&a, 0, sizeof a);
    a.exit_signal = SIGCHLD;
    T("size 0", c3_fail(&a, 0));
    T("size 63", c3_fail(&a, 63));
    T("size 4097", c3_fail(big, 4097));
    T("null args", c3_fail(NULL, 64));
    memcpy(big, &a, sizeof a);
    big[100] = 1;
    T("size 128 tail set", c3_fail(big, 128));
    big[100] = 0;
    T("size 128 tail clear", c3_fail(big, 128) > 0);
    T("size 64 (VER0)", c3_fail(&a, 64) > 0);
    T("size 80 (VER1)", c3_fail(&a, 80) > 0);

    struct args b = a;
    b.exit_signal = 65;                  T("exit_signal 65", c3_fail(&b, sizeof b));
    b.exit_signal = (1ULL << 32) | 17;   T("exit_signal hi bits", c3_fail(&b, sizeof b));
    b = a; b.flags = 0x11;               T("flags csignal bits", c3_fail(&b, sizeof b));
    b = a; b.flags = 0x400000;           T("flags CLONE_DETACHED", c3_fail(&b, sizeof b));
    b = a; b.flags = 1ULL << 40;         T("flags unknown bit 40", c3_fail(&b, sizeof b));
    b = a; b.flags = CLONE_SIGHAND | CLONE_VM | (1ULL << 32);
    T("SIGHAND|CLEAR_SIGHAND", c3_fail(&b, sizeof b));
    b = a; b.flags = CLONE_THREAD | CLONE_SIGHAND | CLONE_VM;
    T("THREAD with exit_signal", c3_fail(&b, sizeof b));
    b = a; b.flags = CLONE_PARENT;       T("PARENT with exit_signal", c3_fail(&b, sizeof b));
    b = a; b.flags = CLONE_THREAD;  b.exit_signal = 0;
    T("THREAD without SIGHAND", c3_fail(&b, sizeof b));
    b = a; b.flags = CLONE_SIGHAND;      T("SIGHAND without VM", c3_fail(&b, sizeof b));
    b = a; b.stack = (uint64_t)big;      T("stack without size", c3_fail(&b, sizeof b));
    b = a; b.stack_size = 4096;          T("size without stack", c3_fail(&b, sizeof b));
    b = a; b.set_tid = (uint64_t)big;    T("set_tid without size", c3_fail(&b, sizeof b));
    b = a; b.set_tid_size = 1;           T("set_tid_size without ptr", c3_fail(&b, sizeof b));
    b = a; b.set_tid_size = 33; b.set_tid = (uint64_t)big;
    T("set_tid_size 33", c3_fail(&b, sizeof b));
    b = a; b.flags = 1ULL << 33;         T("INTO_CGROUP VER1 size", c3_fail(&b, 80));

    /* fork-like: exit status, the tid words, cleared handlers */
    signal(SIGUSR1, on_usr1);
    signal(SIGUSR2, SIG_IGN);
    int ptid = 0, ctid = 0;
    b = a;
    b.flags = CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | (1ULL << 32);
    b.parent_tid = (uint64_t)&ptid;
    b.child_tid = (uint64_t)&ctid;
    long pid = c3(&b, sizeof b);
    if (pid == 0) {
        struct sigaction s1, s2;
        sigaction(SIGUSR1, NULL, &s1);
        sigaction(SIGUSR2, NULL, &s2);
        int code = (ctid == getpid()) | (s1.sa_handler == SIG_DFL) << 1 | (s2.sa_handler == SIG_IGN) << 2;
        _exit(code);
    }
    int st = 0;
    T("fork-like pid>0", pid > 0);
    T("fork-like waitpid", waitpid(pid, &st, 0) == pid);
    T("fork-like exited", WIFEXITED(st));
    T("child: ctid, usr1 dfl, usr2 ign", WEXITSTATUS(st));
    T("parent_tid word", ptid == pid);
    T("parent's usr1 kept", signal(SIGUSR1, SIG_DFL) == on_usr1);

    /* exit signal 0: only __WALL/__WCLONE wait finds it */
    b = a; b.exit_signal = 0;
    pid = c3(&b, sizeof b);
    if (pid == 0) _exit(3);
    T("exit_signal 0 __WALL", waitpid(pid, &st, __WALL) == pid && WEXITSTATUS(st) == 3);

    /* a thread on its own stack with its own TLS pointer */
    size_t ssz = 64 * 1024;
    char *stack = malloc(ssz);
    b = a;
    b.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
              CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    b.exit_signal = 0;
    b.stack = (uint64_t)stack;
    b.stack_size = ssz;
    b.tls = 0x123450;
    b.parent_tid = (uint64_t)&thread_ctid;
    b.child_tid = (uint64_t)&thread_ctid;
    long tid = raw_clone3(&b, sizeof b, thread_fn);
    T("thread tid>0", tid > 0);
    while (thread_ctid != 0)
        syscall(SYS_futex, &thread_ctid, FUTEX_WAIT, thread_ctid, NULL, NULL, 0);
    T("thread ran", thread_ran);
    T("thread tls", thread_tp == 0x123450);
    return 0;
}
