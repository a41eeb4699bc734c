/* emukern's /init for booting a real Linux kernel under qemu-system (see emukern/oracle/console.py).
 *
 * It runs the programs listed under /emukern/<n>/ one after another, each as the init (pid 1) of
 * its own pid and mount namespace, so that getpid() and the process tree look as they do under
 * emukern, where the guest is the first task.  A program's stdout and stderr go to pipes, never to
 * the console: the runner re-emits them as framed, hex-encoded, CRC-checked lines, so the kernel's
 * own console messages can never be mistaken for guest output and binary output survives the
 * serial line.  Every line the runner writes is "@@EMUKERN <body> <crc32 of body, 8 hex digits>";
 * the host accepts nothing else as the runner's (a kernel message spliced into a line breaks its CRC).
 *
 *   @@EMUKERN BOOT <uname release> <uname machine> -
 *   @@EMUKERN BEGIN <n> -
 *   @@EMUKERN OUT <n> <fd> <hex bytes>        (fd 1 = stdout, 2 = stderr, at most 192 bytes a line)
 *   @@EMUKERN KILLED <n> <signal> -             (before EXIT when a signal ended the program)
 *   @@EMUKERN EXIT <n> <status> -               (status as emukern reports it: 128+N for signal N)
 *   @@EMUKERN STOP <n> <signal> -               (the program's stop signal was sent, see "opts")
 *   @@EMUKERN TIMEOUT <n> <seconds> -
 *   @@EMUKERN DONE -
 *
 * /emukern/<n>/argv holds the NUL-terminated argv (argv[0] is the path executed),
 * /emukern/<n>/timeout the seconds allowed (decimal text), /emukern/setup optional lines
 * "PATH VALUE" written before the first program (e.g. /proc/sys/abi/sve_default_vector_length).
 * /emukern/<n>/opts (optional) holds lines that make the run look like a kselftest runner's:
 *   cwd DIR            chdir(DIR) before execve (kselftest runs every test from its directory)
 *   nopidns            no pid namespace of its own: the program is an ordinary process, as
 *                      under run_kselftest.sh (an init ignores signals it has no handler for)
 *   stack unlimited    RLIMIT_STACK = RLIM_INFINITY (`ulimit -s unlimited`, riscv/mm's script)
 *   stop SIG SECONDS   after SECONDS send SIG to the program, as the stress harnesses do
 * Every program runs in its own process group, which is killed once the program has exited (or
 * at its time limit), so no child of one program runs on into the next.
 * When everything ran, the runner powers the machine off (reboot(POWER_OFF)), so qemu exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int console = 1;

static uint32_t crc32(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1u));
	}
	return c ^ 0xffffffffu;
}

/* One line, one write(): the tty layer never interleaves another writer inside it. */
static void emit(const char *line)
{
	size_t n = strlen(line), off = 0;
	while (off < n) {
		ssize_t w = write(console, line + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		off += (size_t)w;
	}
}

static void emit_payload(const char *head, const unsigned char *p, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	char line[256 + 2 * 192 + 16];
	size_t k = (size_t)snprintf(line, 256, "@@EMUKERN %s ", head);
	if (k >= 256)
		k = 255;
	for (size_t i = 0; i < n; i++) {
		line[k++] = hx[p[i] >> 4];
		line[k++] = hx[p[i] & 15];
	}
	if (n == 0)
		line[k++] = '-';
	snprintf(line + k, sizeof(line) - k, " %08x\n",
		 crc32((const unsigned char *)line + 10, k - 10));
	emit(line);
}

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (n == cap)
			buf = realloc(buf, (cap *= 2) + 1);
		ssize_t r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

static void setup_files(void)
{
	size_t n;
	char *s = slurp("/emukern/setup", &n);
	if (!s)
		return;
	for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		int fd = open(line, O_WRONLY);
		char msg[300];
		if (fd < 0 || write(fd, sp + 1, strlen(sp + 1)) < 0) {
			snprintf(msg, sizeof(msg), "SETUP-FAILED %s %d", line, errno);
			emit_payload(msg, NULL, 0);
		}
		if (fd >= 0)
			close(fd);
	}
	free(s);
}

struct child_args {
	char **argv;
	const char *cwd;
	int stack_unlimited;
	int out[2], err[2], status[2];	/* status: close-on-exec; carries execve's errno if it fails */
};

static char child_stack[256 * 1024] __attribute__((aligned(16)));

static int child_main(void *arg)
{
	struct child_args *a = arg;
	char *envp[] = { "PATH=/bin", NULL };
	setpgid(0, 0);
	/* our own /proc, showing our own pid namespace */
	mkdir("/proc", 0555);
	mount("proc", "/proc", "proc", 0, NULL);
	if (a->stack_unlimited) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
		setrlimit(RLIMIT_STACK, &rl);
	}
	if (a->cwd && chdir(a->cwd) != 0) {
		int e = errno;
		if (write(a->status[1], &e, sizeof(e)) < 0)
			_exit(126);
		_exit(127);
	}
	int in = open("/dev/null", O_RDONLY);
	if (in >= 0) {
		dup2(in, 0);
		if (in != 0)
			close(in);
	}
	dup2(a->out[1], 1);
	dup2(a->err[1], 2);
	close(a->out[0]); close(a->out[1]);
	close(a->err[0]); close(a->err[1]);
	close(a->status[0]);
	if (console > 2)
		close(console);
	execve(a->argv[0], a->argv, envp);
	int e = errno;
	if (write(a->status[1], &e, sizeof(e)) < 0)
		_exit(126);
	_exit(127);
}

