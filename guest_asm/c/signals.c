/* Signals as a static glibc program sees them: dispositions, masks, handlers, siginfo, restarts,
 * the alternate stack, synchronous signals, SIGCHLD, process groups.  Everything printed is
 * deterministic (no pids, no addresses), so emukern's output must equal qemu-user's.
 * Usage: signals [part]   (no argument: every part in turn; "die" ends with an uncaught SIGUSR1) */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t hits, depth, maxdepth, last_sig, last_code, on_alt;
static volatile long last_addr_ok;
static char altstack[65536];
static sigjmp_buf jb;
static int pfd[2];

static void h_count(int sig) { hits++; last_sig = sig; }

static void h_info(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    hits++; last_sig = sig; last_code = si->si_code;
}

static volatile sig_atomic_t calls;
static void h_nested(int sig) {
    calls++;
    depth++;
    if (depth > maxdepth) maxdepth = depth;
    if (calls < 3) raise(sig);            /* SA_NODEFER: re-enters at once; else after return */
    depth--;
}

static volatile int alt_eperm;
static void h_alt(int sig) {
    char here;
    (void)sig;
    stack_t again = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    alt_eperm = sigaltstack(&again, NULL) == -1 && errno == EPERM;
    on_alt = (&here >= altstack && &here < altstack + sizeof altstack);
    stack_t ss;
    sigaltstack(NULL, &ss);
    if (!(ss.ss_flags & SS_ONSTACK)) on_alt = 0;
    hits++;
}

static volatile char *fault_addr;
static void h_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    last_sig = sig; last_code = si->si_code;
    last_addr_ok = (si->si_addr == (void *)fault_addr);
    siglongjmp(jb, 1);
}

static void h_ill(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    last_sig = sig; last_code = si->si_code;
    siglongjmp(jb, 2);
}

static void h_write_pipe(int sig) { (void)sig; hits++; if (write(pfd[1], "x", 1) != 1) _exit(9); }

static void on(int sig, void (*h)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL)) { perror("sigaction"); exit(2); }
}

static void set_info(int sig, void (*h)(int, siginfo_t *, void *), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = flags | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL)) { perror("sigaction"); exit(2); }
}

