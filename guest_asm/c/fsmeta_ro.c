/* fsmeta_ro: what a read-only root (and /proc) answers to the metadata calls */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <unistd.h>
int main(void)
{
	struct stat s;
	printf("chmod: %d\n", chmod("/w/f", 0600) ? -errno : 0);
	printf("chown: %d\n", chown("/w/f", 1, 1) ? -errno : 0);
	printf("utimensat: %d\n", utimensat(AT_FDCWD, "/w/f", NULL, 0) ? -errno : 0);
	printf("truncate: %d\n", truncate("/w/f", 0) ? -errno : 0);
	printf("mknod: %d\n", mknod("/w/n", S_IFREG | 0600, 0) ? -errno : 0);
	printf("chmod proc: %d\n", chmod("/proc/self/status", 0600) ? -errno : 0);
	printf("fifo: %d\n", mkfifo("/w/p", 0600) ? -errno : 0);
	int fd = open("/w/f", O_RDONLY);
	printf("flock: %d\n", flock(fd, LOCK_EX) ? -errno : 0);
	struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
	printf("futimens now: %d\n", futimens(fd, now) ? -errno : 0);
	stat("/dev/null", &s);
	printf("dev null mode %o\n", s.st_mode);
	return 0;
}
