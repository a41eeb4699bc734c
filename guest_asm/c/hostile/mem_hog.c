/* Hostile guest: maps argv[2] MiB regions (touching a page of each) until one fails, up to
 * argv[3] regions.  After the first region, it forks argv[1]-1 children that keep a copy of
 * the parent's memory and sleep, so the machine holds argv[1] copies.  Prints what it got. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int region(int i, long mib)
{
	void *m = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		printf("region %d failed errno=%d\n", i, errno);
		return -1;
	}
	memset(m, 1, 4096);
	printf("region %d ok\n", i);
	return 0;
}

int main(int argc, char **argv)
{
	int procs = argc > 1 ? atoi(argv[1]) : 1;
	long mib = argc > 2 ? atol(argv[2]) : 256;
	int regions = argc > 3 ? atoi(argv[3]) : 4;
	if (region(0, mib) < 0)
		goto out;
	for (int p = 1; p < procs; p++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			printf("fork %d failed errno=%d\n", p, errno);
			break;
		}
		if (pid == 0) {
			struct timespec ts = { 1000, 0 };   /* hold the copy until the parent is done */
			nanosleep(&ts, NULL);
			_exit(0);
		}
	}
	for (int i = 1; i < regions; i++)
		if (region(i, mib) < 0)
			break;
out:
	fflush(stdout);
	_exit(0);
}
