/* The arm64 tagged address ABI: loads and stores through a tagged pointer (TBI, always), a
 * tagged pointer given to a syscall before and after prctl(PR_SET_TAGGED_ADDR_CTRL), the prctl's
 * argument checks, untagging munmap/mprotect, the flag across fork, free() of a tagged pointer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#define TAG(p, t) ((void *)(((unsigned long)(p) & ~(0xffUL << 56)) | ((unsigned long)(t) << 56)))
int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char *buf = malloc(64);
	strcpy(buf, "hello");
	char *t = TAG(buf, 0x5a);
	printf("load through a tag: %s\n", t);          /* TBI: always */
	t[0] = 'H';
	printf("store through a tag: %s\n", buf);
	printf("get before: %d\n", prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0, 0, 0));
	printf("write(tagged) before: %zd errno %d\n", write(1, t, 0) , errno);
	errno = 0;
	printf("uname(tagged) before: %d errno %d\n", uname(TAG(malloc(sizeof(struct utsname)), 0x42)), errno);
	printf("set bad bit: %d errno %d\n", prctl(PR_SET_TAGGED_ADDR_CTRL, 2, 0, 0, 0), errno);
	printf("set arg3: %d errno %d\n", prctl(PR_SET_TAGGED_ADDR_CTRL, 1, 1, 0, 0), errno);
	errno = 0;
	printf("set: %d\n", prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE, 0, 0, 0));
	printf("get after: %d\n", prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0, 0, 0));
	struct utsname *u = TAG(malloc(sizeof(*u)), 0x42);
	printf("uname(tagged) after: %d %s\n", uname(u), u->sysname);
	int fd = open(TAG("/proc/self/comm", 0x11), O_RDONLY);
	printf("open(tagged path): %s\n", fd >= 0 ? "ok" : "failed");
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("mprotect(tagged): %d\n", mprotect(TAG(m, 0x33), 4096, PROT_READ));
	printf("munmap(tagged): %d\n", munmap(TAG(m, 0x33), 8192));
	pid_t pid = fork();
	if (pid == 0) {
		printf("child get: %d\n", prctl(PR_GET_TAGGED_ADDR_CTRL, 0, 0, 0, 0));
		return 0;
	}
	waitpid(pid, NULL, 0);
	free(u); /* glibc reads the chunk header through the tag */
	printf("done\n");
	return 0;
}
