/* Hostile guest: SS_AUTODISARM alternate stacks and user-made siginfo (rt_sigqueueinfo,
 * rt_tgsigqueueinfo).  Prints "name=value" lines; call results are negative errnos. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif

static char *alt;
static size_t alt_size = 1 << 16;
static volatile int h_onalt, h_cur_flags, h_saved_flags, h_code, h_pid, h_val, h_hits;

static void on_usr1(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	stack_t cur;
	char here;
	h_onalt = &here > alt && &here <= alt + alt_size;
	sigaltstack(NULL, &cur);
	h_cur_flags = cur.ss_flags;
	h_saved_flags = uc->uc_stack.ss_flags;
	h_code = si->si_code;
	h_pid = si->si_pid;
	h_val = si->si_value.sival_int;
	h_hits++;
	(void)sig;
}

static long ret(long r) { return r < 0 ? -errno : r; }

static siginfo_t mk(int code, int val)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_code = code;
	si.si_pid = 4242;                 /* whatever the sender claims is passed on */
	si.si_uid = getuid();
	si.si_value.sival_int = val;
	return si;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGRTMIN + 1, &sa, NULL);

	/* SS_AUTODISARM */
	alt = malloc(alt_size);
	stack_t ss = { .ss_sp = alt, .ss_flags = SS_AUTODISARM, .ss_size = alt_size };
	printf("set=%ld\n", ret(sigaltstack(&ss, NULL)));
	for (int round = 0; round < 2; round++) {
		raise(SIGUSR1);
		stack_t after;
		sigaltstack(NULL, &after);
		printf("round%d=onalt:%d inside:%#x frame:%#x after:%#x size_ok:%d\n", round, h_onalt,
		       h_cur_flags, h_saved_flags, after.ss_flags, after.ss_size == alt_size);
	}
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);

	/* rt_sigqueueinfo to itself: any si_code */
	int codes[] = { SI_USER, SI_QUEUE, SI_TKILL, SI_KERNEL, -1 };
	const char *names[] = { "self_si_user", "self_si_queue", "self_si_tkill", "self_si_kernel", "self_minus1" };
	for (int i = 0; i < 5; i++) {
		siginfo_t si = mk(codes[i], 100 + i);
		h_code = 999;
		long r = ret(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, &si));
		printf("%s=%ld code=%d pid=%d val=%d\n", names[i], r, h_code, h_pid, h_val);
	}
	siginfo_t si0 = mk(SI_QUEUE, 0);
	printf("self_sig0=%ld\n", ret(syscall(SYS_rt_sigqueueinfo, getpid(), 0, &si0)));
	printf("self_sig65=%ld\n", ret(syscall(SYS_rt_sigqueueinfo, getpid(), 65, &si0)));
	printf("bad_ptr=%ld\n", ret(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, (void *)16)));

	/* to another process: only a negative si_code other than SI_TKILL */
	pid_t child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	siginfo_t su = mk(SI_USER, 1), sq = mk(SI_QUEUE, 2), st = mk(SI_TKILL, 3);
	printf("other_si_user=%ld\n", ret(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &su)));
	printf("other_si_tkill=%ld\n", ret(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &st)));
	printf("other_si_queue=%ld\n", ret(syscall(SYS_rt_sigqueueinfo, child, SIGUSR1, &sq)));
	printf("other_tg_si_user=%ld\n", ret(syscall(SYS_rt_tgsigqueueinfo, child, child, SIGUSR1, &su)));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	/* rt_tgsigqueueinfo: one thread */
	pid_t me = getpid(), tid = syscall(SYS_gettid);
	siginfo_t tq = mk(SI_QUEUE, 77);
	h_code = 999;
	long r = ret(syscall(SYS_rt_tgsigqueueinfo, me, tid, SIGRTMIN + 1, &tq));
	printf("tg_self=%ld code=%d pid=%d val=%d\n", r, h_code, h_pid, h_val);
	siginfo_t tu = mk(SI_USER, 78);
	r = ret(syscall(SYS_rt_tgsigqueueinfo, me, tid, SIGUSR1, &tu));
	printf("tg_self_si_user=%ld code=%d val=%d\n", r, h_code, h_val);
	printf("tg_zero_tid=%ld\n", ret(syscall(SYS_rt_tgsigqueueinfo, me, 0, SIGUSR1, &tq)));
	printf("tg_wrong_tgid=%ld\n", ret(syscall(SYS_rt_tgsigqueueinfo, me + 1000, tid, SIGUSR1, &tq)));
	printf("tg_bad_sig=%ld\n", ret(syscall(SYS_rt_tgsigqueueinfo, me, tid, 65, &tq)));
	printf("hits=%d\n", h_hits);
	return 0;
}
