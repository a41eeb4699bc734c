/* Hostile guest: descriptor numbers against RLIMIT_NOFILE, as Linux's fs/file.c checks them:
 * past the limit dup2 is EBADF, F_DUPFD EINVAL and a new descriptor EMFILE; a raised limit
 * (above 1024) is one the table really follows. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void show(const char *what, long r)
{
	if (r < 0)
		printf("%s: -1 %s\n", what, strerrorname_np(errno));
	else
		printf("%s: %ld\n", what, r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("nofile %ld %ld\n", (long)rl.rlim_cur, (long)rl.rlim_max);
	show("dup2 1024 at 1024", dup2(1, 1024));
	show("F_DUPFD 1024 at 1024", fcntl(1, F_DUPFD, 1024));
	show("F_DUPFD 1023 at 1024", fcntl(1, F_DUPFD, 1023));
	rl.rlim_cur = rl.rlim_max = 200000;
	show("setrlimit 200000", setrlimit(RLIMIT_NOFILE, &rl));
	show("dup2 100000", dup2(1, 100000));
	show("write 100000", write(100000, "", 0));
	show("F_DUPFD 150000", fcntl(1, F_DUPFD, 150000));
	show("F_DUPFD 200000", fcntl(1, F_DUPFD, 200000));
	show("dup2 200000", dup2(1, 200000));
	rl.rlim_cur = 8;
	show("setrlimit soft 8", setrlimit(RLIMIT_NOFILE, &rl));
	show("dup2 8", dup2(1, 8));
	show("dup2 7", dup2(1, 7));
	int last = 0, r;
	while ((r = dup(1)) >= 0)
		last = r;
	printf("last dup %d then %s\n", last, strerrorname_np(errno));
	show("close 100000", close(100000));
	return 0;
}