static void run_one(int n)
{
	char path[64], head[64];
	size_t alen;
	snprintf(path, sizeof(path), "/emukern/%d/argv", n);
	char *raw = slurp(path, &alen);
	int argc = 0;
	for (size_t i = 0; i < alen; i++)
		argc += raw[i] == 0;
	char **argv = calloc((size_t)argc + 1, sizeof(char *));
	for (size_t i = 0, k = 0; i < alen && k < (size_t)argc; k++) {
		argv[k] = raw + i;
		i += strlen(raw + i) + 1;
	}
	long timeout = 60;
	size_t tl;
	snprintf(path, sizeof(path), "/emukern/%d/timeout", n);
	char *ts = slurp(path, &tl);
	if (ts) {
		timeout = strtol(ts, NULL, 10);
		free(ts);
	}

	int cflags = CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, stop_sig = 0, stack_unlimited = 0;
	long stop_after = -1;
	char *cwd = NULL, *opts;
	size_t ol;
	snprintf(path, sizeof(path), "/emukern/%d/opts", n);
	opts = slurp(path, &ol);
	for (char *line = opts ? strtok(opts, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		if (!strncmp(line, "cwd ", 4))
			cwd = line + 4;
		else if (!strcmp(line, "nopidns"))
			cflags &= ~CLONE_NEWPID;
		else if (!strcmp(line, "stack unlimited"))
			stack_unlimited = 1;
		else if (!strncmp(line, "stop ", 5))
			sscanf(line + 5, "%d %ld", &stop_sig, &stop_after);
	}

	snprintf(head, sizeof(head), "BEGIN %d", n);
	emit_payload(head, NULL, 0);
	struct child_args a = { .argv = argv, .cwd = cwd, .stack_unlimited = stack_unlimited };
	if (pipe2(a.out, O_CLOEXEC) || pipe2(a.err, O_CLOEXEC) || pipe2(a.status, O_CLOEXEC)) {
		snprintf(head, sizeof(head), "ERROR %d pipe %d", n, errno);
		emit_payload(head, NULL, 0);
		return;
	}
	pid_t pid = clone(child_main, child_stack + sizeof(child_stack), cflags, &a);
	if (pid < 0) {
		snprintf(head, sizeof(head), "ERROR %d clone %d", n, errno);
		emit_payload(head, NULL, 0);
		free(opts);
		return;
	}
	setpgid(pid, pid);	/* both sides, so the group exists before either needs it */
	close(a.out[1]);
	close(a.err[1]);
	close(a.status[1]);
	int exec_errno = 0;
	if (read(a.status[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
		snprintf(head, sizeof(head), "ERROR %d execve %d", n, exec_errno);
		emit_payload(head, NULL, 0);
	}
	close(a.status[0]);
	struct pollfd pf[2] = { { a.out[0], POLLIN, 0 }, { a.err[0], POLLIN, 0 } };
	int open_fds = 2, timed_out = 0, stopped = 0, reaped = 0, st = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (open_fds > 0) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		long left = timeout * 1000 - ms;
		if (left <= 0) {
			if (!reaped) {
				timed_out = 1;
				kill(pid, SIGKILL);
				kill(-pid, SIGKILL);
			}
			break;
		}
		if (stop_sig && !stopped && !reaped && ms >= stop_after * 1000) {
			/* what fp-stress does to a child at the end of its run: kill(pid, SIGTERM) */
			kill(pid, stop_sig);
			stopped = 1;
			snprintf(head, sizeof(head), "STOP %d %d", n, stop_sig);
			emit_payload(head, NULL, 0);
		}
		if (!reaped) {
			pid_t w = waitpid(pid, &st, WNOHANG);
			if (w == pid) {
				/* the program is done: whatever it left behind goes too (and its pipe ends) */
				reaped = 1;
				kill(-pid, SIGKILL);
			}
		}
		int wait_ms = left > 100 ? 100 : (int)(left > 0 ? left : 100);
		int r = poll(pf, 2, wait_ms);
		if (r < 0 && errno == EINTR)
			continue;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			unsigned char buf[192];
			ssize_t got = read(pf[i].fd, buf, sizeof(buf));
			if (got > 0) {
				snprintf(head, sizeof(head), "OUT %d %d", n, i + 1);
				emit_payload(head, buf, (size_t)got);
			} else {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
			}
		}
	}
	while (!reaped && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	kill(-pid, SIGKILL);
	if (timed_out) {
		snprintf(head, sizeof(head), "TIMEOUT %d %ld", n, timeout);
		emit_payload(head, NULL, 0);
	}
	int status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
	if (WIFSIGNALED(st)) {
		snprintf(head, sizeof(head), "KILLED %d %d", n, WTERMSIG(st));
		emit_payload(head, NULL, 0);
	}
	snprintf(head, sizeof(head), "EXIT %d %d", n, status);
	emit_payload(head, NULL, 0);
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	free(argv);
	free(raw);
	free(opts);
}

int main(void)
{
	mkdir("/dev", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mkdir("/proc", 0555);
	mount("proc", "/proc", "proc", 0, NULL);	/* for the setup writes to /proc/sys */
	int fd = open("/dev/console", O_WRONLY | O_NOCTTY);
	if (fd >= 0)
		console = fd;
	/* the kernel's own messages would only interleave with ours: from here on only panics */
	syscall(SYS_syslog, 8 /* SYSLOG_ACTION_CONSOLE_LEVEL */, NULL, 1);
	struct utsname u;
	uname(&u);
	char head[200];
	snprintf(head, sizeof(head), "BOOT %s %s", u.release, u.machine);
	emit_payload(head, NULL, 0);
	setup_files();
	for (int n = 0;; n++) {
		char path[64];
		struct stat sb;
		snprintf(path, sizeof(path), "/emukern/%d/argv", n);
		if (stat(path, &sb) != 0)
			break;
		run_one(n);
	}
	emit_payload("DONE", NULL, 0);
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}
