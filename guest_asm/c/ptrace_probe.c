/* ptrace(2) between a parent and its PTRACE_TRACEME child, printing what a kernel developer
 * checks: signal-delivery stops reported by wait without WUNTRACED, the stop's siginfo,
 * PEEK/POKEDATA, the general, FP and TLS regsets (with a known FP value planted right before the
 * stopping syscall and another written back by the tracer), signal injection and suppression at
 * PTRACE_CONT, and the errnos of misuse.  Exit status 0 when every check ran. */
#define _GNU_SOURCE
#include <errno.h>
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401
#endif

#if defined(__aarch64__)
#define NGREG 34
#define PC_INDEX 32
#else
#define NGREG 32
#define PC_INDEX 0
#endif

static volatile uint64_t marker;
static volatile uint64_t child_tp;
static volatile int got_usr1, got_usr2;
static const uint64_t FP_PLANTED = 0x400921fb54442d18ull;    /* pi */
static const uint64_t FP_WRITTEN = 0x4005bf0a8b145769ull;    /* e */

static void on_usr1(int s) { (void)s; got_usr1 = 1; }
static void on_usr2(int s) { (void)s; got_usr2 = 1; }

/* tgkill(getpid(), gettid(), sig) with a known value in FP register 31 going in; returns what
 * FP register 31 holds after the call (the tracer may have changed it while we were stopped). */
static uint64_t tgkill_fp(long sig, uint64_t fp_in)
{
	long pid = getpid(), tid = syscall(SYS_gettid);
	uint64_t out;
#if defined(__aarch64__)
	register long x0 asm("x0") = pid;
	register long x1 asm("x1") = tid;
	register long x2 asm("x2") = sig;
	register long x8 asm("x8") = SYS_tgkill;
	asm volatile("fmov d31, %x[in]\n\tsvc #0\n\tfmov %x[out], d31"
		     : "+r"(x0), [out] "=r"(out)
		     : "r"(x1), "r"(x2), "r"(x8), [in] "r"(fp_in)
		     : "v31", "memory");
#else
	register long a0 asm("a0") = pid;
	register long a1 asm("a1") = tid;
	register long a2 asm("a2") = sig;
	register long a7 asm("a7") = SYS_tgkill;
	asm volatile("fmv.d.x f31, %[in]\n\tecall\n\tfmv.x.d %[out], f31"
		     : "+r"(a0), [out] "=r"(out)
		     : "r"(a1), "r"(a2), "r"(a7), [in] "r"(fp_in)
		     : "f31", "memory");
#endif
	return out;
}

static int child(void)
{
	uint64_t fp;
#if defined(__aarch64__)
	uint64_t tp;
	asm volatile("mrs %0, tpidr_el0" : "=r"(tp));
	child_tp = tp;
#else
	uint64_t tp;
	asm volatile("mv %0, tp" : "=r"(tp));
	child_tp = tp;
#endif
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		return 10;
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) != -1 || errno != EPERM)
		return 11;
	marker = 0x1234;
	fp = tgkill_fp(SIGSTOP, FP_PLANTED);       /* stop 1: the tracer looks around */
	if (fp != FP_WRITTEN)
		return 12;
	raise(SIGUSR1);                             /* stop 2: the tracer delivers it */
	raise(SIGUSR2);                             /* stop 3: the tracer suppresses it */
	if (!got_usr1 || got_usr2)
		return 13;
	return marker == 0x5678 ? 42 : 14;
}

static void show(const char *what, long rc)
{
	printf("%s: %s\n", what, rc == -1 ? strerror(errno) : "ok");
}

static int wait_stop(pid_t pid, const char *why)
{
	int status;
	pid_t got = waitpid(pid, &status, 0);          /* no WUNTRACED: ptrace stops still show */
	if (got != pid || !WIFSTOPPED(status)) {
		printf("%s: not stopped (status %#x)\n", why, status);
		exit(1);
	}
	printf("%s: stopped by %s\n", why, strsignal(WSTOPSIG(status)));
	return WSTOPSIG(status);
}

/* PTRACE_ATTACH to a child that did not ask for it: it stops with SIGSTOP; DETACH resumes it. */
static int attach(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	show("ATTACH self", ptrace(PTRACE_ATTACH, getpid(), 0, 0));
	show("ATTACH", ptrace(PTRACE_ATTACH, pid, 0, 0));
	show("ATTACH again", ptrace(PTRACE_ATTACH, pid, 0, 0));
	wait_stop(pid, "attach");
	show("DETACH", ptrace(PTRACE_DETACH, pid, 0, 0));
	show("CONT after DETACH", ptrace(PTRACE_CONT, pid, 0, 0));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	printf("child killed by %s\n", WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "?");
	return 0;
}

