/* PTRACE_SYSCALL: the tracer sees its child's getpid() at entry and at exit (status
 * SIGTRAP|0x80 with PTRACE_O_TRACESYSGOOD), the syscall number at entry and the return value at
 * exit in the registers; PTRACE_CONT then lets the child run to its end untraced. */
#define _GNU_SOURCE
#include <elf.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__aarch64__)
#define NR_REG 8
#define RET_REG 0
#else
#define NR_REG 17                 /* a7 in user_regs_struct (pc, ra, sp, ..., a0 is 10) */
#define RET_REG 10
#endif

int main(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		long me = syscall(SYS_getpid);
		_exit(me == getpid() ? 7 : 8);
	}
	int st;
	unsigned long regs[34];
	struct iovec iov = { regs, sizeof(regs) };
	waitpid(pid, &st, 0);
	printf("stop: %#x\n", st);
	printf("SETOPTIONS TRACESYSGOOD: %ld\n", ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD));
	for (int i = 0; i < 2; i++) {
		ptrace(PTRACE_SYSCALL, pid, 0, 0);
		waitpid(pid, &st, 0);
		ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov);
		if (i == 0)
			printf("entry stop: status %#x, nr %lu (getpid %d)\n", st, regs[NR_REG], SYS_getpid);
		else
			printf("exit stop: status %#x, return is the child's pid: %d\n", st, regs[RET_REG] == (unsigned long)pid);
	}
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);
	printf("child exit: %d\n", WEXITSTATUS(st));
	return 0;
}
