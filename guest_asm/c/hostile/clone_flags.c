/* Hostile guest: raw clone() with flag words Linux's copy_process rejects or accepts oddly.
 * Prints one "name=result" line per case: a negative errno, or for a created child
 * "ok status=<wait status> waited=1 sigchld=<SIGCHLDs received>" (wait4(__WALL)'s report). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define BAD ((void *)0x10)      /* an unmapped user pointer */

static volatile int chld;       /* SIGCHLDs the parent was sent */
static void on_chld(int sig) { (void)sig; chld++; }

/* fork-like clone (no CLONE_VM, same stack); ptid and ctid go in both possible positions */
static long raw_clone(unsigned long flags, void *ptid, void *ctid)
{
	return syscall(SYS_clone, flags, 0UL, ptid, ctid, ctid);
}

static void child_case(const char *name, unsigned long flags, void *ptid, void *ctid)
{
	chld = 0;
	long pid = raw_clone(flags, ptid, ctid);
	if (pid == 0)
		_exit(7);
	if (pid < 0) {
		printf("%s=%d\n", name, -errno);
		return;
	}
	int st = -1;
	long w = waitpid(pid, &st, __WALL);
	printf("%s=ok status=%#x waited=%d sigchld=%d\n", name, st, w == pid, chld);
}

int main(void)
{
	signal(SIGCHLD, on_chld);
	/* item 2: an exit signal above _NSIG is accepted; the parent is sent nothing */
	child_case("exit_sig_65", 65, NULL, NULL);
	child_case("exit_sig_100", 100, NULL, NULL);
	child_case("exit_sig_255", 255, NULL, NULL);
	child_case("exit_sig_0", 0, NULL, NULL);
	/* item 12: copy_process's checks */
	child_case("sighand_no_vm", CLONE_SIGHAND | SIGCHLD, NULL, NULL);
	child_case("fs_newns", CLONE_FS | CLONE_NEWNS | SIGCHLD, NULL, NULL);
	child_case("all_ones", ~0UL, NULL, NULL);
	child_case("thread_no_sighand", CLONE_THREAD | CLONE_VM | SIGCHLD, NULL, NULL);
	child_case("bad_settid", CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | SIGCHLD, BAD, BAD);
	int ptid = -1;
	long pid = raw_clone(CLONE_PARENT_SETTID | SIGCHLD, &ptid, NULL);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	printf("parent_settid=%d\n", ptid == pid);
	return 0;
}
