/* NT_ARM_SVE through ptrace, end to end: does what a tracer writes reach the tracee's registers?
 *
 * The child stops itself (kill(getpid(), SIGSTOP) as a raw svc, so no libc code runs between
 * the stop and what follows), the parent reads NT_ARM_SVE, writes an SVE-form state at the VL
 * given as argv[1] (Z0 = 0x01 0x02 ..., P0 = 0x55..., FPSR = 0x08000000 (QC)), resumes it; the
 * child stores Z0 and P0 right after the svc returns, with no syscall in between, and prints
 * them and FPSR.  It then stops again, and the parent writes the FPSIMD form through
 * NT_ARM_SVE (V0 = 0xA0...) and checks what NT_PRFPREG and NT_ARM_SVE read back.
 * Build: aarch64-linux-gnu-gcc -O2 -static (the SVE stores assemble with .arch_extension sve)
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NT_ARM_SVE
#define NT_ARM_SVE 0x405
#endif

struct hdr { uint32_t size, max_size; uint16_t vl, max_vl, flags, reserved; };

static unsigned fpsr_off(unsigned vq) { return (16 + 32 * vq * 16 + 17 * vq * 2 + 15) & ~15u; }
static unsigned pt_size(unsigned vq) { return 16 + ((fpsr_off(vq) + 8 - 16 + 15) & ~15u); }

static void stop_self(void)
{
	register long x0 __asm__("x0") = getpid();
	register long x1 __asm__("x1") = SIGSTOP;
	register long x8 __asm__("x8") = 129;          /* kill */
	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x1), "r"(x8) : "memory");
}

static int child(void)
{
	unsigned char z[256], p[32];
	uint64_t fpsr;
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		return 90;
	stop_self();
	/* straight after the svc: the state the tracer wrote, if it reached the registers */
	__asm__ volatile(".arch_extension sve\n\tstr z0, [%1]\n\tstr p0, [%2]\n\tmrs %0, fpsr"
			 : "=r"(fpsr) : "r"(z), "r"(p) : "memory");
	unsigned vl = (unsigned)prctl(PR_SVE_GET_VL) & 0xffff;
	printf("child: VL %u, Z0 %02x %02x .. %02x, P0 %02x .. %02x, FPSR %#lx\n", vl,
	       z[0], z[1], z[vl - 1], p[0], p[vl / 8 - 1], (unsigned long)fpsr);
	fflush(stdout);
	stop_self();
	return 0;
}

static int getsve(pid_t pid, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	return ptrace(PTRACE_GETREGSET, pid, NT_ARM_SVE, &iov) ? -errno : (int)iov.iov_len;
}

static int setsve(pid_t pid, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	return ptrace(PTRACE_SETREGSET, pid, NT_ARM_SVE, &iov) ? -errno : 0;
}

int main(int argc, char **argv)
{
	unsigned vl = argc > 1 ? (unsigned)atoi(argv[1]) / 8 : 32, vq = vl / 16;
	static unsigned char buf[8192];
	struct hdr *h = (struct hdr *)buf;
	int st;
	setvbuf(stdout, NULL, _IONBF, 0);
	pid_t pid = fork();
	if (pid == 0)
		return child();
	waitpid(pid, &st, 0);
	printf("stopped: %d\n", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);

	int n = getsve(pid, buf, 16);
	printf("header read: %d bytes, size %u, max_size %u, vl %u, max_vl %u, flags %#x\n",
	       n, h->size, h->max_size, h->vl, h->max_vl, h->flags);
	printf("odd length: %d\n", getsve(pid, buf, 24));                 /* not a multiple of 16 */
	printf("header-only write: %d\n", setsve(pid, buf, 16));          /* the VL it has: no change */

	/* the SVE form at the requested VL */
	memset(buf, 0, sizeof(buf));
	h->size = pt_size(vq);
	h->vl = vl;
	h->flags = 1;                                                     /* SVE_PT_REGS_SVE */
	for (unsigned i = 0; i < vl; i++)
		buf[16 + i] = (unsigned char)(i + 1);                     /* Z0 */
	for (unsigned i = 0; i < vl / 8; i++)
		buf[16 + 32 * vl + i] = 0x55;                             /* P0 */
	*(uint32_t *)(buf + fpsr_off(vq)) = 0x08000000;                   /* FPSR.QC */
	printf("SVE write: %d\n", setsve(pid, buf, h->size));
	memset(buf, 0, sizeof(buf));
	n = getsve(pid, buf, sizeof(buf));
	printf("read back: %d bytes, size %u (expected %u), vl %u, flags %#x, Z0[last] %02x, FPSR %#x\n",
	       n, h->size, pt_size(vq), h->vl, h->flags, buf[16 + vl - 1], *(uint32_t *)(buf + fpsr_off(vq)));

	/* register data for a VL the machine does not offer is -EIO (its layout would be wrong) */
	h->vl = 48;
	h->size = pt_size(3);
	printf("data at VL 384: %d\n", setsve(pid, buf, h->size));
	h->vl = vl;
	h->size = pt_size(vq);
	for (unsigned i = 0; i < vl; i++)
		buf[16 + i] = (unsigned char)(i + 1);
	for (unsigned i = 0; i < vl / 8; i++)
		buf[16 + 32 * vl + i] = 0x55;
	*(uint32_t *)(buf + fpsr_off(vq)) = 0x08000000;
	h->flags = 1;
	printf("SVE write again: %d\n", setsve(pid, buf, h->size));

	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);
	printf("stopped again: %d\n", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);

	/* the FPSIMD form through NT_ARM_SVE: TIF_SVE is dropped, NT_PRFPREG reads V0 */
	memset(buf, 0, sizeof(buf));
	h->size = 16 + 528;
	h->vl = vl;
	h->flags = 0;                                                     /* SVE_PT_REGS_FPSIMD */
	memset(buf + 16, 0xA0, 16);                                       /* V0 */
	printf("FPSIMD write: %d\n", setsve(pid, buf, h->size));
	unsigned char fp[528];
	struct iovec iov = { fp, sizeof(fp) };
	printf("NT_PRFPREG: %d, V0[0] %02x V1[0] %02x\n", ptrace(PTRACE_GETREGSET, pid, NT_PRFPREG, &iov),
	       fp[0], fp[16]);
	memset(buf, 0, sizeof(buf));
	n = getsve(pid, buf, sizeof(buf));
	printf("read as: %d bytes, size %u, flags %#x\n", n, h->size, h->flags);
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);
	printf("child exit: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