static void arm_timer(long usec) {
    struct itimerval it = {{0, 0}, {usec / 1000000, usec % 1000000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static void part_dispositions(void) {
    struct sigaction sa, old;
    hits = 0;
    on(SIGUSR1, h_count, 0);
    raise(SIGUSR1);
    printf("raise: hits=%d sig=%d\n", hits, last_sig);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h_count;
    printf("sigaction(SIGKILL)=%d errno=%s\n", sigaction(SIGKILL, &sa, NULL), strerror(errno));
    printf("sigaction(SIGSTOP)=%d errno=%s\n", sigaction(SIGSTOP, &sa, NULL), strerror(errno));
    printf("sigaction(65)=%d errno=%s\n", sigaction(65, &sa, NULL), strerror(errno));
    sigaction(SIGUSR1, NULL, &old);
    printf("old handler is h_count: %d, flags&SA_SIGINFO=%d\n", old.sa_handler == h_count,
           !!(old.sa_flags & SA_SIGINFO));
    on(SIGUSR2, SIG_IGN, 0);
    raise(SIGUSR2);
    printf("ignored SIGUSR2 survived\n");
    on(SIGUSR2, SIG_DFL, 0);
    raise(SIGCHLD); raise(SIGURG); raise(SIGWINCH); raise(SIGCONT);
    printf("default-ignored SIGCHLD/SIGURG/SIGWINCH/SIGCONT survived\n");
    on(SIGUSR1, h_count, SA_RESETHAND);
    hits = 0;
    raise(SIGUSR1);
    sigaction(SIGUSR1, NULL, &old);
    printf("SA_RESETHAND: hits=%d now SIG_DFL=%d\n", hits, old.sa_handler == SIG_DFL);
    set_info(SIGRTMIN + 1, h_info, 0);
    union sigval v = {.sival_int = 42};
    sigqueue(getpid(), SIGRTMIN + 1, v);
    printf("sigqueue: sig=SIGRTMIN+%d code=%d\n", last_sig - SIGRTMIN, last_code);
}

static void part_masks(void) {
    sigset_t set, old, pend;
    hits = 0;
    on(SIGUSR1, h_count, 0);
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &old);
    raise(SIGUSR1);
    raise(SIGUSR1);                        /* a standard signal does not queue twice */
    sigpending(&pend);
    printf("blocked: hits=%d pending(SIGUSR1)=%d\n", hits, sigismember(&pend, SIGUSR1));
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("unblocked: hits=%d\n", hits);
    /* real-time signals queue, and are delivered lowest first */
    on(SIGRTMIN, h_count, 0);
    on(SIGRTMIN + 2, h_count, 0);
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigaddset(&set, SIGRTMIN + 2);
    sigprocmask(SIG_BLOCK, &set, NULL);
    hits = 0;
    raise(SIGRTMIN + 2); raise(SIGRTMIN); raise(SIGRTMIN);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    printf("rt queued: hits=%d last=SIGRTMIN+%d\n", hits, last_sig - SIGRTMIN);
    printf("sigprocmask(how=7)=%d errno=%s\n", sigprocmask(7, &set, NULL), strerror(errno));
    /* sigtimedwait takes a blocked signal synchronously */
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, NULL);
    raise(SIGUSR2);
    siginfo_t si;
    struct timespec ts = {0, 0};
    int s = sigtimedwait(&set, &si, &ts);
    printf("sigtimedwait=%s code=%d\n", s == SIGUSR2 ? "SIGUSR2" : "?", si.si_code);
    s = sigtimedwait(&set, &si, &ts);
    printf("sigtimedwait(empty)=%d errno=%s\n", s, strerror(errno));
    ts.tv_nsec = 2000000;
    s = sigtimedwait(&set, &si, &ts);
    printf("sigtimedwait(2ms)=%d errno=%s\n", s, strerror(errno));
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void part_nested(void) {
    depth = maxdepth = calls = 0;
    on(SIGUSR1, h_nested, SA_NODEFER);
    raise(SIGUSR1);
    printf("SA_NODEFER nesting depth=%d calls=%d\n", maxdepth, calls);
    depth = maxdepth = calls = 0;
    on(SIGUSR1, h_nested, 0);            /* deferred: the re-raise waits for the return */
    raise(SIGUSR1);
    printf("deferred nesting depth=%d calls=%d\n", maxdepth, calls);
}

static void part_altstack(void) {
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0}, old;
    printf("sigaltstack=%d\n", sigaltstack(&ss, &old));
    printf("old disabled=%d\n", !!(old.ss_flags & SS_DISABLE));
    stack_t small = {.ss_sp = altstack, .ss_size = 512, .ss_flags = 0};
    printf("too small=%d errno=%s\n", sigaltstack(&small, NULL), strerror(errno));
    stack_t bad = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 77};
    printf("bad flags=%d errno=%s\n", sigaltstack(&bad, NULL), strerror(errno));
    hits = on_alt = 0;
    on(SIGUSR1, h_alt, SA_ONSTACK);
    raise(SIGUSR1);
    printf("handler on altstack=%d hits=%d changing it there: EPERM=%d\n", on_alt, hits, alt_eperm);
    on(SIGUSR1, h_alt, 0);
    raise(SIGUSR1);
    printf("without SA_ONSTACK on altstack=%d\n", on_alt);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
}

