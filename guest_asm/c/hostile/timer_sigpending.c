/* Hostile guest: posix timers are charged to RLIMIT_SIGPENDING, as Linux preallocates each
 * timer's siginfo (sigqueue_alloc): with the limit at 8, the 9th timer_create is EAGAIN; a
 * timer_delete gives one back; a queued real-time signal takes one. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	struct rlimit rl = { 8, 8 };
	printf("setrlimit: %d\n", setrlimit(RLIMIT_SIGPENDING, &rl));
	timer_t t[16];
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN };
	int n = 0;
	while (n < 16 && timer_create(CLOCK_MONOTONIC, &ev, &t[n]) == 0)
		n++;
	printf("timers: %d then %s\n", n, strerrorname_np(errno));
	printf("delete: %d\n", timer_delete(t[--n]));
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 1);
	sigprocmask(SIG_BLOCK, &s, NULL);
	union sigval v = { .sival_int = 1 };
	printf("sigqueue: %d\n", sigqueue(getpid(), SIGRTMIN + 1, v));
	printf("create with one queued: %d %s\n", timer_create(CLOCK_MONOTONIC, &ev, &t[n]),
	       strerrorname_np(errno));
	return 0;
}
