/* PTRACE_SINGLESTEP: on arm64 the tracee stops after each user instruction with SIGTRAP,
 * si_code TRAP_TRACE and si_addr the next pc; a stepped svc reports at the syscall's exit
 * (SIGTRAP, si_code SI_USER).  RISC-V has no hardware single step: the request is EIO. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void child(void)
{
	ptrace(PTRACE_TRACEME, 0, 0, 0);
#if defined(__aarch64__)
	long ret;
	/* the tracer skips the brk and steps through the rest one instruction at a time */
	__asm__ volatile("brk #0\n\tmov x9, #5\n\tadd x9, x9, #1\n\tadd x9, x9, #1\n\t"
			 "mov x8, #172\n\tsvc #0\n\tmov %0, x0\n" : "=r"(ret) : : "x0", "x8", "x9", "memory");
	_exit(ret == getpid() ? 7 : 8);
#else
	raise(SIGSTOP);
	_exit(7);
#endif
}

int main(void)
{
	pid_t pid = fork();
	if (pid == 0)
		child();
	int st;
	waitpid(pid, &st, 0);
	printf("first stop: %#x\n", st);
#if defined(__aarch64__)
	unsigned long regs[34];
	struct iovec iov = { regs, sizeof(regs) };
	siginfo_t si;
	ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov);
	unsigned long brk = regs[32];
	regs[32] = brk + 4;
	ptrace(PTRACE_SETREGSET, pid, NT_PRSTATUS, &iov);
	for (int i = 1; i <= 5; i++) {
		long r = ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
		waitpid(pid, &st, 0);
		ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov);
		memset(&si, 0, sizeof(si));
		ptrace(PTRACE_GETSIGINFO, pid, 0, &si);
		printf("step %d: %ld, status %#x, pc brk+%lu, x9 %lu, si_code %d, si_addr is pc %d",
		       i, r, st, regs[32] - brk, regs[9], si.si_code, (unsigned long)si.si_addr == regs[32]);
		if (i == 5)
			printf(", x0 is the child's pid %d", regs[0] == (unsigned long)pid);
		printf("\n");
	}
#else
	errno = 0;
	long r = ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
	printf("singlestep: %ld %s\n", r, errno == EIO ? "EIO" : strerror(errno));
#endif
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);
	printf("child exit: %d\n", WEXITSTATUS(st));
	return 0;
}
