/* Hostile guest: argv[1] processes (the parent and forked children) each map and touch
 * argv[2] MiB, one region at a time, until an allocation fails.  Prints what each got. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int procs = argc > 1 ? atoi(argv[1]) : 1;
	long mib = argc > 2 ? atol(argv[2]) : 256;
	int regions = argc > 3 ? atoi(argv[3]) : 4;
	for (int p = 1; p < procs; p++) {
		pid_t pid = fork();
		if (pid < 0) {
			printf("fork %d failed errno=%d\n", p, errno);
			fflush(stdout);
			break;
		}
		if (pid == 0) {
			/* child: hold its copy and wait to be killed with the group */
			for (;;)
				pause();
		}
	}
	for (int i = 0; i < regions; i++) {
		void *m = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			printf("region %d failed errno=%d\n", i, errno);
			break;
		}
		memset(m, 1, 4096);
		printf("region %d ok\n", i);
	}
	fflush(stdout);
	_exit(0);
}
