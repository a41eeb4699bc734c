/* A small kselftest-style program for emukern's selftest runner: argv[1] picks the outcome.
 *   pass | skip | fail  print TAP like kselftest.h and exit with the ksft code
 *   enosys              call a syscall number emukern does not implement, report the failure
 *   proc                open a /proc file that does not exist under emukern, report the failure
 *   segv                die of SIGSEGV
 *   spin                loop forever, with a SIGTERM handler installed (a stress test's shape) */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void term(int sig) { (void)sig; printf("Terminated, no error\n"); _exit(0); }

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "pass";

	printf("TAP version 13\n1..2\n");
	if (!strcmp(m, "pass")) {
		printf("ok 1 first\nok 2 second\n# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0\n");
		return 0;
	}
	if (!strcmp(m, "skip")) {
		printf("ok 1 # SKIP no such feature\n# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0\n");
		return 4;
	}
	if (!strcmp(m, "fail")) {
		printf("ok 1 first\nnot ok 2 second\n# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:0 error:0\n");
		return 1;
	}
	if (!strcmp(m, "enosys")) {
		long r = syscall(450);		/* set_mempolicy_home_node: no NUMA in emukern, so not in its table */
		printf("not ok 1 set_mempolicy_home_node returned %ld\n", r);
		return 1;
	}
	if (!strcmp(m, "proc")) {
		int fd = open("/proc/emukern-selftest-missing", O_RDONLY);
		printf("not ok 1 open returned %d\n", fd);
		return 1;
	}
	if (!strcmp(m, "segv")) {
		fflush(stdout);
		*(volatile int *)8 = 1;
	}
	if (!strcmp(m, "spin")) {
		signal(SIGTERM, term);
		fflush(stdout);
		for (volatile unsigned long i = 0;; i++)
			;
	}
	return 1;
}
