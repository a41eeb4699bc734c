/* Hostile guest: a write and a read that fault (read-only page, PROT_NONE page, unmapped page).
 * Prints per case the si_code and, on arm64, the esr_context record's EC and WnR bit. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf jb;
static volatile int code;
static volatile long esr = -1;

static void on_segv(int sig, siginfo_t *si, void *uc_)
{
	(void)sig;
	code = si->si_code;
#ifdef __aarch64__
	ucontext_t *uc = uc_;
	unsigned char *p = uc->uc_mcontext.__reserved;
	for (;;) {
		struct { uint32_t magic, size; } *h = (void *)p;
		if (h->magic == 0 || h->size == 0)
			break;
		if (h->magic == 0x45535201)           /* ESR_MAGIC */
			esr = *(uint64_t *)(p + 8);
		p += h->size;
	}
#else
	(void)uc_;
#endif
	siglongjmp(jb, 1);
}

static void one(const char *name, volatile char *addr, int write)
{
	code = 0;
	esr = -1;
	if (!sigsetjmp(jb, 1)) {
		if (write)
			*addr = 1;
		else
			(void)*addr;
	}
	if (esr >= 0)
		printf("%s=code:%d ec:%#lx wnr:%ld\n", name, code, (esr >> 26) & 0x3f, (esr >> 6) & 1);
	else
		printf("%s=code:%d\n", name, code);
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 4096);
	one("write_ro", ro, 1);
	one("read_none", none, 0);
	one("write_none", none, 1);
	one("write_unmapped", gone, 1);
	one("read_unmapped", gone, 0);
	return 0;
}
