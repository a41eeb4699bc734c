/* sigframe_arm64: the records of an arm64 signal frame, walked from uc_mcontext.__reserved
 * (magic and size of each _aarch64_ctx header up to the terminator), first before any SVE
 * use (FPSIMD only), then after an SVE instruction, delivered once from a syscall (raise(): the
 * syscall ABI drops the SVE-only state, so the kernel saves FPSIMD) and once from an exception
 * (BRK -> SIGTRAP, no syscall in between: the live SVE registers are saved, the record carries
 * them).  For the SVE record also its vl field.  Exit status 0. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

struct ctx { uint32_t magic, size; };
static char lines[4096];
static volatile size_t used;   /* the handler adds to it: volatile, or -O2 caches it across raise() */

static void handler(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	unsigned char *p = (unsigned char *)uc->uc_mcontext.__reserved;
	(void)si;
	if (sig == SIGTRAP)
		uc->uc_mcontext.pc += 4;              /* step over the BRK */
	for (int i = 0; i < 16; i++) {
		struct ctx h;
		memcpy(&h, p, sizeof(h));
		used += (size_t)snprintf(lines + used, sizeof(lines) - used, "  record magic %#x size %u", h.magic, h.size);
		if (h.magic == 0x53564501) {          /* SVE_MAGIC */
			uint16_t vl;
			memcpy(&vl, p + 8, 2);
			used += (size_t)snprintf(lines + used, sizeof(lines) - used, " vl %u", vl);
		}
		used += (size_t)snprintf(lines + used, sizeof(lines) - used, "\n");
		if (h.magic == 0 || h.size == 0)
			break;
		p += h.size;
	}
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTRAP, &sa, NULL);
	used += (size_t)snprintf(lines + used, sizeof(lines) - used, "before SVE:\n");
	raise(SIGUSR1);
	__asm__ volatile(".arch_extension sve\n\tptrue p0.b\n\tdup z0.b, #1" ::: "memory");
	used += (size_t)snprintf(lines + used, sizeof(lines) - used, "after SVE:\n");
	raise(SIGUSR1);
	used += (size_t)snprintf(lines + used, sizeof(lines) - used, "after SVE, from an exception:\n");
	__asm__ volatile(".arch_extension sve\n\tdup z1.b, #2\n\tbrk #0" ::: "memory");
	fputs(lines, stdout);
	return 0;
}
