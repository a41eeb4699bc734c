/* mseal (mm/mseal.c): the argument checks, and every call a seal refuses. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static long pg;

static int seal(void *p, size_t n, unsigned long flags)
{
	return syscall(462, p, n, flags);
}

static void show(const char *what, long r)
{
	printf("%s: %s\n", what, r == -1 ? strerror(errno) : "ok");
}

static int vmas(char *p, size_t n)
{
	char line[256];
	int count = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < (unsigned long)p + n && (unsigned long)p < b)
			count++;
	}
	fclose(f);
	return count;
}

int main(void)
{
	pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 4 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	show("flags 1", seal(p, pg, 1));
	show("unaligned", seal(p + 1, pg, 0));
	show("wrapping length", seal(p, -1UL, 0));
	show("zero length", seal(p, 0, 0));
	munmap(p + 2 * pg, pg);
	show("over a hole", seal(p, 4 * pg, 0));
	show("munmap after failed seal", munmap(p, pg));
	show("seal last page", seal(p + 3 * pg, pg, 0));
	show("seal again", seal(p + 3 * pg, pg, 0));

	char *q = mmap(NULL, 3 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	show("seal middle", seal(q + pg, pg, 0));
	printf("vmas after middle seal: %d\n", vmas(q, 3 * pg));
	show("munmap over sealed", munmap(q, 3 * pg));
	show("munmap beside sealed", munmap(q, pg));
	show("mprotect sealed", mprotect(q + pg, pg, PROT_READ | PROT_WRITE));
	show("mprotect unsealed", mprotect(q + 2 * pg, pg, PROT_READ | PROT_WRITE));
	show("mremap shrink", (long)mremap(q + pg, pg, pg / 2, 0) == -1 ? -1 : 0);
	show("mremap move", (long)mremap(q + pg, pg, pg, MREMAP_MAYMOVE | MREMAP_FIXED, q) == -1 ? -1 : 0);
	show("mremap onto sealed", (long)mremap(q + 2 * pg, pg, pg, MREMAP_MAYMOVE | MREMAP_FIXED, q + pg) == -1 ? -1 : 0);
	show("mmap fixed over", mmap(q + pg, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ? -1 : 0);
	show("madvise dontneed ro", madvise(q + pg, pg, MADV_DONTNEED));
	show("madvise willneed ro", madvise(q + pg, pg, MADV_WILLNEED));
	char *w = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	seal(w, pg, 0);
	show("madvise dontneed rw", madvise(w, pg, MADV_DONTNEED));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		show("child munmap sealed", munmap(q + pg, pg));
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	return 0;
}
