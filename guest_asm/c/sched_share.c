/* CPU shares under the scheduler: a parent and a forked child run the same short work loop
 * for a fixed stretch of CLOCK_MONOTONIC time, then print their iteration counts.
 *   sched_share nice N      the child runs at nice N (setpriority): shares follow the weights
 *   sched_share yield       the child calls sched_yield after every iteration (fp-stress's
 *                           fpsimd-test does), the parent never does
 * Usage: sched_share MODE [ARG] [MILLISECONDS] */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile unsigned long sink;

static unsigned long run(long long until, int yield)
{
    unsigned long it = 0;
    while (now_ns() < until) {
        for (int i = 0; i < 2000; i++)          /* one iteration's work: ~6000 instructions */
            sink += i ^ it;
        it++;
        if (yield)
            sched_yield();
    }
    return it;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "yield";
    int nice_v = !strcmp(mode, "nice") && argc > 2 ? atoi(argv[2]) : 0;
    int msarg = !strcmp(mode, "nice") ? 3 : 2;
    long long ms = argc > msarg ? atoll(argv[msarg]) : 200;
    long long until = now_ns() + ms * 1000000LL;
    int fds[2];
    pipe(fds);
    pid_t c = fork();
    if (c == 0) {
        if (nice_v)
            setpriority(PRIO_PROCESS, 0, nice_v);
        unsigned long n = run(until, !strcmp(mode, "yield"));
        write(fds[1], &n, sizeof n);
        _exit(0);
    }
    unsigned long mine = run(until, 0), child = 0;
    read(fds[0], &child, sizeof child);
    waitpid(c, NULL, 0);
    printf("%s: parent %lu child %lu\n", mode, mine, child);
    return 0;
}
