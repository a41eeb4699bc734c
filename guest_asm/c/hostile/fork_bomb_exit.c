/* Hostile guest: a fork bomb that stops at the first refusal.  Every process forks until fork
 * fails, then exits; the first process reports how many processes the machine let it make
 * (its own forks plus its children's, counted through a shared page) and the errno, after
 * waiting for its own children. */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	long *made = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t first = getpid();
	int err = 0;
	for (;;) {
		pid_t pid = fork();
		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid > 0)
			__atomic_add_fetch(made, 1, __ATOMIC_SEQ_CST);
	}
	if (getpid() != first)
		_exit(0);
	while (wait(NULL) > 0)
		;
	printf("made %ld errno %d\n", *made, err);
	return 0;
}
