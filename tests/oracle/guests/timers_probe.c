/* pselect6 (select/pselect), timerfd and signalfd: return values, errno, blocking, wake-ups.
   Prints only what Linux makes deterministic (counts >= 1, not raw times). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHOW(name, expr) do { errno = 0; long r_ = (long)(expr); \
    printf("%s = %ld%s%s\n", name, r_, r_ < 0 ? " " : "", r_ < 0 ? strerror(errno) : ""); } while (0)

static const char *self_path;

static void test_select(void) {
    int p[2];
    pipe(p);
    fd_set r, w;
    struct timeval tv = {0, 20000};
    FD_ZERO(&r); FD_SET(p[0], &r);
    SHOW("select empty pipe 20ms", select(p[0] + 1, &r, NULL, NULL, &tv));
    printf("  rbit %d tv %ld.%06ld\n", FD_ISSET(p[0], &r), (long)tv.tv_sec, (long)tv.tv_usec);
    FD_ZERO(&r); FD_SET(p[0], &r); FD_ZERO(&w); FD_SET(p[1], &w);
    tv.tv_sec = 0; tv.tv_usec = 0;
    SHOW("select poll w", select(p[1] + 1, &r, &w, NULL, &tv));
    printf("  rbit %d wbit %d\n", FD_ISSET(p[0], &r), FD_ISSET(p[1], &w));
    write(p[1], "x", 1);
    FD_ZERO(&r); FD_SET(p[0], &r); FD_SET(p[1], &r); FD_ZERO(&w); FD_SET(p[1], &w);
    SHOW("select r+w no timeout", select(p[1] + 1, &r, &w, NULL, NULL));
    printf("  rbit %d r1bit %d wbit %d\n", FD_ISSET(p[0], &r), FD_ISSET(p[1], &r), FD_ISSET(p[1], &w));
    char c; read(p[0], &c, 1);
    FD_ZERO(&r); FD_SET(40, &r);
    SHOW("select closed fd", select(41, &r, NULL, NULL, NULL));
    SHOW("select nfds -1", select(-1, NULL, NULL, NULL, NULL));
    tv.tv_sec = 0; tv.tv_usec = 2000000;
    SHOW("select bad timeout", select(0, NULL, NULL, NULL, &tv));
    struct timespec ts = {0, 5000000};
    SHOW("pselect nothing 5ms", pselect(0, NULL, NULL, NULL, &ts, NULL));
    /* a child's write wakes the select */
    pid_t pid = fork();
    if (pid == 0) {
        struct timespec d = {0, 30000000};
        nanosleep(&d, NULL);
        write(p[1], "y", 1);
        _exit(0);
    }
    FD_ZERO(&r); FD_SET(p[0], &r);
    tv.tv_sec = 5; tv.tv_usec = 0;
    SHOW("select woken by child", select(p[0] + 1, &r, NULL, NULL, &tv));
    printf("  rbit %d time left < 5s: %d\n", FD_ISSET(p[0], &r), tv.tv_sec < 5);
    waitpid(pid, NULL, 0);
    read(p[0], &c, 1);
    /* EOF: readable */
    close(p[1]);
    FD_ZERO(&r); FD_SET(p[0], &r);
    SHOW("select eof", select(p[0] + 1, &r, NULL, NULL, NULL));
    close(p[0]);
    /* a regular file is always ready */
    int rf = open("/dev/null", O_RDWR);     /* no ->poll: always ready */
    FD_ZERO(&r); FD_SET(rf, &r); FD_ZERO(&w); FD_SET(rf, &w);
    SHOW("select regular file", select(rf + 1, &r, &w, NULL, NULL));
    close(rf);
}

static volatile int got_usr2;
static void on_usr2(int s) { (void)s; got_usr2 = 1; }

