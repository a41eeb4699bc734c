/* MAP_DROPPABLE (Linux 6.11): anonymous only, not copied by fork, dropped by MADV_PAGEOUT. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define DROPPABLE 0x08

static void show(const char *what, void *p)
{
	printf("%s: %s\n", what, p == MAP_FAILED ? strerror(errno) : "ok");
}

int main(void)
{
	int fd = memfd_create("f", 0);
	ftruncate(fd, 4096);
	show("file", mmap(NULL, 4096, PROT_READ, DROPPABLE, fd, 0));
	show("locked", mmap(NULL, 4096, PROT_READ, DROPPABLE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0));
	char *p = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, DROPPABLE | MAP_ANONYMOUS, -1, 0);
	show("anonymous", p);
	memset(p, 'A', 2 << 20);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		printf("child sees: %d\n", p[0]);
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	printf("parent keeps: %c\n", p[0]);
	printf("MADV_DODUMP: %s\n", madvise(p, 4096, MADV_DODUMP) ? strerror(errno) : "ok");
	printf("MADV_KEEPONFORK: %s\n", madvise(p, 4096, MADV_KEEPONFORK) ? strerror(errno) : "ok");
	for (int i = 0; i < 10 && memchr(p, 'A', 2 << 20); i++) {
		madvise(p, 2 << 20, MADV_PAGEOUT);
		if (memchr(p, 'A', 2 << 20))
			usleep(100000);
	}
	printf("dropped by MADV_PAGEOUT: %d\n", memchr(p, 'A', 2 << 20) == NULL);
	return 0;
}
