/* sigframe_riscv: the extension records of a RISC-V signal frame (sc_extdesc after the
 * general and FP registers: magic and size of each __riscv_ctx_hdr up to END), first before
 * any vector use, then after one, delivered once from a syscall (raise(): the syscall discarded
 * the vector state, so the record shows vl 0 and vtype vill) and once from an exception
 * (EBREAK -> SIGTRAP right after vsetivli: the live vl and vtype).  A V record (RISCV_V_MAGIC)
 * shows vstart, vl, vtype and vlenb.  Exit status 0. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

struct hdr { uint32_t magic, size; };
static char lines[4096];
static volatile size_t used;   /* the handler adds to it: volatile, or -O2 caches it across raise() */

static void handler(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	/* struct sigcontext: 32 x-registers, then the FP union whose tail (after 129 words of
	 * padding and a reserved word) is the first extension header */
	unsigned char *p = (unsigned char *)&uc->uc_mcontext + 32 * 8 + 129 * 4 + 4;
	(void)si;
	if (sig == SIGTRAP)
		uc->uc_mcontext.__gregs[0] += 4;      /* step over the EBREAK (pc is gregs[0]) */
	for (int i = 0; i < 16; i++) {
		struct hdr h;
		memcpy(&h, p, sizeof(h));
		used += (size_t)snprintf(lines + used, sizeof(lines) - used, "  record magic %#x size %u", h.magic, h.size);
		if (h.magic == 0x53465457) {          /* RISCV_V_MAGIC */
			uint64_t st[5];                   /* vstart, vl, vtype, vcsr, vlenb */
			memcpy(st, p + 8, sizeof(st));
			used += (size_t)snprintf(lines + used, sizeof(lines) - used,
						 " vstart %llu vl %llu vtype %#llx vlenb %llu",
						 (unsigned long long)st[0], (unsigned long long)st[1],
						 (unsigned long long)st[2], (unsigned long long)st[4]);
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
	used += (size_t)snprintf(lines + used, sizeof(lines) - used, "before V:\n");
	raise(SIGUSR1);
	unsigned long vl;
	__asm__ volatile(".option push\n.option arch, +v\n\tvsetivli %0, 4, e32, m1, ta, ma\n\tvmv.v.i v1, 3\n.option pop"
			 : "=r"(vl) :: "memory");
	used += (size_t)snprintf(lines + used, sizeof(lines) - used, "after V (vl %lu):\n", vl);
	raise(SIGUSR1);
	used += (size_t)snprintf(lines + used, sizeof(lines) - used, "after V, from an exception:\n");
	__asm__ volatile(".option push\n.option arch, +v\n.option norvc\n\tvsetivli %0, 2, e64, m2, ta, ma\n\tebreak\n.option pop"
			 : "=r"(vl) :: "memory");
	fputs(lines, stdout);
	return 0;
}
