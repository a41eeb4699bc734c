/* Hostile guest: argv[2] children (default 3), one after another, each maps argv[1] MiB and
 * touches a byte of every MiB of it, then holds it; each reports "child N ok" or the errno of
 * its failed mmap through a pipe.  The parent prints the reports in order, then kills and reaps
 * the children.  With the children's memory together past the machine's limit, the late ones
 * must fail: the limit counts every process. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 2560;
	int n = argc > 2 ? atoi(argv[2]) : 3;
	pid_t kids[64];
	setvbuf(stdout, NULL, _IONBF, 0);
	for (int i = 0; i < n && i < 64; i++) {
		int p[2];
		pipe(p);
		kids[i] = fork();
		if (kids[i] < 0) {
			printf("fork %d failed errno=%d\n", i, errno);
			n = i;
			break;
		}
		if (kids[i] == 0) {
			char *m = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			int err = m == MAP_FAILED ? errno : 0;
			if (!err)
				for (long off = 0; off < mib << 20; off += 1 << 20)
					m[off] = 1;
			write(p[1], &err, sizeof err);
			pause();
			_exit(0);
		}
		int err = -1;
		read(p[0], &err, sizeof err);
		if (err)
			printf("child %d mmap failed errno=%d\n", i, err);
		else
			printf("child %d ok\n", i);
		close(p[0]);
		close(p[1]);
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("done\n");
	return 0;
}
