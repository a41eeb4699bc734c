/* Hostile guest: mprotect/madvise argument checks and holes (mm/mprotect.c, mm/madvise.c), and a
 * patched vDSO page inherited by fork.  Prints "name=result" lines (results: negative errnos);
 * "w<N>" says whether page N of the probe area can be written afterwards. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096UL
static sigjmp_buf jb;
static void on_segv(int s) { (void)s; siglongjmp(jb, 1); }

static int writable(volatile char *p)
{
	if (sigsetjmp(jb, 1))
		return 0;
	*p = *p;
	return 1;
}

static long ret(long r) { return r < 0 ? -errno : r; }
static long mp(void *a, unsigned long len, unsigned long prot) { return ret(syscall(SYS_mprotect, a, len, prot)); }
static long ma(void *a, unsigned long len, long adv) { return ret(syscall(SYS_madvise, a, len, adv)); }

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGSEGV, on_segv);
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p + 2 * PG, PG);                         /* pages 0 1 _ 3 */
	printf("hole_after=%ld w0=%d w1=%d w3=%d\n", mp(p, 4 * PG, PROT_READ),
	       writable(p), writable(p + PG), writable(p + 3 * PG));
	mprotect(p, 2 * PG, PROT_READ | PROT_WRITE);
	printf("start_in_hole=%ld w3=%d\n", mp(p + 2 * PG, 2 * PG, PROT_READ), writable(p + 3 * PG));
	printf("unknown_0x40=%ld\n", mp(p, PG, PROT_READ | 0x40));
	printf("prot_sem=%ld\n", mp(p, PG, PROT_READ | PROT_WRITE | 0x8));
	printf("prot_0x10=%ld\n", mp(p, PG, PROT_READ | PROT_WRITE | 0x10));  /* arm64: PROT_BTI */
	printf("grows_both=%ld\n", mp(p, PG, PROT_READ | PROT_GROWSDOWN | PROT_GROWSUP));
	printf("growsdown_anon=%ld\n", mp(p, PG, PROT_READ | PROT_GROWSDOWN));
	printf("growsup_anon=%ld\n", mp(p, PG, PROT_READ | PROT_GROWSUP));
	char local;
	void *sp = (void *)((uintptr_t)&local & ~(PG - 1));
	printf("growsdown_stack=%ld\n", mp(sp, PG, PROT_READ | PROT_WRITE | PROT_GROWSDOWN));
	printf("len0_unmapped=%ld\n", mp(p + 2 * PG, 0, PROT_READ));
	printf("unaligned=%ld\n", mp(p + 1, PG, PROT_READ));
	printf("wraps=%ld\n", mp(p, -PG, PROT_READ));
	printf("unmapped_only=%ld\n", mp(p + 2 * PG, PG, PROT_READ));
	printf("whole_ok=%ld w0=%d\n", mp(p, 2 * PG, PROT_READ), writable(p));
	mprotect(p, 2 * PG, PROT_READ | PROT_WRITE);

	printf("madv_5=%ld\n", ma(p, PG, 5));
	printf("madv_999=%ld\n", ma(p, PG, 999));
	printf("madv_neg=%ld\n", ma(p, PG, -1));
	printf("madv_normal_hole=%ld\n", ma(p, 4 * PG, MADV_NORMAL));
	printf("madv_unmapped=%ld\n", ma(p + 2 * PG, PG, MADV_WILLNEED));
	printf("madv_cold=%ld\n", ma(p, 2 * PG, 20));
	printf("madv_wipeonfork=%ld\n", ma(p, 2 * PG, 18));
	printf("madv_unaligned=%ld\n", ma(p + 1, PG, MADV_NORMAL));
	printf("madv_len0=%ld\n", ma(p + 2 * PG, 0, MADV_NORMAL));
	printf("madv_wraps=%ld\n", ma(p, -1UL, MADV_NORMAL));
	printf("madv_bad_and_unaligned=%ld\n", ma(p + 1, PG, 5));

	/* the vDSO page, patched by the parent, then forked: the child has the patched copy */
	FILE *f = fopen("/proc/self/maps", "r");
	char line[256];
	unsigned long vdso = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "[vdso]"))
			vdso = strtoul(line, NULL, 16);
	if (f)
		fclose(f);
	long r = mp((void *)vdso, PG, PROT_READ | PROT_WRITE | PROT_EXEC);
	volatile uint64_t *w = (uint64_t *)(vdso + PG - 8);
	uint64_t old = *w;
	*w = 0x5eed5eed5eed5eedULL;
	pid_t c = fork();
	if (c == 0)
		_exit(*w == 0x5eed5eed5eed5eedULL ? 42 : 1);
	int st = 0;
	waitpid(c, &st, 0);
	*w = old;
	printf("vdso_patch=%ld child_sees=%d\n", r, WEXITSTATUS(st) == 42);
	return 0;
}
