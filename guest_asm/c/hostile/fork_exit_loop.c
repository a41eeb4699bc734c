/* Hostile guest: a fork/exit loop.  argv[1] = children (default 2000), argv[2] = MiB the parent
 * allocates and touches before forking (default 0), so every child carries a copy of it.
 * Each child exits at once; the parent reaps it with waitpid.  Prints the number reaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000;
	long mib = argc > 2 ? atol(argv[2]) : 0;
	char *big = NULL;
	if (mib > 0) {
		big = malloc(mib << 20);
		if (!big) { puts("malloc failed"); return 2; }
		memset(big, 0x5a, mib << 20);
	}
	long reaped = 0;
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) { printf("fork failed at %ld\n", i); return 3; }
		if (pid == 0)
			_exit(big ? big[i % (mib << 20)] & 1 : 0);
		int st;
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
			reaped++;
	}
	printf("reaped %ld\n", reaped);
	return 0;
}
