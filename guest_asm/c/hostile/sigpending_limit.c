/* Hostile guest: RLIMIT_SIGPENDING.  With the limit at 8 and a real-time signal blocked,
 * sigqueue fails with EAGAIN once 8 siginfos are queued; kill() of it still succeeds (the
 * signal is pending, its siginfo lost); tgkill (SI_TKILL) fails; then the queue drains. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static long ret(long r) { return r < 0 ? -errno : r; }

/* argv[1] "flood": queue until refused, at the default limit; prints how many went */
static int flood(int sig)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_BLOCK, &set, NULL);
	long n = 0;
	union sigval v = { .sival_int = 1 };
	while (sigqueue(getpid(), sig, v) == 0 && n < 10000000)
		n++;
	printf("flood=%ld errno=%d\n", n, errno);
	return 0;
}

int main(int argc, char **argv)
{
	int sig = SIGRTMIN + 2;
	if (argc > 1 && !strcmp(argv[1], "flood"))
		return flood(sig);
	struct rlimit rl = { 8, 8 };
	printf("setrlimit=%ld\n", ret(setrlimit(RLIMIT_SIGPENDING, &rl)));
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int ok = 0, eagain = 0;
	for (int i = 0; i < 12; i++) {
		union sigval v = { .sival_int = i };
		long r = ret(sigqueue(getpid(), sig, v));
		ok += r == 0;
		eagain += r == -EAGAIN;
	}
	printf("sigqueue ok=%d eagain=%d\n", ok, eagain);
	printf("kill=%ld\n", ret(kill(getpid(), sig)));
	printf("tgkill=%ld\n", ret(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig)));
	union sigval v = { .sival_int = 99 };
	printf("sigqueue_legacy=%ld\n", ret(sigqueue(getpid(), SIGUSR1, v)));
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	int n = 0, last = -1, codes_ok = 1;
	sigset_t rt;
	sigemptyset(&rt);
	sigaddset(&rt, sig);
	while (sigtimedwait(&rt, &si, &zero) == sig) {
		codes_ok &= si.si_code == SI_QUEUE && si.si_value.sival_int == n;
		last = si.si_value.sival_int;
		n++;
	}
	printf("drained=%d last=%d queued_info_ok=%d\n", n, last, codes_ok);
	sigset_t p;
	sigpending(&p);
	printf("usr1_pending=%d\n", sigismember(&p, SIGUSR1));
	int s = sigtimedwait(&set, &si, &zero);
	printf("usr1=%d code=%d value=%d\n", s == SIGUSR1, si.si_code, si.si_value.sival_int);
	printf("after_drain=%ld\n", ret(sigqueue(getpid(), sig, v)));
	return 0;
}
