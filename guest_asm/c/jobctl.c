/* Job control as a parent sees it, and poll/ppoll interrupted by signals (issue 12).
 * Run with one part name: stop, nocldstop, parent-stop, core, core-limit, ppoll, waitid,
 * cont-notify (Linux's timing of CLD_CONTINUED on one CPU; not compared with qemu), rusage (what
 * wait4's and waitid's rusage argument receive; the times are compared with getrusage, not
 * with qemu, whose host times have a tick's granularity).
 * Only the parent prints; SIGCHLD siginfo is recorded by the handler and printed at the end.
 * qemu-user is the oracle for every part but core-limit (qemu clears its own RLIMIT_CORE
 * before it re-raises a guest's fatal signal, so the host never reports a dump). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int nchld, codes[16], statuses[16];
static volatile int nalrm;

static void on_chld(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)uc;
    if (nchld < 16) { codes[nchld] = si->si_code; statuses[nchld] = si->si_status; nchld++; }
}
static void on_alrm(int sig) { (void)sig; nalrm++; }

static void chld_handler(int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_chld;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | flags;
    sigaction(SIGCHLD, &sa, NULL);
}

static void show(const char *what, int st) {
    printf("%s: status=%#x exited=%d(%d) signaled=%d(%d core=%d) stopped=%d(%d) continued=%d\n", what, st,
           WIFEXITED(st), WIFEXITED(st) ? WEXITSTATUS(st) : 0, WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0,
           WIFSIGNALED(st) ? WCOREDUMP(st) != 0 : 0, WIFSTOPPED(st), WIFSTOPPED(st) ? WSTOPSIG(st) : 0,
           WIFCONTINUED(st));
}

/* qemu-user hands a host SIGCHLD to the guest asynchronously, and two SIGCHLDs pending at once
 * are one: wait (a bounded while) for each before causing the next */
static void settle(int expected) {
    for (int i = 0; i < 500 && nchld < expected; i++)
        usleep(1000);
}

static void show_chld(int expected) {
    settle(expected);
    for (int i = 0; i < nchld; i++)
        printf("SIGCHLD %d: si_code=%d si_status=%d\n", i, codes[i], statuses[i]);
}

static void part_stop(int flags) {
    chld_handler(flags);
    int go[2];
    if (pipe(go)) { perror("pipe"); exit(1); }
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        raise(SIGSTOP);
        read(go[0], &c, 1);             /* exit only when the parent has seen CLD_CONTINUED */
        _exit(3);
    }
    int st;
    int quiet = flags & SA_NOCLDSTOP;
    pid_t r = waitpid(pid, &st, WUNTRACED);
    printf("waitpid WUNTRACED -> %s\n", r == pid ? "child" : "?");
    show("stop", st);
    r = waitpid(pid, &st, WUNTRACED | WNOHANG);
    printf("the stop is reported once: waitpid WNOHANG -> %d\n", (int)r);
    settle(quiet ? 0 : 1);
    kill(pid, SIGCONT);
    r = waitpid(pid, &st, WCONTINUED);
    printf("waitpid WCONTINUED -> %s\n", r == pid ? "child" : "?");
    show("continue", st);
    settle(quiet ? 0 : 2);
    write(go[1], "x", 1);
    r = waitpid(pid, &st, 0);
    show("exit", st);
    show_chld(flags & SA_NOCLDSTOP ? 1 : 3);
}

static void part_parent_stop(void) {
    chld_handler(0);
    int p[2];
    if (pipe(p)) { perror("pipe"); exit(1); }
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(p[1]);
        for (;;) read(p[0], &c, 1);       /* sleeps in pipe_read until killed */
    }
    close(p[0]);
    int st;
    kill(pid, SIGSTOP);
    waitpid(pid, &st, WUNTRACED);
    show("SIGSTOP from the parent", st);
    settle(1);
    kill(pid, SIGCONT);
    waitpid(pid, &st, WCONTINUED);
    show("SIGCONT", st);
    settle(2);
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    show("SIGTERM", st);
    show_chld(3);
}

