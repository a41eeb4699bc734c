/* Hostile guest: sleeps that saturate the clock.  argv[1]:
 *   nanosleep  nanosleep({INT64_MAX s}) - forever (Linux saturates at KTIME_MAX)
 *   futex      FUTEX_WAIT with a 2^40 s timeout on a word nobody wakes
 *   child      a child sleeps forever while the parent waits for it
 *   clockend   sleep to just before the end of the simulated clock (2^62 cycles), then spin */
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "nanosleep";
	if (!strcmp(mode, "nanosleep")) {
		struct timespec ts = { INT64_MAX, 999999999 };
		long r = syscall(SYS_nanosleep, &ts, NULL);
		printf("nanosleep returned %ld\n", r);
	} else if (!strcmp(mode, "futex")) {
		static uint32_t word;
		struct timespec ts = { (time_t)1 << 40, 0 };
		long r = syscall(SYS_futex, &word, FUTEX_WAIT, 0, &ts, NULL, 0);
		printf("futex returned %ld\n", r);
	} else if (!strcmp(mode, "child")) {
		if (fork() == 0) {
			struct timespec ts = { INT64_MAX, 0 };
			syscall(SYS_nanosleep, &ts, NULL);
			_exit(0);
		}
		int st;
		wait(&st);
		puts("child came back");
	} else {
		/* 2^62 ns at 1 GHz is the end: sleep to 27 ms before it, then spin */
		struct timespec ts = { 4611686018, 400000000 };
		syscall(SYS_nanosleep, &ts, NULL);
		puts("woke near the end of time");
		fflush(stdout);
		for (volatile unsigned long i = 0;; i++)
			;
	}
	return 0;
}