static void test_select_signal(void) {
    int p[2];
    pipe(p);
    signal(SIGUSR2, on_usr2);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        struct timespec d = {0, 20000000};
        nanosleep(&d, NULL);
        kill(parent, SIGUSR2);
        _exit(0);
    }
    fd_set r;
    FD_ZERO(&r); FD_SET(p[0], &r);
    struct timeval tv = {5, 0};
    SHOW("select interrupted", select(p[0] + 1, &r, NULL, NULL, &tv));
    printf("  handler ran %d\n", got_usr2);
    waitpid(pid, NULL, 0);
    /* pselect's mask: USR2 blocked during the wait is not delivered */
    sigset_t blk, old;
    sigemptyset(&blk); sigaddset(&blk, SIGUSR2);
    sigprocmask(SIG_BLOCK, &blk, &old);
    raise(SIGUSR2);
    got_usr2 = 0;
    struct timespec ts = {0, 1000000};
    SHOW("pselect with USR2 blocked", pselect(p[0] + 1, &r, NULL, NULL, &ts, &blk));
    printf("  handler ran %d\n", got_usr2);
    sigset_t empty; sigemptyset(&empty);
    FD_ZERO(&r); FD_SET(p[0], &r);
    ts.tv_sec = 1; ts.tv_nsec = 0;
    SHOW("pselect unblocking USR2", pselect(p[0] + 1, &r, NULL, NULL, &ts, &empty));
    printf("  handler ran %d\n", got_usr2);
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(p[0]); close(p[1]);
}

static void test_timerfd(void) {
    SHOW("timerfd_create bad clock", timerfd_create(3, 0));
    SHOW("timerfd_create bad flags", timerfd_create(CLOCK_MONOTONIC, 1));
    int t = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    printf("timerfd_create ok %d\n", t >= 0);
    uint64_t n = 0;
    SHOW("read unarmed nonblock", read(t, &n, 8));
    SHOW("read short", read(t, &n, 4));
    struct itimerspec its = {{0, 0}, {0, 0}}, cur;
    its.it_value.tv_nsec = 1000000000;
    SHOW("settime bad nsec", timerfd_settime(t, 0, &its, NULL));
    its.it_value.tv_nsec = 0;
    SHOW("settime bad flags", timerfd_settime(t, 4, &its, NULL));
    SHOW("settime bad fd", timerfd_settime(99, 0, &its, NULL));
    SHOW("settime not a timerfd", timerfd_settime(1, 0, &its, NULL));
    SHOW("gettime not a timerfd", timerfd_gettime(0, &cur));
    SHOW("gettime unarmed", timerfd_gettime(t, &cur));
    printf("  value %ld.%09ld interval %ld.%09ld\n", (long)cur.it_value.tv_sec, cur.it_value.tv_nsec,
           (long)cur.it_interval.tv_sec, cur.it_interval.tv_nsec);
    /* periodic 10ms, blocking reads */
    int b = timerfd_create(CLOCK_MONOTONIC, 0);
    its.it_value.tv_sec = 0; its.it_value.tv_nsec = 10000000;
    its.it_interval.tv_sec = 0; its.it_interval.tv_nsec = 10000000;
    SHOW("settime periodic", timerfd_settime(b, 0, &its, NULL));
    uint64_t total = 0;
    for (int i = 0; i < 3; i++) {
        SHOW("read periodic", read(b, &n, 8));
        printf("  expirations >= 1: %d\n", n >= 1);
        total += n;
    }
    struct timespec d = {0, 35000000};
    nanosleep(&d, NULL);
    read(b, &n, 8);
    printf("after 35ms sleep expirations >= 3: %d\n", n >= 3);
    timerfd_gettime(b, &cur);
    printf("gettime interval %ld.%09ld value <= 10ms: %d\n", (long)cur.it_interval.tv_sec,
           cur.it_interval.tv_nsec, cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec <= 10000000);
    struct itimerspec oldv, zero = {{0, 0}, {0, 0}};
    SHOW("settime disarm", timerfd_settime(b, 0, &zero, &oldv));
    printf("  old interval %ld.%09ld\n", (long)oldv.it_interval.tv_sec, oldv.it_interval.tv_nsec);
    timerfd_gettime(b, &cur);
    printf("  disarmed value %ld.%09ld\n", (long)cur.it_value.tv_sec, cur.it_value.tv_nsec);
    /* abstime: 15ms from now, on CLOCK_REALTIME; and one in the past */
    int a = timerfd_create(CLOCK_REALTIME, 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    its.it_interval.tv_sec = its.it_interval.tv_nsec = 0;
    its.it_value = now;
    its.it_value.tv_nsec += 15000000;
    if (its.it_value.tv_nsec >= 1000000000) { its.it_value.tv_sec++; its.it_value.tv_nsec -= 1000000000; }
    SHOW("settime abstime cancel_on_set", timerfd_settime(a, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL));
    SHOW("read abstime", read(a, &n, 8));
    printf("  expirations %llu\n", (unsigned long long)n);
    its.it_value.tv_sec = 1; its.it_value.tv_nsec = 0;
    SHOW("settime abstime past", timerfd_settime(a, TFD_TIMER_ABSTIME, &its, NULL));
    SHOW("read past", read(a, &n, 8));
    printf("  expirations %llu\n", (unsigned long long)n);
    /* epoll */
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7}, out[2];
    epoll_ctl(ep, EPOLL_CTL_ADD, t, &ev);
    SHOW("epoll unarmed 0ms", epoll_wait(ep, out, 2, 0));
    its.it_value.tv_sec = 0; its.it_value.tv_nsec = 20000000;
    timerfd_settime(t, 0, &its, NULL);
    SHOW("epoll armed 20ms", epoll_wait(ep, out, 2, 1000));
    printf("  data %llu events %#x\n", (unsigned long long)out[0].data.u64, out[0].events);
    SHOW("read after epoll", read(t, &n, 8));
    printf("  expirations %llu\n", (unsigned long long)n);
    SHOW("epoll after read 0ms", epoll_wait(ep, out, 2, 0));
    /* select on a timerfd */
    its.it_value.tv_nsec = 5000000;
    timerfd_settime(t, 0, &its, NULL);
    fd_set r; FD_ZERO(&r); FD_SET(t, &r);
    SHOW("select timerfd", select(t + 1, &r, NULL, NULL, NULL));
    close(ep); close(t); close(b); close(a);
    SHOW("alarm clock (root)", timerfd_create(CLOCK_BOOTTIME_ALARM, 0) >= 0);
}