static void core_child(int sig, rlim_t limit) {
    struct rlimit rl = {limit, RLIM_INFINITY}, got;
    if (setrlimit(RLIMIT_CORE, &rl)) { perror("setrlimit"); exit(1); }
    getrlimit(RLIMIT_CORE, &got);
    printf("RLIMIT_CORE soft=%llu hard=%s\n", (unsigned long long)got.rlim_cur,
           got.rlim_max == RLIM_INFINITY ? "unlimited" : "limited");
    int before = nchld;
    pid_t pid = fork();
    if (pid == 0) {
        if (sig == SIGSEGV)
            *(volatile int *)0 = 1;
        raise(sig);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    settle(before + 1);
    char what[32];
    snprintf(what, sizeof what, "killed by %d", sig);
    show(what, st);
}

static void part_core(void) {
    chld_handler(0);
    core_child(SIGQUIT, 0);
    core_child(SIGSEGV, 0);
    core_child(SIGABRT, 0);
    core_child(SIGTERM, 0);
    show_chld(4);
}

static void part_core_limit(void) {
    chld_handler(0);
    core_child(SIGQUIT, 1 << 20);       /* a core would be written: WCOREDUMP, CLD_DUMPED */
    core_child(SIGSEGV, 1);             /* below binfmt_elf's min_coredump (a page): none */
    core_child(SIGTERM, 1 << 20);       /* not a core signal */
    show_chld(3);
}

static void part_ppoll(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alrm;
    sa.sa_flags = SA_RESTART;           /* poll is never restarted after a handler: EINTR */
    sigaction(SIGALRM, &sa, NULL);
    int p[2];
    if (pipe(p)) { perror("pipe"); exit(1); }
    struct pollfd fds[3] = {{p[0], POLLIN, 0}, {p[1], POLLOUT, 0}, {-1, POLLIN, 0}};
    int r = poll(fds, 3, -1);
    printf("write end ready: poll -> %d revents %#x %#x %#x\n", r, fds[0].revents, fds[1].revents, fds[2].revents);
    struct itimerval it = {{0, 0}, {0, 10000}};        /* SIGALRM in 10 ms */
    setitimer(ITIMER_REAL, &it, NULL);
    errno = 0;
    r = poll(fds, 1, -1);
    printf("empty pipe, SIGALRM: poll -> %d errno %s alarms %d\n", r, r < 0 && errno == EINTR ? "EINTR" : "?", nalrm);
    write(p[1], "x", 1);
    fds[0].revents = 0;
    r = poll(fds, 1, 1000);
    printf("data: poll -> %d revents %#x\n", r, fds[0].revents);
    char c;
    read(p[0], &c, 1);
    r = poll(fds, 1, 0);
    printf("empty again, timeout 0: poll -> %d\n", r);
    /* ppoll with SIGALRM blocked: the timer fires during the wait and is held until ppoll
     * returns (timeout), then the original mask comes back and the handler runs */
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGALRM);
    setitimer(ITIMER_REAL, &it, NULL);
    struct timespec ts = {0, 200 * 1000 * 1000};
    r = ppoll(fds, 1, &ts, &block);
    /* Linux restores the mask as ppoll returns and runs the handler before user code resumes;
     * qemu-user hands the signal over only at the next syscall */
    int right_after = nalrm;
    getppid();
    printf("ppoll with SIGALRM blocked -> %d, alarms %d\n", r, nalrm);
    printf("alarms right after ppoll returned: %d\n", right_after);
    /* with SIGALRM unblocked by ppoll's mask while the caller blocks it */
    sigprocmask(SIG_BLOCK, &block, NULL);
    sigset_t none;
    sigemptyset(&none);
    setitimer(ITIMER_REAL, &it, NULL);
    errno = 0;
    r = ppoll(fds, 1, NULL, &none);
    sigset_t now;
    sigprocmask(SIG_SETMASK, NULL, &now);
    printf("ppoll unblocking SIGALRM -> %d errno %s, alarms %d, SIGALRM blocked again %d\n", r,
           r < 0 && errno == EINTR ? "EINTR" : "?", nalrm, sigismember(&now, SIGALRM));
    close(p[1]);
    fds[0].revents = 0;
    r = poll(fds, 1, -1);
    printf("writer closed: poll -> %d revents %#x\n", r, fds[0].revents);
    fds[0].fd = 1000;
    r = poll(fds, 1, 0);
    printf("bad fd: poll -> %d revents %#x\n", r, fds[0].revents);
}

