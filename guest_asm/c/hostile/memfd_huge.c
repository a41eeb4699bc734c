/* Hostile guest: a memfd of 2^40-1 bytes with one page written (shmem is sparse: only that
 * page may cost memory), its holes read back as zeros, a private mapping over the written page
 * and a hole; then, with argv[1] = N, writes N distinct pages (one MiB apart) and reports where
 * the machine's memory limit stopped it (a short write, then ENOMEM). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	long pages = argc > 1 ? atol(argv[1]) : 0;
	int fd = memfd_create("huge", 0);
	off_t big = (1LL << 40) - 1, at = 1LL << 39;
	printf("ftruncate: %d\n", ftruncate(fd, big));
	static char page[4096], back[4096];
	memset(page, 'x', sizeof page);
	printf("pwrite: %zd\n", pwrite(fd, page, sizeof page, at));
	struct stat st;
	fstat(fd, &st);
	printf("size: %lld\n", (long long)st.st_size);
	memset(back, 1, sizeof back);
	ssize_t n = pread(fd, back, sizeof back, at + 4096 * 100);
	int zero = 1;
	for (int i = 0; i < n; i++)
		zero &= back[i] == 0;
	printf("hole read: %zd zeros %d\n", n, zero);
	n = pread(fd, back, sizeof back, at);
	printf("page read: %zd same %d\n", n, memcmp(back, page, sizeof page) == 0);
	printf("read at end: %zd\n", pread(fd, back, sizeof back, big));
	char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, at);
	if (m == MAP_FAILED)
		printf("mmap: errno %d\n", errno);
	else
		printf("mmap: %c %d\n", m[4095], m[4096 * 3]);
	if (pages) {
		long ok = 0;
		ssize_t r = 0;
		for (long i = 0; i < pages; i++) {
			r = pwrite(fd, page, sizeof page, (off_t)i << 20);
			if (r != sizeof page)
				break;
			ok++;
		}
		printf("pages written: %ld last %zd errno %d\n", ok, r, r < 0 ? errno : 0);
		/* a shrink gives the pages back: the same writes fit again */
		printf("shrink: %d\n", ftruncate(fd, 0));
		long again = 0;
		for (long i = 0; i < ok; i++)
			again += pwrite(fd, page, sizeof page, (off_t)i << 20) == sizeof page;
		printf("after shrink: %ld\n", again);
	}
	return 0;
}
