/* PID namespaces as root: clone3 CLONE_NEWPID two levels deep, clone3 set_tid, getppid of a
 * namespace's init, kill across levels (si_pid as the receiver sees the sender), an orphan
 * reparented to its namespace's init, the NSpid lines of /proc/<pid>/status, the
 * /proc/self/ns/pid links, unshare(CLONE_NEWPID) with the init's death ending the namespace
 * (fork: ENOMEM), and setns through a pidfd back to the caller's own namespace.
 * Only numbers that are the same on every kernel are printed: inside a new namespace they
 * start at 1; outer numbers are printed as relations.  A /proc shows the pid namespace it was
 * mounted in, so the first level mounts its own (in a mount namespace of its own). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_NEWPID
#define CLONE_NEWPID 0x20000000
#endif
#ifndef CLONE_NEWNS
#define CLONE_NEWNS 0x20000
#endif

struct clone_args_ { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size,
                     tls, set_tid, set_tid_size, cgroup; };

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static long clone_ns(uint64_t flags, pid_t *set_tid, size_t n)
{
	struct clone_args_ a = { .flags = flags, .exit_signal = SIGCHLD,
				 .set_tid = (uint64_t)(uintptr_t)set_tid, .set_tid_size = n };
	return syscall(SYS_clone3, &a, sizeof(a));
}

static const char *err(long r)
{
	return r < 0 ? strerrorname_np(errno) : "ok";
}

/* the NSpid line of /proc/<pid>/status ("self" for pid 0), tabs kept */
static void nspid(pid_t pid, char *buf, size_t len)
{
	char path[64], line[200];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	buf[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(buf, len, "%s", line + 6);
			break;
		}
	fclose(f);
}

static volatile sig_atomic_t got_sig, got_pid = -1;

static void handler(int sig, siginfo_t *si, void *uc)
{
	got_sig = sig;
	got_pid = si->si_pid;
}

static void catch(int sig)
{
	struct sigaction sa = { .sa_sigaction = handler, .sa_flags = SA_SIGINFO };
	sigaction(sig, &sa, NULL);
}

static void wait_sig(int sig)
{
	sigset_t none;
	sigemptyset(&none);
	while (got_sig != sig)
		sigsuspend(&none);
}

/* the second level: init of ns2 (called in the child c1 made) */
static int level2(int ready)
{
	char buf[256];
	catch(SIGUSR1);
	catch(SIGUSR2);
	out("ns2 init: getpid %d getppid %d\n", getpid(), getppid());
	write(ready, "r", 1);
	wait_sig(SIGUSR1);
	out("ns2 init: SIGUSR1 from the parent namespace, si_pid %d\n", got_pid);
	got_sig = 0;
	pid_t g = fork();
	if (g == 0) {
		nspid(0, buf, sizeof(buf));
		/* the /proc it reads was mounted outside: its NSpid starts there, three levels up */
		int fields = 0;
		for (char *x = buf; *x; x++)
			fields += *x == '\t';
		const char *last = strrchr(buf, '\t');
		out("ns2 child: getpid %d getppid %d NSpid: %d numbers, last %s\n", getpid(), getppid(),
		    fields, last ? last + 1 : "-");
		kill(getppid(), SIGUSR2);
		_exit(3);
	}
	wait_sig(SIGUSR2);
	out("ns2 init: SIGUSR2 from its child, si_pid %d (fork said %d)\n", got_pid, g);
	int st;
	pid_t w = waitpid(g, &st, 0);
	out("ns2 init: waitpid %d status %d\n", w, WEXITSTATUS(st));
	/* an orphan: a's child b outlives a and goes to this init */
	int p[2];
	pipe(p);
	pid_t a = fork();
	if (a == 0) {
		pid_t b = fork();
		if (b == 0) {
			char c;
			close(p[1]);
			read(p[0], &c, 1);          /* a has exited and this init has reaped it */
			for (int i = 0; i < 1000 && getppid() != 1; i++)
				usleep(1000);       /* (Linux closes a's files before it reparents b) */
			out("orphan: getpid %d getppid %d\n", getpid(), getppid());
			_exit(4);
		}
		_exit(0);
	}
	close(p[0]);
	w = waitpid(a, &st, 0);
	out("ns2 init: reaped a %d\n", w == a);
	close(p[1]);
	w = waitpid(-1, &st, 0);
	out("ns2 init: reaped the orphan %d status %d\n", w, WEXITSTATUS(st));
	out("ns2 init: kill(99, 0) %s\n", err(kill(99, 0)));
	return 0;
}

