/* A memfd reopened through /proc/self/fd/N: a second open file description of the same inode. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int reopen(int fd, int flags)
{
	char path[64];
	sprintf(path, "/proc/self/fd/%d", fd);
	return open(path, flags);
}

int main(void)
{
	char buf[16] = {0};
	int fd = memfd_create("probe", MFD_ALLOW_SEALING);
	write(fd, "hello", 5);
	int fd2 = reopen(fd, O_RDWR);
	printf("reopen: %s\n", fd2 >= 0 ? "ok" : strerror(errno));
	struct stat a, b;
	fstat(fd, &a);
	fstat(fd2, &b);
	printf("same inode: %d size %ld\n", a.st_ino == b.st_ino && a.st_dev == b.st_dev, (long)b.st_size);
	printf("own position: %zd %s\n", read(fd2, buf, 5), buf);
	pwrite(fd2, "J", 1, 0);
	pread(fd, buf, 5, 0);
	printf("write through it: %s\n", buf);
	char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, 0);
	printf("shared map: %.5s\n", p == MAP_FAILED ? "failed" : p);
	munmap(p, 4096);
	fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK);
	printf("seals seen: %#x\n", fcntl(fd2, F_GET_SEALS));
	printf("sealed write: %s\n", write(fd2, "x", 1) < 0 ? strerror(errno) : "ok");
	int fd3 = reopen(fd, O_RDWR | O_TRUNC);
	printf("O_TRUNC under F_SEAL_SHRINK: %s\n", fd3 < 0 ? strerror(errno) : "ok");
	int ro = reopen(fd, O_RDONLY);
	printf("read-only reopen write: %s\n", write(ro, "x", 1) < 0 ? strerror(errno) : "ok");
	close(fd);
	memset(buf, 0, sizeof(buf));
	printf("after the first closes: %zd %s\n", pread(fd2, buf, 5, 0), buf);
	int t = memfd_create("trunc", 0);
	write(t, "data", 4);
	close(reopen(t, O_RDWR | O_TRUNC));
	fstat(t, &a);
	printf("O_TRUNC empties: %ld\n", (long)a.st_size);
	return 0;
}
