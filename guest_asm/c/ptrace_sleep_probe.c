/* PTRACE_SYSCALL over a read() that sleeps: the exit stop still comes, after the wake-up, and
 * PTRACE_GET_SYSCALL_INFO / PTRACE_GETEVENTMSG describe each stop (NONE at the signal stop,
 * ENTRY with the number and arguments, EXIT with the return value). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long info(pid_t pid, struct __ptrace_syscall_info *si)
{
	unsigned long msg = 99;
	long n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(*si), si);
	ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg);
	printf("info size %ld, op %d, eventmsg %lu, arch %#x, ip/sp set %d", n, si->op, msg, si->arch,
	       si->instruction_pointer != 0 && si->stack_pointer != 0);
	return n;
}

int main(void)
{
	int fd[2];
	char buf[4];
	pipe(fd);
	pid_t pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		long n = syscall(SYS_read, fd[0], buf, 3);
		_exit(n == 1 ? buf[0] : 1);
	}
	int st;
	struct __ptrace_syscall_info si;
	waitpid(pid, &st, 0);
	printf("stop %#x: ", st);
	info(pid, &si);
	printf("\n");
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD);
	ptrace(PTRACE_SYSCALL, pid, 0, 0);
	waitpid(pid, &st, 0);
	printf("entry %#x: ", st);
	info(pid, &si);
	printf(", nr is read %d, args fd %d len %llu\n", si.entry.nr == SYS_read, si.entry.args[0] == (unsigned)fd[0],
	       (unsigned long long)si.entry.args[2]);
	ptrace(PTRACE_SYSCALL, pid, 0, 0);
	usleep(20000);                         /* the child sleeps in read() meanwhile */
	write(fd[1], "x", 1);
	waitpid(pid, &st, 0);
	printf("exit %#x: ", st);
	info(pid, &si);
	printf(", rval %lld, is_error %d\n", (long long)si.exit.rval, si.exit.is_error);
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);
	printf("child exit: %d\n", WEXITSTATUS(st));
	return 0;
}
