/* Hostile guest: raises RLIMIT_NOFILE to NR_OPEN and fills the descriptor table with dup()
 * until it fails, then forks a child that keeps a copy of the table: descriptors cost memory,
 * so the machine's memory limit stops both (ENOMEM) before the host's memory does. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };
	int r = setrlimit(RLIMIT_NOFILE, &rl);
	long n = 0;
	while (dup(1) >= 0)
		n++;
	int err = errno;
	close(3);                       /* room for fork's own needs is not the point: the copy is */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int ferr = errno;
	if (pid > 0)
		waitpid(pid, NULL, 0);
	printf("setrlimit %d dups %ld errno %s fork %s\n", r, n, strerrorname_np(err),
	       pid < 0 ? strerrorname_np(ferr) : "ok");
	return 0;
}
