/* fs.nr_open (fs/file.c sysctl_nr_open) and unshare(CLONE_FILES)'s copy of a table past it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int fd;

static void put(const char *s)
{
	lseek(fd, 0, SEEK_SET);
	int n = write(fd, s, strlen(s));
	printf("write %s: %s\n", strtok(strdup(s), "\n"), n < 0 ? strerror(errno) : "ok");
}

static void show(void)
{
	char buf[32] = {0};
	pread(fd, buf, sizeof(buf) - 1, 0);
	printf("nr_open %s", buf);
}

int main(void)
{
	fd = open("/proc/sys/fs/nr_open", O_RDWR);
	show();
	put("63\n");
	put("2147483647\n");
	put("2147483584\n");
	show();
	put("1049600\n");
	struct rlimit r = {1049600, 1049600};
	printf("setrlimit 1049600: %d\n", setrlimit(RLIMIT_NOFILE, &r));
	r.rlim_cur = r.rlim_max = 1049601;
	printf("setrlimit 1049601: %s\n", setrlimit(RLIMIT_NOFILE, &r) ? strerror(errno) : "ok");
	printf("dup2 past 1M: %d\n", dup2(2, 1048640));
	printf("unshare unshared: %d\n", unshare(CLONE_FILES));
	fflush(stdout);
	pid_t pid = syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0) {
		put("1048576\n");
		int e = unshare(CLONE_FILES) ? errno : 0;
		printf("unshare over nr_open: %s\n", e ? strerror(e) : "ok");
		close(1048640);
		e = unshare(CLONE_FILES) ? errno : 0;
		printf("unshare after close: %s\n", e ? strerror(e) : "ok");
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	put("1048576\n");
	return 0;
}
