/* Hostile guest: execve(argv[1]) in a forked child; prints what the child ended with, or the
 * execve's errno if it failed. */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	pid_t c = fork();
	if (c == 0) {
		char *av[] = { argv[1], NULL }, *ev[] = { NULL };
		execve(argv[1], av, ev);
		_exit(100 + errno);
	}
	int st = 0;
	waitpid(c, &st, 0);
	if (WIFEXITED(st))
		printf("exit=%d\n", WEXITSTATUS(st));
	else
		printf("signal=%d\n", WTERMSIG(st));
	return 0;
}