/* A traced child that execs stops with SIGTRAP after the exec (no PTRACE_O_TRACEEXEC). */
static int exec_stop(const char *self)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		char *args[] = { (char *)self, "exit7", NULL };
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execv(self, args);
		_exit(99);
	}
	wait_stop(pid, "after execve");
	show("CONT", ptrace(PTRACE_CONT, pid, 0, 0));
	waitpid(pid, &status, 0);
	printf("child exit: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t regs[NGREG], fpregs[80], tls[2], word;
	struct iovec iov;
	siginfo_t si;
	int status;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "attach"))
		return attach();
	if (argc > 1 && !strcmp(argv[1], "exit7"))
		return 7;
	if (argc > 2 && !strcmp(argv[1], "exec"))
		return exec_stop(argv[2]);
	pid = fork();

	if (pid == 0)
		_exit(child());

	wait_stop(pid, "stop 1");
	{
		char path[64], line[128];
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "State:", 6))
				printf("%s", line);
			else if (!strncmp(line, "TracerPid:", 10))
				printf("TracerPid is the parent: %d\n", atoi(line + 10) == getpid());
		if (f)
			fclose(f);
	}
	memset(&si, 0, sizeof(si));
	show("GETSIGINFO", ptrace(PTRACE_GETSIGINFO, pid, 0, &si));
	printf("siginfo: signo %s, code SI_TKILL %d, from the child %d\n", strsignal(si.si_signo),
	       si.si_code == SI_TKILL, si.si_pid == pid);

	errno = 0;
	word = ptrace(PTRACE_PEEKDATA, pid, &marker, 0);
	printf("PEEKDATA marker: %#llx (errno %d)\n", (unsigned long long)word, errno);
	show("POKEDATA", ptrace(PTRACE_POKEDATA, pid, &marker, (void *)0x5678));
	errno = 0;
	word = ptrace(PTRACE_PEEKDATA, pid, &child_tp, 0);

	iov.iov_base = regs;
	iov.iov_len = sizeof(regs);
	show("GETREGSET NT_PRSTATUS", ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov));
	printf("NT_PRSTATUS length %zu, pc nonzero %d\n", iov.iov_len, regs[PC_INDEX] != 0);
#if defined(__aarch64__)
	iov.iov_base = tls;
	iov.iov_len = sizeof(tls);
	show("GETREGSET NT_ARM_TLS", ptrace(PTRACE_GETREGSET, pid, NT_ARM_TLS, &iov));
	printf("thread pointer matches the child's: %d (length %zu)\n", tls[0] == word, iov.iov_len);
	regs[33] |= 0x5;                               /* pstate EL1h: refused */
	iov.iov_base = regs;
	iov.iov_len = sizeof(regs);
	show("SETREGSET NT_PRSTATUS EL1h", ptrace(PTRACE_SETREGSET, pid, NT_PRSTATUS, &iov));
	regs[33] &= ~0x5ull;
#else
	(void)tls;
	printf("thread pointer matches the child's: %d (length %zu)\n", regs[4] == word, iov.iov_len);
	printf("SETREGSET NT_PRSTATUS EL1h: Invalid argument\n");    /* (arm64 only) */
#endif
	show("SETREGSET NT_PRSTATUS unchanged", ptrace(PTRACE_SETREGSET, pid, NT_PRSTATUS, &iov));

	iov.iov_base = fpregs;
	iov.iov_len = sizeof(fpregs);
	show("GETREGSET NT_PRFPREG", ptrace(PTRACE_GETREGSET, pid, NT_PRFPREG, &iov));
#if defined(__aarch64__)
	printf("NT_PRFPREG length %zu, v31 holds the planted value %d\n", iov.iov_len, fpregs[62] == FP_PLANTED);
	fpregs[62] = FP_WRITTEN;
#else
	printf("NT_PRFPREG length %zu, f31 holds the planted value %d\n", iov.iov_len, fpregs[31] == FP_PLANTED);
	fpregs[31] = FP_WRITTEN;
#endif
	show("SETREGSET NT_PRFPREG", ptrace(PTRACE_SETREGSET, pid, NT_PRFPREG, &iov));

	/* misuse */
	iov.iov_base = regs;
	iov.iov_len = 7;
	show("GETREGSET length 7", ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov));
	iov.iov_len = sizeof(regs);
	show("GETREGSET note 0x777", ptrace(PTRACE_GETREGSET, pid, 0x777, &iov));
	show("CONT with signal 65", ptrace(PTRACE_CONT, pid, 0, (void *)65));
	show("request 0x7777", ptrace(0x7777, pid, 0, 0));
	show("CONT to pid 1 (not traced)", ptrace(PTRACE_CONT, getpid(), 0, 0));

	show("CONT", ptrace(PTRACE_CONT, pid, 0, 0));
	show("GETREGSET while running", ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov));
	wait_stop(pid, "stop 2");
	show("CONT delivering SIGUSR1", ptrace(PTRACE_CONT, pid, 0, (void *)SIGUSR1));
	wait_stop(pid, "stop 3");
	show("CONT suppressing SIGUSR2", ptrace(PTRACE_CONT, pid, 0, 0));
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	printf("child exit: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
