/* kcmp, unshare, the mount family, CLONE_PIDFD + waitid(P_PIDFD), PR_SET_MDWE, PR_SET_DUMPABLE,
 * PR_SET_PDEATHSIG and PTRACE_PEEKSIGINFO: one line per answer, the same bytes on every run.
 * Run as root (emukern's guest); the namespace and mount calls are made by a child that gave
 * up root, so they answer as for a caller without CAP_SYS_ADMIN. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KCMP_FILE 0
#define KCMP_VM 1
#define KCMP_FILES 2
#define KCMP_EPOLL_TFD 7
#define P_PIDFD 3
#define CLONE_PIDFD_ 0x1000

struct kcmp_epoll_slot { uint32_t efd, tfd, toff; };
struct clone_args_ { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; };
struct peek_args { uint64_t off; uint32_t flags; int32_t nr; };

static long kcmp(int p1, int p2, int type, unsigned long a, unsigned long b)
{
	return syscall(SYS_kcmp, p1, p2, type, a, b);
}

static void say(const char *what, long r)
{
	if (r < 0)
		printf("%s: -1 %s\n", what, strerrorname_np(errno));
	else
		printf("%s: %ld\n", what, r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	int p[2], me = getpid();
	if (pipe(p))
		return 1;
	int d = dup(p[1]);
	say("kcmp FILE dup", kcmp(me, me, KCMP_FILE, p[1], d));
	long a = kcmp(me, me, KCMP_FILE, p[0], p[1]), b = kcmp(me, me, KCMP_FILE, p[1], p[0]);
	printf("kcmp FILE differ: %s\n", (a == 1 && b == 2) || (a == 2 && b == 1) ? "ordered" : "wrong");
	say("kcmp VM self", kcmp(me, me, KCMP_VM, 0, 0));
	say("kcmp bad type", kcmp(me, me, 8, 0, 0));
	say("kcmp bad fd", kcmp(me, me, KCMP_FILE, 99, 0));
	say("kcmp no pid", kcmp(me, 99999, KCMP_VM, 0, 0));
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLOUT };
	epoll_ctl(ep, EPOLL_CTL_ADD, d, &ev);
	close(d);
	struct kcmp_epoll_slot slot = { ep, d, 0 };
	say("kcmp EPOLL_TFD", kcmp(me, me, KCMP_EPOLL_TFD, p[1], (unsigned long)&slot));
	slot.toff = 1;
	say("kcmp EPOLL_TFD toff 1", kcmp(me, me, KCMP_EPOLL_TFD, p[1], (unsigned long)&slot));

	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	say("kcmp VM child", kcmp(me, c, KCMP_VM, 0, 0) == 0 ? 0 : 1);
	say("kcmp FILES child", kcmp(me, c, KCMP_FILES, 0, 0) == 0 ? 0 : 1);
	say("kcmp FILE inherited", kcmp(me, c, KCMP_FILE, p[0], p[0]));
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);

	/* the namespace and mount calls of a caller without CAP_SYS_ADMIN: a child that gave up
	 * root (as root, unshare(CLONE_NEWPID) would make the next child an init whose exit ends
	 * the namespace for the rest of this probe; guest_asm/c/pidns_probe.c covers root) */
	fflush(stdout);
	pid_t u = fork();
	if (u == 0) {
		setresuid(1000, 1000, 1000);
		say("unshare bad flag", unshare(1));
		say("unshare CLONE_FILES", unshare(CLONE_FILES));
		say("unshare CLONE_FS", unshare(CLONE_FS));
		say("unshare CLONE_NEWNS", unshare(CLONE_NEWNS));
		say("unshare CLONE_NEWPID", unshare(CLONE_NEWPID));
		say("mount", syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL));
		say("umount2", syscall(SYS_umount2, "/proc", 0));
		fflush(stdout);
		_exit(0);
	}
	waitpid(u, NULL, 0);

	int pidfd = -1;
	struct clone_args_ ca = { .flags = CLONE_PIDFD_, .pidfd = (uint64_t)(uintptr_t)&pidfd, .exit_signal = SIGCHLD };
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		usleep(1000);
		_exit(7);
	}
	printf("clone3 CLONE_PIDFD: pidfd %s, cloexec %d\n", pidfd > 2 ? "set" : "unset", fcntl(pidfd, F_GETFD) & FD_CLOEXEC);
	siginfo_t si;
	fcntl(pidfd, F_SETFL, O_NONBLOCK);
	say("waitid P_PIDFD nonblock", syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL));
	fcntl(pidfd, F_SETFL, 0);
	memset(&si, 0, sizeof(si));
	say("waitid P_PIDFD", syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL));
	printf("  si_pid matches %d, si_status %d, si_code %d\n", si.si_pid == pid, si.si_status, si.si_code);
	say("waitid P_PIDFD reaped", syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL));
	say("waitid P_PIDFD not a pidfd", syscall(SYS_waitid, P_PIDFD, p[0], &si, WEXITED, NULL));
	ca.pidfd = 8;      /* an unmapped address: the whole clone fails */
	say("clone3 CLONE_PIDFD bad pointer", syscall(SYS_clone3, &ca, sizeof(ca)));
	say("clone CLONE_PIDFD|CLONE_PARENT_SETTID", syscall(SYS_clone, CLONE_PIDFD_ | CLONE_PARENT_SETTID | SIGCHLD, 0, &pidfd, 0, 0));

	say("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	say("PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0));
	say("PR_SET_PDEATHSIG 99", prctl(PR_SET_PDEATHSIG, 99, 0, 0, 0));
	int sig = -1;
	prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0);
	prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0);
	printf("PR_GET_PDEATHSIG: %d\n", sig);
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);

	/* a grandchild asks for SIGKILL when its parent goes: the parent exits, the grandchild dies */
	pid_t mid = fork();
	if (mid == 0) {
		int q[2];
		pipe(q);
		pid_t g = fork();
		if (g == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
			close(q[0]);
			write(q[1], "r", 1);
			sleep(1);
			printf("grandchild survived its parent\n");
			fflush(stdout);
			_exit(0);
		}
		char ch;
		read(q[0], &ch, 1);
		_exit(0);
	}
	waitpid(mid, NULL, 0);
	sleep(2);
	printf("after the grandchild's second\n");

	say("PR_SET_MDWE NO_INHERIT alone", prctl(65, 2, 0, 0, 0));
	say("PR_GET_MDWE", prctl(66, 0, 0, 0, 0));
	pid_t m = fork();
	if (m == 0) {
		printf("PR_SET_MDWE: %d\n", prctl(65, 1, 0, 0, 0));
		printf("PR_SET_MDWE clear: %d %s\n", prctl(65, 0, 0, 0, 0), strerrorname_np(errno));
		void *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("mmap W+X: %s\n", w == MAP_FAILED ? strerrorname_np(errno) : "mapped");
		void *r = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("mprotect gain X: %d %s\n", mprotect(r, 4096, PROT_READ | PROT_EXEC), strerrorname_np(errno));
		void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		printf("mmap R+X: %s\n", x == MAP_FAILED ? strerrorname_np(errno) : "mapped");
		printf("mprotect keep X: %d\n", mprotect(x, 4096, PROT_READ | PROT_EXEC));
		fflush(stdout);
		pid_t gc = fork();
		if (gc == 0) {
			printf("PR_GET_MDWE in child: %d\n", prctl(66, 0, 0, 0, 0));
			fflush(stdout);
			_exit(0);
		}
		waitpid(gc, NULL, 0);
		_exit(0);
	}
	waitpid(m, NULL, 0);

	/* PTRACE_PEEKSIGINFO: three queued SIGRTMIN, read from offset 1 */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	pid_t t = fork();
	if (t == 0) {
		for (;;)
			pause();
	}
	for (int i = 0; i < 3; i++) {
		union sigval v = { .sival_int = 10 + i };
		sigqueue(t, SIGRTMIN, v);
	}
	ptrace(PTRACE_ATTACH, t, 0, 0);
	waitpid(t, NULL, 0);
	siginfo_t buf[4];
	struct peek_args pa = { .off = 1, .flags = 0, .nr = 4 };
	long n = ptrace(0x4209, t, &pa, buf);
	printf("PEEKSIGINFO thread queue: %ld\n", n);
	pa.flags = 1;
	n = ptrace(0x4209, t, &pa, buf);
	printf("PEEKSIGINFO shared queue: %ld", n);
	for (int i = 0; i < n; i++)
		printf(" %d", buf[i].si_value.sival_int);
	printf("\n");
	pa.flags = 2;
	say("PEEKSIGINFO bad flag", ptrace(0x4209, t, &pa, buf));
	kill(t, SIGKILL);
	waitpid(t, NULL, 0);
	return 0;
}