static void test_signalfd(void) {
    sigset_t m;
    sigemptyset(&m); sigaddset(&m, SIGUSR1);
    SHOW("signalfd bad flags", signalfd(-1, &m, 1));
    SHOW("signalfd bad fd", signalfd(77, &m, 0));
    SHOW("signalfd not a signalfd", signalfd(1, &m, 0));
    sigprocmask(SIG_BLOCK, &m, NULL);
    int s = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
    printf("signalfd ok %d\n", s >= 0);
    struct signalfd_siginfo si;
    SHOW("read nothing pending", read(s, &si, sizeof si));
    SHOW("read short", read(s, &si, 100));
    kill(getpid(), SIGUSR1);
    SHOW("read after kill", read(s, &si, sizeof si));
    printf("  signo %u code %d pid ok %d\n", si.ssi_signo, si.ssi_code, si.ssi_pid == (uint32_t)getpid());
    SHOW("read again", read(s, &si, sizeof si));
    /* blocking read woken by a child's kill; poll readiness via epoll */
    int sb = signalfd(-1, &m, 0);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        struct timespec d = {0, 20000000};
        nanosleep(&d, NULL);
        kill(parent, SIGUSR1);
        _exit(0);
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 3}, out[1];
    epoll_ctl(ep, EPOLL_CTL_ADD, sb, &ev);
    SHOW("epoll signalfd", epoll_wait(ep, out, 1, 2000));
    SHOW("blocking read", read(sb, &si, sizeof si));
    printf("  signo %u code %d pid is child %d\n", si.ssi_signo, si.ssi_code, si.ssi_pid == (uint32_t)pid);
    waitpid(pid, NULL, 0);
    /* update the mask of an existing signalfd; two signals in one read */
    sigaddset(&m, SIGUSR2);
    sigprocmask(SIG_BLOCK, &m, NULL);
    SHOW("signalfd update", signalfd(s, &m, 0) == s);
    kill(getpid(), SIGUSR2);
    kill(getpid(), SIGUSR1);
    struct signalfd_siginfo two[3];
    SHOW("read two", read(s, two, sizeof two));
    printf("  signos %u %u\n", two[0].ssi_signo, two[1].ssi_signo);
    /* SIGCHLD from a child's exit */
    sigset_t c; sigemptyset(&c); sigaddset(&c, SIGCHLD);
    sigprocmask(SIG_BLOCK, &c, NULL);
    int sc = signalfd(-1, &c, 0);
    pid = fork();
    if (pid == 0) _exit(5);
    SHOW("read SIGCHLD", read(sc, &si, sizeof si));
    printf("  signo %u code %d status %d pid is child %d\n", si.ssi_signo, si.ssi_code, si.ssi_status,
           si.ssi_pid == (uint32_t)pid);
    waitpid(pid, NULL, 0);
    close(ep); close(s); close(sb); close(sc);
}

int main(int argc, char **argv) {
    (void)argc;
    self_path = argv[0];
    setvbuf(stdout, NULL, _IONBF, 0);
    test_select();
    test_select_signal();
    test_timerfd();
    test_signalfd();
    return 0;
}