/* the first level: init of ns1 */
static int level1(void)
{
	char buf[256], link[64] = "";
	catch(SIGUSR1);
	out("ns1 init: getpid %d getppid %d gettid %ld\n", getpid(), getppid(), syscall(SYS_gettid));
	nspid(0, buf, sizeof(buf));
	out("ns1 init: the outer /proc shows it as %s\n", strrchr(buf, '\t') && strrchr(buf, '\t') != strchr(buf, '\t') ? "outer and 1" : buf);
	/* its own /proc (it was cloned with a mount namespace of its own) */
	out("ns1 init: mount / private %s\n", err(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)));
	out("ns1 init: mount proc %s\n", err(mount("proc", "/proc", "proc", 0, NULL)));
	nspid(0, buf, sizeof(buf));
	out("ns1 init: its own /proc: NSpid:%s\n", buf);
	int r[2];
	pipe(r);
	long c2 = clone_ns(CLONE_NEWPID, NULL, 0);
	if (c2 == 0) {
		close(r[0]);
		_exit(level2(r[1]));
	}
	close(r[1]);
	char c;
	read(r[0], &c, 1);
	nspid(c2, buf, sizeof(buf));
	out("ns1 init: clone3 CLONE_NEWPID gave %ld, its NSpid:%s\n", c2, buf);
	kill(c2, SIGUSR1);
	int st;
	pid_t w = waitpid(c2, &st, 0);
	out("ns1 init: waitpid %d status %d\n", w, WEXITSTATUS(st));
	readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	out("ns1 init: ns/pid is not the first: %d\n", strcmp(link, "pid:[4026531836]") != 0);
	return 0;
}

static pid_t child_of(pid_t parent)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;
	while (d && (e = readdir(d))) {
		char path[300], line[256];
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "PPid:", 5) && atoi(line + 5) == parent)
				found = atoi(e->d_name);
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

int main(void)
{
	char link[64] = "", link2[64] = "", buf[256];
	int st;
	readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	readlink("/proc/self/ns/pid_for_children", link2, sizeof(link2) - 1);
	out("ns/pid %s pid_for_children %s\n", link, link2);

	/* set_tid: a number in use, out of range, and pid 1 of a new namespace */
	pid_t tid[2] = { getpid(), 0 };
	out("set_tid own pid: %s\n", err(clone_ns(0, tid, 1)));
	tid[0] = 0;
	out("set_tid 0: %s\n", err(clone_ns(0, tid, 1)));
	tid[0] = 1;
	out("set_tid 2 levels without a new namespace: %s\n", err(clone_ns(0, tid, 2)));
	tid[0] = 5;
	out("set_tid 5 in a namespace with no init: %s\n", err(clone_ns(CLONE_NEWPID, tid, 1)));
	tid[0] = 1;
	tid[1] = 3999;
	long c = clone_ns(CLONE_NEWPID, tid, 2);
	if (c == 0) {
		out("set_tid child: getpid %d getppid %d\n", getpid(), getppid());
		_exit(0);
	}
	waitpid(c, &st, 0);
	out("set_tid [1, 3999]: returned 3999: %d\n", c == 3999);

	/* two levels deep */
	long c1 = clone_ns(CLONE_NEWPID | CLONE_NEWNS, NULL, 0);
	if (c1 == 0)
		_exit(level1());
	waitpid(c1, &st, 0);
	out("ns1 exit status %d\n", WEXITSTATUS(st));

	/* unshare: the caller stays, its next child is pid 1 of the new namespace */
	out("unshare CLONE_NEWPID: %s\n", err(unshare(CLONE_NEWPID)));
	memset(link2, 0, sizeof(link2));
	long rl = readlink("/proc/self/ns/pid_for_children", link2, sizeof(link2) - 1);
	out("after unshare: pid_for_children before its init is born: %s\n", err(rl));
	out("unshare CLONE_NEWPID again: %s\n", err(unshare(CLONE_NEWPID)));
	int p[2], q[2];
	pipe(p);
	pipe(q);
	pid_t init = fork();
	if (init == 0) {
		close(p[0]);
		close(q[1]);
		pid_t s = fork();
		if (s == 0) {
			for (;;)
				pause();
		}
		out("init: getpid %d getppid %d, sleeper %d\n", getpid(), getppid(), s);
		write(p[1], "r", 1);
		char ch;
		read(q[0], &ch, 1);
		_exit(5);               /* the namespace ends with it */
	}
	close(p[1]);
	close(q[0]);
	char ch;
	read(p[0], &ch, 1);
	memset(link, 0, sizeof(link));
	memset(link2, 0, sizeof(link2));
	readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	readlink("/proc/self/ns/pid_for_children", link2, sizeof(link2) - 1);
	out("with its init: pid_for_children differs from pid: %d\n", strcmp(link, link2) != 0);
	nspid(init, buf, sizeof(buf));
	pid_t s = child_of(init);
	out("parent: NSpid of init has 1 last: %d; sleeper found %d, alive %d\n",
	    strstr(buf, "\t1") != NULL && buf[strlen(buf) - 1] == '1', s > 0, kill(s, 0) == 0);
	write(q[1], "x", 1);
	waitpid(init, &st, 0);
	out("init exit status %d; sleeper gone %d (%s)\n", WEXITSTATUS(st), kill(s, 0) < 0, strerrorname_np(errno));
	pid_t f = fork();
	if (f == 0)
		_exit(0);
	out("fork into the dead namespace: %s\n", err(f));
	int me = syscall(SYS_pidfd_open, getpid(), 0);
	out("setns back to its own namespace: %s\n", err(syscall(SYS_setns, me, CLONE_NEWPID)));
	f = fork();
	if (f == 0)
		_exit(6);
	waitpid(f, &st, 0);
	out("fork after setns: status %d\n", WEXITSTATUS(st));
	return 0;
}
