/* process_mrelease (mm/oom_kill.c): the errors, and a reap of a process killed but not yet gone. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
	printf("%s: %s\n", what, r == -1 ? strerror(errno) : "ok");
}

int main(void)
{
	int p[2];
	char c;
	show("bad fd", syscall(448, -1, 0));
	show("not a pidfd", syscall(448, 0, 0));
	pipe(p);
	pid_t pid = fork();
	if (pid == 0) {
		write(p[1], "x", 1);
		for (;;)
			pause();
	}
	read(p[0], &c, 1);
	int fd = syscall(SYS_pidfd_open, pid, 0);
	show("flags", syscall(448, fd, 1));
	show("live", syscall(448, fd, 0));
	kill(pid, SIGKILL);
	long r = syscall(448, fd, 0);
	/* a race on a real kernel: the victim may be gone already (ESRCH) */
	printf("killed: %s\n", r == 0 ? "ok" : errno == ESRCH ? "gone already" : strerror(errno));
	waitpid(pid, NULL, 0);
	show("reaped", syscall(448, fd, 0));
	return 0;
}
