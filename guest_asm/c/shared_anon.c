/* MAP_SHARED | MAP_ANONYMOUS across fork: the child's stores are the parent's (and the parent's
 * the child's); MAP_PRIVATE ones are not.  A process-shared counter handed back and forth
 * through two pipes, then a /dev/zero MAP_SHARED mapping, then a munmap in the child that must
 * not take the parent's pages. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	volatile int *sh = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	volatile int *pr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int zfd = open("/dev/zero", O_RDWR);
	volatile int *dz = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, zfd, 0);
	int p2c[2], c2p[2];
	pipe(p2c);
	pipe(c2p);
	sh[0] = 1; pr[0] = 1; dz[0] = 1; sh[1024] = 5;
	pid_t pid = fork();
	char t;
	if (pid == 0) {
		for (int i = 0; i < 3; i++) {
			read(p2c[0], &t, 1);
			sh[0] += 10; pr[0] += 10; dz[0] += 10;
			write(c2p[1], "c", 1);
		}
		munmap((void *)(sh + 1024), 4096);        /* the child's view only */
		return 0;
	}
	for (int i = 0; i < 3; i++) {
		write(p2c[1], "p", 1);
		read(c2p[0], &t, 1);
		sh[0] += 100;
		printf("round %d: shared %d, private %d, /dev/zero shared %d\n", i, sh[0], pr[0], dz[0]);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("after the child's munmap: %d\n", sh[1024]);
	/* shared anonymous memory mapped read-only may be made writable (shmem: VM_MAYWRITE) */
	int *ro = mmap(NULL, 4096, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	printf("mprotect PROT_WRITE: %d\n", mprotect(ro, 4096, PROT_READ | PROT_WRITE));
	ro[0] = 7;
	printf("written: %d\n", ro[0]);
	return 0;
}
