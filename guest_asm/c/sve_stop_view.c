/* What NT_ARM_SVE shows for a tracee stopped in a syscall after using SVE: which register form
 * (SVE_PT_REGS_FPSIMD 0 / SVE_PT_REGS_SVE 1) the header's flags give, the size, and how much of a
 * 70,000-byte iovec the regset fills.  The child stops itself with a raw svc (kill SIGSTOP)
 * before any SVE use, after its first SVE instruction (the access trap sets TIF_SVE), and after
 * more SVE work.  Recorded on Debian 13's 6.12 (emukern compare, SVE VL 256): the header says
 * FPSIMD form at every stop, because the stop happens inside the syscall, where the state is
 * saved without the SVE-only bits; the regset holds at most 8,768 bytes (ARCH_SVE_VQ_MAX). */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/syscall.h>
struct hdr { uint32_t size, max_size; uint16_t vl, max_vl, flags, reserved; };
static void stop_self(void)
{
	long me = getpid();
	register long x8 __asm__("x8") = SYS_kill;
	register long x0 __asm__("x0") = me;
	register long x1 __asm__("x1") = SIGSTOP;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
}
int main(void)
{
	static unsigned char buf[70000];
	struct hdr *h = (struct hdr *)buf;
	int st;
	setvbuf(stdout, NULL, _IONBF, 0);
	pid_t pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		stop_self();                                   /* before any SVE use */
		__asm__ volatile(".arch_extension sve\n\tptrue p0.b\n\tdup z0.b, #7" ::: "memory");
		stop_self();                                   /* TIF_SVE set, stopped in the syscall */
		__asm__ volatile(".arch_extension sve\n\tdup z1.b, #9" ::: "memory");
		stop_self();
		return 0;
	}
	for (int i = 0; i < 3; i++) {
		waitpid(pid, &st, 0);
		struct iovec iov = { buf, sizeof(buf) };
		long r = ptrace(PTRACE_GETREGSET, pid, NT_ARM_SVE, &iov);
		printf("stop %d: getregset %ld len %zu size %u vl %u flags %#x\n", i, r ? -errno : 0L,
		       iov.iov_len, h->size, h->vl, h->flags);
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
	waitpid(pid, &st, 0);
	printf("exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
