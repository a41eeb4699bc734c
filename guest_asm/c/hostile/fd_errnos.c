/* Hostile guest: the errnos of reads Linux refuses: read on an O_PATH descriptor (EBADF: an
 * O_PATH file has no read), a read whose buffer length reaches past the user address space
 * (EFAULT from access_ok, on every arch), and getrandom into a buffer larger than its mapping
 * (the bytes up to the fault) or into an unmapped one (EFAULT). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
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
	char buf[64];
	int p = open("/proc/self/status", O_PATH);
	printf("O_PATH open ok: %d\n", p >= 0);
	show("read O_PATH", read(p, buf, sizeof buf));
	int fd = open("/dev/zero", O_RDONLY);
	show("read 2^63", syscall(SYS_read, fd, buf, 1UL << 63));
	show("read 2^47", syscall(SYS_read, fd, buf, 1UL << 47));
	char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(m + 2 * 4096, 4096);
	show("getrandom 2^31 into 8 KiB", syscall(SYS_getrandom, m, 1UL << 31, 0));
	show("getrandom unmapped", syscall(SYS_getrandom, m + 2 * 4096, 16, 0));
	show("getrandom 100", syscall(SYS_getrandom, m, 100, 0));
	return 0;
}
