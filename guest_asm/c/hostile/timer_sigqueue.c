/* Posix timers' preallocated siginfos count against RLIMIT_SIGPENDING when other signals are
 * sent (__sigqueue_alloc's ucounts), not only when timers are made: with the limit at 4 and four
 * timers, sigqueue() is EAGAIN while kill() still queues (override_rlimit); a timer that fires
 * still delivers its signal with its own data; deleting a timer makes room again.  Runs as an
 * otherwise unused uid so that the host's count (under qemu-user) holds only this process. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void show(const char *what, int r)
{
    printf("%s: %s\n", what, r == 0 ? "0" : strerrorname_np(errno));
}

int main(void)
{
    struct rlimit rl = { 4, 4 };
    timer_t t[4];
    struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN };
    struct itimerspec soon = { .it_value = { 0, 1000000 } };
    union sigval v = { .sival_int = 7 };
    sigset_t s;
    siginfo_t si;
    int n = 0;

    setvbuf(stdout, NULL, _IONBF, 0);
    setrlimit(RLIMIT_SIGPENDING, &rl);
    if (setresuid(4242, 4242, 4242)) {
        printf("setresuid: %s\n", strerrorname_np(errno));
        return 1;
    }
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN);
    sigaddset(&s, SIGRTMIN + 1);
    sigaddset(&s, SIGRTMIN + 2);
    sigprocmask(SIG_BLOCK, &s, NULL);
    while (n < 4 && timer_create(CLOCK_MONOTONIC, &ev, &t[n]) == 0) {
        ev.sigev_value.sival_int = 100 + n;
        n++;
    }
    printf("timers: %d\n", n);
    show("sigqueue with 4 timers", sigqueue(getpid(), SIGRTMIN + 1, v));
    show("kill with 4 timers", kill(getpid(), SIGRTMIN + 2));
    show("timer_settime", timer_settime(t[1], 0, &soon, NULL));
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN);
    printf("timer signal: %d code %d\n", sigwaitinfo(&s, &si) - SIGRTMIN, si.si_code);
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN + 2);
    printf("kill's signal: %d code %d\n", sigwaitinfo(&s, &si) - SIGRTMIN, si.si_code);
    show("timer_delete", timer_delete(t[3]));
    show("sigqueue with 3 timers", sigqueue(getpid(), SIGRTMIN + 1, v));
    show("sigqueue with 3 timers and one queued", sigqueue(getpid(), SIGRTMIN + 1, v));
    sigemptyset(&s);
    sigaddset(&s, SIGRTMIN + 1);
    printf("sigqueue's signal: %d value %d\n", sigwaitinfo(&s, &si) - SIGRTMIN, si.si_value.sival_int);
    return 0;
}