static void part_sync(void) {
    set_info(SIGSEGV, h_segv, 0);
    fault_addr = (volatile char *)16;
    if (sigsetjmp(jb, 1) == 0) { *fault_addr = 1; printf("no fault?\n"); }
    printf("SIGSEGV: sig=%d code=%s addr_ok=%d\n", last_sig, last_code == SEGV_MAPERR ? "SEGV_MAPERR" : "?",
           (int)last_addr_ok);
    static const char ro[4096] __attribute__((aligned(4096))) = "read only";
    fault_addr = (volatile char *)ro;
    if (sigsetjmp(jb, 1) == 0) { *fault_addr = 1; printf("no fault?\n"); }
    printf("SIGSEGV: code=%s addr_ok=%d\n", last_code == SEGV_ACCERR ? "SEGV_ACCERR" : "?", (int)last_addr_ok);
    /* the mask was restored by siglongjmp: SIGSEGV is deliverable again */
    set_info(SIGILL, h_ill, 0);
    if (sigsetjmp(jb, 1) == 0) {
#if defined(__aarch64__)
        __asm__ volatile(".inst 0x00000000");
#else
        __asm__ volatile(".word 0x00000000");
#endif
    }
    printf("SIGILL: sig=%d code=%d (ILL_ILLOPC=%d)\n", last_sig, last_code, ILL_ILLOPC);
    set_info(SIGTRAP, h_ill, 0);
    if (sigsetjmp(jb, 1) == 0) {
#if defined(__aarch64__)
        __asm__ volatile("brk #0");
#else
        __asm__ volatile("ebreak");
#endif
    }
    printf("SIGTRAP: sig=%d code=%s\n", last_sig, last_code == TRAP_BRKPT ? "TRAP_BRKPT" : "?");
}

static void part_eintr(void) {
    char c;
    ssize_t n;
    if (pipe(pfd)) exit(3);
    hits = 0;
    on(SIGALRM, h_count, 0);              /* no SA_RESTART: read fails with EINTR */
    arm_timer(5000);
    n = read(pfd[0], &c, 1);
    printf("read without SA_RESTART=%zd errno=%s hits=%d\n", n, strerror(errno), hits);
    hits = 0;
    on(SIGALRM, h_write_pipe, SA_RESTART); /* the read restarts and gets the handler's byte */
    arm_timer(5000);
    n = read(pfd[0], &c, 1);
    printf("read with SA_RESTART=%zd c=%c hits=%d\n", n, c, hits);
    on(SIGALRM, h_count, 0);
    arm_timer(10000);
    struct timespec req = {2, 0}, rem = {0, 0};
    int r = nanosleep(&req, &rem);
    printf("nanosleep=%d errno=%s rem_ok=%d\n", r, strerror(errno),
           rem.tv_sec == 1 && rem.tv_nsec > 900000000L);
    /* sigsuspend: the temporary mask lets the blocked SIGALRM in, then the old mask is back */
    sigset_t set, old, wait;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, &old);
    hits = 0;
    arm_timer(3000);
    sigemptyset(&wait);
    r = sigsuspend(&wait);
    sigprocmask(SIG_BLOCK, NULL, &old);
    printf("sigsuspend=%d errno=%s hits=%d SIGALRM blocked again=%d\n", r, strerror(errno), hits,
           sigismember(&old, SIGALRM));
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    /* an interval timer fires repeatedly */
    hits = 0;
    struct itimerval it = {{0, 2000}, {0, 2000}}, cur;
    setitimer(ITIMER_REAL, &it, NULL);
    while (hits < 3) pause();
    getitimer(ITIMER_REAL, &cur);
    printf("interval timer: hits=%d interval=%ldus\n", hits, (long)cur.it_interval.tv_usec);
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
    close(pfd[0]); close(pfd[1]);
    /* ITIMER_VIRTUAL / ITIMER_PROF count the process's CPU time */
    hits = 0;
    on(SIGVTALRM, h_count, 0);
    on(SIGPROF, h_count, 0);
    struct itimerval vt = {{0, 0}, {0, 3000}};
    setitimer(ITIMER_VIRTUAL, &vt, NULL);
    while (hits < 1) {}
    printf("ITIMER_VIRTUAL: %s\n", last_sig == SIGVTALRM ? "SIGVTALRM" : "?");
    hits = 0;
    setitimer(ITIMER_PROF, &vt, NULL);
    while (hits < 1) {}
    printf("ITIMER_PROF: %s\n", last_sig == SIGPROF ? "SIGPROF" : "?");
    /* a futex wait (sem_wait) and wait4 are interrupted too */
    sem_t sem;
    sem_init(&sem, 0, 0);
    on(SIGALRM, h_count, 0);
    arm_timer(3000);
    r = sem_wait(&sem);
    printf("sem_wait=%d errno=%s\n", r, strerror(errno));
    pid_t p = fork();
    if (p == 0) { for (;;) pause(); }
    arm_timer(3000);
    int st;
    r = waitpid(p, &st, 0);
    printf("waitpid=%d errno=%s\n", r, strerror(errno));
    kill(p, SIGKILL);
    r = waitpid(p, &st, 0);
    printf("after SIGKILL: reaped=%d killed by SIGKILL=%d\n", r == p, WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void h_chld(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    last_sig = sig; last_code = si->si_code; hits = si->si_status;
}

static volatile int timer_value_ok, timer_code_ok;
static void h_timer(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)uc;
    hits++;
    timer_code_ok = si->si_code == SI_TIMER;
    timer_value_ok = si->si_value.sival_int == 77;
}

