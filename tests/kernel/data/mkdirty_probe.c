/* What mm/mkdirty checks, cut down: a FOLL_FORCE write through /proc/self/mem into a read-only
 * private page must not make the page writable to the program itself; /proc/self/pagemap must
 * then report the page present; mbind and userfaultfd answer (ENOSYS in emukern: no NUMA
 * mempolicy, no userfaultfd). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static sigjmp_buf env;
static void on_segv(int sig) { (void)sig; siglongjmp(env, 1); }

int main(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	int mem = open("/proc/self/mem", O_RDWR);
	int pm = open("/proc/self/pagemap", O_RDONLY);
	printf("open mem %s pagemap %s\n", mem >= 0 ? "ok" : strerror(errno), pm >= 0 ? "ok" : strerror(errno));
	volatile char *p = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("zero %d\n", p[0]);
	char one = 1;
	lseek(mem, (off_t)(uintptr_t)p, SEEK_SET);
	printf("forced write %zd now %d\n", write(mem, &one, 1), p[0]);
	uint64_t ent = 0;
	printf("pagemap read %zd present %d\n",
	       pread(pm, &ent, 8, (off_t)((uintptr_t)p / ps) * 8), (int)(ent >> 63));
	signal(SIGSEGV, on_segv);
	if (sigsetjmp(env, 1) == 0) {
		p[0] = 2;
		printf("user write did not fault\n");
	} else {
		printf("user write faulted, value %d\n", p[0]);
	}
	long r = syscall(SYS_mbind, p, ps, 4 /* MPOL_LOCAL */, NULL, 0x7ffUL, 2 /* MPOL_MF_MOVE */);
	printf("mbind %ld errno %s\n", r, r ? strerrorname_np(errno) : "-");
	r = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	printf("userfaultfd %s\n", r < 0 ? strerrorname_np(errno) : "fd");
	return 0;
}