static void show_si(const char *what, int r, siginfo_t *si, pid_t pid) {
    printf("%s: ret %d signo %d code %d status %d pid %s\n", what, r, si->si_signo, si->si_code,
           si->si_status, si->si_pid == pid ? "child" : si->si_pid == 0 ? "0" : "?");
}

static void part_waitid(void) {
    int go[2];
    if (pipe(go)) { perror("pipe"); exit(1); }
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        raise(SIGSTOP);
        read(go[0], &c, 1);
        _exit(7);
    }
    siginfo_t si;
    memset(&si, 0x55, sizeof si);
    int r = waitid(P_PID, pid, &si, WSTOPPED);
    show_si("WSTOPPED", r, &si, pid);
    memset(&si, 0x55, sizeof si);
    r = waitid(P_PID, pid, &si, WSTOPPED | WNOHANG);
    show_si("reported once (WNOHANG)", r, &si, pid);
    kill(pid, SIGCONT);
    r = waitid(P_ALL, 0, &si, WCONTINUED);
    show_si("WCONTINUED", r, &si, pid);
    write(go[1], "x", 1);
    r = waitid(P_PGID, 0, &si, WEXITED | WNOWAIT);
    show_si("WEXITED|WNOWAIT", r, &si, pid);
    r = waitid(P_PID, pid, &si, WEXITED);
    show_si("WEXITED", r, &si, pid);
    errno = 0;
    r = waitid(P_ALL, 0, &si, WEXITED | WNOHANG);
    printf("no child left: ret %d errno %s\n", r, errno == ECHILD ? "ECHILD" : "?");
    errno = 0;
    r = waitid(P_ALL, 0, &si, WNOHANG);
    printf("no WEXITED/WSTOPPED/WCONTINUED: ret %d errno %s\n", r, errno == EINVAL ? "EINVAL" : "?");
}

/* When the parent hears of a continue: Linux's prepare_signal(SIGCONT) only records
 * SIGNAL_CLD_CONTINUED; the stopped child reports CLD_CONTINUED from its own get_signal once it
 * runs again.  On one CPU the SIGCHLD is therefore not pending right after kill() returns, and
 * is after the parent yields the CPU to the child.  (A multi-core host races here: not a qemu
 * comparison.) */
static void part_cont_notify(void) {
    pid_t pid = fork();
    if (pid == 0) {
        for (;;)
            pause();
    }
    int st;
    sigset_t chld, pend;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    kill(pid, SIGSTOP);
    waitpid(pid, &st, WUNTRACED);
    show("stop", st);
    struct timespec zero = {0, 0};
    siginfo_t si;
    int got = sigtimedwait(&chld, &si, &zero);           /* the CLD_STOPPED one */
    printf("after the stop: SIGCHLD code %d\n", got == SIGCHLD ? si.si_code : -1);
    kill(pid, SIGCONT);
    sigpending(&pend);
    printf("right after kill(SIGCONT): SIGCHLD pending %d\n", sigismember(&pend, SIGCHLD));
    sched_yield();
    sigpending(&pend);
    printf("after sched_yield: SIGCHLD pending %d\n", sigismember(&pend, SIGCHLD));
    got = sigtimedwait(&chld, &si, &zero);
    printf("SIGCHLD code %d status %d\n", got == SIGCHLD ? si.si_code : -1, got == SIGCHLD ? si.si_status : -1);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    show("killed", st);
}

/* burn some user time (the child's rusage must show it) */
static void spin(long n) {
    volatile long x = 0;
    for (long i = 0; i < n; i++)
        x += i;
}

