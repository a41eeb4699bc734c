/* vstate_signal_probe: the V record of a signal delivered on the return of a syscall, and what
 * sigreturn loads from it.  The vector state is set (vl 4, e8 m1, v1 = 5) and the signal raised by
 * kill() in one asm block, so no library code runs between the vector write and the syscall.
 *   edit:    the handler rewrites the record (v1 = 9, vl 4, vtype 0): after sigreturn v1 must
 *            read 9 whatever the syscall did (an edited frame is honoured);
 *   keep:    the handler leaves the record: after sigreturn vl/vtype are the record's (read before
 *            any vsetvli), and v1 (read after one) too.
 * What the record holds is the question the discard policies answer differently: the clobbered
 * state (vl 0, vtype vill, all ones) or the live registers (vl 4, vtype 0xc0, v1 = 5).
 * Exit status 0. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

struct hdr { uint32_t magic, size; };
static volatile int edit;
static volatile uint64_t f_vl, f_vtype, f_vlenb;
static volatile unsigned f_v1;

static void handler(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	/* the first extension header follows the 32 x-registers and the FP union's padding */
	unsigned char *p = (unsigned char *)&uc->uc_mcontext + 32 * 8 + 129 * 4 + 4;
	(void)sig; (void)si;
	for (int i = 0; i < 16; i++) {
		struct hdr h;
		memcpy(&h, p, sizeof(h));
		if (h.magic == 0 || h.size == 0)
			break;
		if (h.magic == 0x53465457) {          /* RISCV_V_MAGIC */
			uint64_t st[6];                   /* vstart, vl, vtype, vcsr, vlenb, datap */
			memcpy(st, p + 8, sizeof(st));
			unsigned char *data = (unsigned char *)(uintptr_t)st[5];
			f_vl = st[1]; f_vtype = st[2]; f_vlenb = st[4];
			f_v1 = data[st[4]];               /* v1's first byte */
			if (edit) {
				memset(data + st[4], 9, st[4]);
				st[1] = 4; st[2] = 0;
				memcpy(p + 8, st, sizeof(st));
			}
		}
		p += h.size;
	}
}

static void run(int ed)
{
	unsigned long vl, vtype, v1, pid;
	edit = ed;
	f_vl = f_vtype = f_vlenb = 99; f_v1 = 99;
	__asm__ volatile(".option push\n.option arch, +v\n"
			 "\tvsetivli t0, 4, e8, m1, ta, ma\n\tvmv.v.i v1, 5\n"
			 "\tli a7, 172\n\tecall\n"                      /* getpid */
			 "\tmv %0, a0\n\tli a1, 10\n\tli a7, 129\n\tecall\n"  /* kill(pid, SIGUSR1) */
			 "\tcsrr %1, vl\n\tcsrr %2, vtype\n"
			 "\tvsetivli t0, 4, e8, m1, ta, ma\n\tvmv.x.s %3, v1\n"
			 ".option pop"
			 : "=&r"(pid), "=&r"(vl), "=&r"(vtype), "=&r"(v1) :: "a0", "a1", "a7", "t0", "memory");
	printf("%s: frame vl %llu vtype %#llx vlenb %llu v1[0] %#x; after sigreturn vl %lu vtype %#lx v1[0] %#lx\n",
	       ed ? "edit" : "keep", (unsigned long long)f_vl, (unsigned long long)f_vtype,
	       (unsigned long long)f_vlenb, f_v1, vl, vtype, v1 & 0xff);
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	run(1);
	run(0);
	return 0;
}