static void part_posix_timer(void) {
    timer_t t;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGUSR1;
    sev.sigev_value.sival_int = 77;
    set_info(SIGUSR1, h_timer, 0);
    printf("timer_create=%d\n", timer_create(CLOCK_MONOTONIC, &sev, &t));
    struct itimerspec its = {{0, 2000000}, {0, 2000000}}, cur;
    printf("timer_settime=%d\n", timer_settime(t, 0, &its, NULL));
    hits = 0;
    while (hits < 3) pause();
    timer_gettime(t, &cur);
    printf("posix timer: hits=%d SI_TIMER=%d value=%d interval=%ldns\n", hits, timer_code_ok, timer_value_ok,
           (long)cur.it_interval.tv_nsec);
    printf("timer_delete=%d\n", timer_delete(t));
    printf("timer_delete again=%d errno=%s\n", timer_delete(t), strerror(errno));
    signal(SIGUSR1, SIG_DFL);
}

static void part_children(void) {
    int st;
    set_info(SIGCHLD, h_chld, 0);
    pid_t p = fork();
    if (p == 0) _exit(7);
    pid_t w = waitpid(p, &st, 0);      /* do_wait finds the zombie before it looks at signals */
    printf("first waitpid returned the child: %d\n", w == p);
    while (w < 0 && errno == EINTR) w = waitpid(p, &st, 0);
    printf("child exited %d; SIGCHLD code=%s status=%d\n", WEXITSTATUS(st),
           last_code == CLD_EXITED ? "CLD_EXITED" : "?", hits);
    p = fork();
    if (p == 0) { for (;;) pause(); }
    kill(p, SIGTERM);
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {}
    printf("child killed by %s; SIGCHLD code=%s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM ? "SIGTERM" : "?",
           last_code == CLD_KILLED ? "CLD_KILLED" : "?");
    /* kill(-pgid): a child in its own process group */
    p = fork();
    if (p == 0) { setpgid(0, 0); for (;;) pause(); }
    setpgid(p, p);
    printf("kill(-pgid)=%d\n", kill(-p, SIGUSR2));
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {}
    printf("group member killed by %s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR2 ? "SIGUSR2" : "?");
    printf("kill(-pgid of nobody)=%d errno=%s\n", kill(-p, SIGUSR2), strerror(errno));
    printf("kill(0, 0)=%d\n", kill(0, 0));
    printf("kill(getpid(), 99)=%d errno=%s\n", kill(getpid(), 99), strerror(errno));
    /* SIGCHLD ignored: children are reaped at once, wait finds none */
    signal(SIGCHLD, SIG_IGN);
    p = fork();
    if (p == 0) _exit(3);
    int r = waitpid(p, &st, 0);
    printf("SIG_IGN SIGCHLD: waitpid=%d errno=%s\n", r, strerror(errno));
    signal(SIGCHLD, SIG_DFL);
}

static volatile pid_t handler_tid;
static void h_tid(int sig) { (void)sig; handler_tid = (pid_t)syscall(SYS_gettid); hits++; }
static volatile pid_t worker_tid;
static volatile int worker_go, worker_stop;

static void *worker(void *arg) {
    (void)arg;
    worker_tid = (pid_t)syscall(SYS_gettid);
    worker_go = 1;
    while (!worker_stop) sched_yield();
    return NULL;
}

static void part_threads(void) {
    pthread_t t;
    sigset_t set;
    hits = 0;
    on(SIGUSR1, h_tid, 0);
    pthread_create(&t, NULL, worker, NULL);
    while (!worker_go) sched_yield();
    /* pthread_kill (tgkill): the signal runs on that thread */
    pthread_kill(t, SIGUSR1);
    while (hits < 1) sched_yield();
    printf("pthread_kill ran on the target thread: %d\n", handler_tid == worker_tid);
    /* a process-directed signal goes to a thread that does not block it */
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), SIGUSR1);
    while (hits < 2) sched_yield();
    printf("kill() with main blocking it ran on the worker: %d\n", handler_tid == worker_tid);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    printf("tgkill(wrong tgid)=%ld errno=%s\n", syscall(SYS_tgkill, getpid() + 1000, worker_tid, SIGUSR1),
           strerror(errno));
    worker_stop = 1;
    pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *part = argc > 1 ? argv[1] : "all";
    int all = !strcmp(part, "all");
    if (all || !strcmp(part, "dispositions")) part_dispositions();
    if (all || !strcmp(part, "masks")) part_masks();
    if (all || !strcmp(part, "nested")) part_nested();
    if (all || !strcmp(part, "altstack")) part_altstack();
    if (all || !strcmp(part, "sync")) part_sync();
    if (all || !strcmp(part, "eintr")) part_eintr();
    if (all || !strcmp(part, "children")) part_children();
    if (all || !strcmp(part, "threads")) part_threads();
    if (all || !strcmp(part, "posix-timer")) part_posix_timer();
    if (!strcmp(part, "exec")) {             /* execve keeps ignored signals and the mask only */
        sigset_t set;
        on(SIGUSR1, h_count, 0);
        signal(SIGUSR2, SIG_IGN);
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        /* argv[2]: the program's path as the guest sees it (execve resolves in the guest root) */
        const char *self = argc > 2 ? argv[2] : argv[0];
        execl(self, self, "after-exec", (char *)NULL);
        perror("execl");
        return 1;
    }
    if (!strcmp(part, "after-exec")) {
        struct sigaction a1, a2;
        sigset_t cur;
        sigaction(SIGUSR1, NULL, &a1);
        sigaction(SIGUSR2, NULL, &a2);
        sigprocmask(SIG_BLOCK, NULL, &cur);
        printf("after exec: SIGUSR1 %s, SIGUSR2 %s, SIGINT blocked=%d\n",
               a1.sa_handler == SIG_DFL ? "SIG_DFL" : "?", a2.sa_handler == SIG_IGN ? "SIG_IGN" : "?",
               sigismember(&cur, SIGINT));
    }
    if (!strcmp(part, "die")) {
        printf("raising an uncaught SIGUSR1\n");
        signal(SIGUSR1, SIG_DFL);
        raise(SIGUSR1);
        printf("still alive?\n");
    }
    printf("done\n");
    return 0;
}