static long us(struct timeval tv) { return tv.tv_sec * 1000000L + tv.tv_usec; }

static void part_rusage(void) {
    struct rusage ru, rc;
    int st;
    /* 1. wait4 reaping a child: its rusage (RUSAGE_BOTH), which getrusage(RUSAGE_CHILDREN) then agrees with */
    pid_t pid = fork();
    if (pid == 0) { spin(300000); _exit(3); }
    memset(&ru, 0x55, sizeof ru);
    pid_t r = wait4(pid, &st, 0, &ru);
    getrusage(RUSAGE_CHILDREN, &rc);
    printf("wait4 reaped: ret %s status %#x utime>0 %d maxrss>0 %d\n", r == pid ? "child" : "?", st,
           us(ru.ru_utime) > 0, ru.ru_maxrss > 0);
    printf("wait4 rusage equals RUSAGE_CHILDREN: utime %d stime %d\n",
           us(ru.ru_utime) == us(rc.ru_utime), us(ru.ru_stime) == us(rc.ru_stime));
    /* 2. waitid reporting a stopped child (raw syscall: glibc's waitid has no rusage argument) */
    pid = fork();
    if (pid == 0) { spin(300000); raise(SIGSTOP); _exit(4); }
    siginfo_t si;
    memset(&ru, 0x55, sizeof ru);
    long w = syscall(SYS_waitid, P_PID, pid, &si, WSTOPPED, &ru);
    printf("waitid WSTOPPED: ret %ld code %d utime>0 %d\n", w, si.si_code, us(ru.ru_utime) > 0);
    /* 3. WNOHANG with nothing to report: the rusage is not written */
    memset(&ru, 0x55, sizeof ru);
    w = syscall(SYS_waitid, P_PID, pid, &si, WSTOPPED | WNOHANG, &ru);
    printf("waitid nothing to report: ret %ld rusage untouched %d\n", w, ru.ru_maxrss == 0x5555555555555555L);
    kill(pid, SIGCONT);
    waitpid(pid, &st, 0);
    /* 4. a bad rusage pointer: EFAULT, and the child is reaped all the same */
    pid = fork();
    if (pid == 0) _exit(5);
    errno = 0;
    w = syscall(SYS_wait4, pid, &st, 0, (void *)8);
    printf("wait4 bad rusage: ret %ld errno %s\n", w, errno == EFAULT ? "EFAULT" : strerror(errno));
    errno = 0;
    w = syscall(SYS_wait4, pid, &st, WNOHANG, NULL);
    printf("then: ret %ld errno %s\n", w, errno == ECHILD ? "ECHILD" : strerror(errno));
    pid = fork();
    if (pid == 0) _exit(6);
    errno = 0;
    w = syscall(SYS_waitid, P_PID, pid, &si, WEXITED, (void *)8);
    printf("waitid bad rusage: ret %ld errno %s\n", w, errno == EFAULT ? "EFAULT" : strerror(errno));
    errno = 0;
    w = syscall(SYS_waitid, P_PID, pid, &si, WEXITED | WNOHANG, NULL);
    printf("then: ret %ld errno %s\n", w, errno == ECHILD ? "ECHILD" : strerror(errno));
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *part = argc > 1 ? argv[1] : "";
    if (!strcmp(part, "stop")) part_stop(0);
    else if (!strcmp(part, "nocldstop")) part_stop(SA_NOCLDSTOP);
    else if (!strcmp(part, "parent-stop")) part_parent_stop();
    else if (!strcmp(part, "core")) part_core();
    else if (!strcmp(part, "core-limit")) part_core_limit();
    else if (!strcmp(part, "ppoll")) part_ppoll();
    else if (!strcmp(part, "waitid")) part_waitid();
    else if (!strcmp(part, "cont-notify")) part_cont_notify();
    else if (!strcmp(part, "rusage")) part_rusage();
    else { fprintf(stderr, "unknown part %s\n", part); return 2; }
    printf("done\n");
    return 0;
}
