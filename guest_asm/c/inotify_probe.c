/* inotify probe (tests/test_inotify.py): inotify_init1's flags, inotify_add_watch's and
 * inotify_rm_watch's errors, and the events of the program's own changes in a directory it
 * makes under the current one: create, modify (merged when repeated), close after writing or
 * reading, rename (one cookie for the pair), delete, a watched directory's removal
 * (IN_DELETE_SELF then IN_IGNORED), rm_watch's IN_IGNORED; poll readiness, IN_NONBLOCK's
 * EAGAIN, a short buffer's EINVAL and a blocking read woken by a child's change. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *en(long r)
{
	if (r != -1)
		return "ok";
	switch (errno) {
	case EINVAL: return "EINVAL"; case EBADF: return "EBADF"; case ENOENT: return "ENOENT";
	case ENOTDIR: return "ENOTDIR"; case EEXIST: return "EEXIST"; case EAGAIN: return "EAGAIN";
	default: return "other";
	}
}

static unsigned last_cookie;

static void show(const char *buf, long n)
{
	static const char *names[] = { "ACCESS", "MODIFY", "ATTRIB", "CLOSE_WRITE", "CLOSE_NOWRITE",
		"OPEN", "MOVED_FROM", "MOVED_TO", "CREATE", "DELETE", "DELETE_SELF", "MOVE_SELF" };
	for (long off = 0; off < n;) {
		const struct inotify_event *e = (const void *)(buf + off);
		printf("  wd %d", e->wd);
		for (int i = 0; i < 12; i++)
			if (e->mask & (1u << i))
				printf(" %s", names[i]);
		if (e->mask & IN_IGNORED) printf(" IGNORED");
		if (e->mask & IN_ISDIR) printf(" ISDIR");
		if (e->cookie) {
			printf(" cookie %s", e->cookie == last_cookie ? "same" : "new");
			last_cookie = e->cookie;
		}
		printf(" len %u name \"%s\"\n", e->len, e->len ? e->name : "");
		off += sizeof(*e) + e->len;
	}
}

static void drain(int fd, const char *what)
{
	char buf[4096] __attribute__((aligned(8)));
	long n = read(fd, buf, sizeof(buf));
	printf("%s: %s\n", what, n < 0 ? en(n) : "events");
	if (n > 0)
		show(buf, n);
}

int main(void)
{
	const unsigned M = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE |
			   IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF;
	printf("init1 bad flags: %s\n", en(inotify_init1(1)));
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	printf("init1: %s cloexec %d\n", en(fd), !!(fcntl(fd, F_GETFD) & FD_CLOEXEC));
	mkdir("ino.d", 0755);
	printf("mask 0: %s\n", en(inotify_add_watch(fd, "ino.d", 0)));
	printf("add|create: %s\n", en(inotify_add_watch(fd, "ino.d", IN_CREATE | IN_MASK_ADD | IN_MASK_CREATE)));
	printf("bad fd: %s\n", en(inotify_add_watch(99, "ino.d", IN_CREATE)));
	printf("not inotify: %s\n", en(inotify_add_watch(1, "ino.d", IN_CREATE)));
	printf("missing: %s\n", en(inotify_add_watch(fd, "ino.d/none", IN_CREATE)));
	int wd = inotify_add_watch(fd, "ino.d", M);
	printf("watch: wd %d\n", wd);
	printf("again: wd %d\n", inotify_add_watch(fd, "ino.d", M));
	printf("mask create: %s\n", en(inotify_add_watch(fd, "ino.d", M | IN_MASK_CREATE)));
	drain(fd, "empty");
	struct pollfd p = { fd, POLLIN, 0 };
	printf("poll empty: %d\n", poll(&p, 1, 0));

	int f = open("ino.d/f", O_CREAT | O_WRONLY, 0644);
	write(f, "ab", 2);
	write(f, "cd", 2);
	close(f);
	printf("poll: %d revents %#x\n", poll(&p, 1, 0), p.revents);
	char small[8];
	printf("short buffer: %s\n", en(read(fd, small, sizeof(small))));
	drain(fd, "create/write/close");
	f = open("ino.d/f", O_RDONLY);
	int fw = inotify_add_watch(fd, "ino.d/f", M);
	printf("file watch: wd %d\n", fw);
	close(f);
	printf("onlydir on a file: %s\n", en(inotify_add_watch(fd, "ino.d/f", M | IN_ONLYDIR)));
	rename("ino.d/f", "ino.d/g");
	drain(fd, "close-nowrite/rename");
	mkdir("ino.d/sub", 0755);
	int sw = inotify_add_watch(fd, "ino.d/sub", M);
	rmdir("ino.d/sub");
	drain(fd, "mkdir/rmdir");
	unlink("ino.d/g");
	drain(fd, "unlink");
	printf("rm_watch: %s\n", en(inotify_rm_watch(fd, wd)));
	printf("rm_watch again: %s\n", en(inotify_rm_watch(fd, wd)));
	printf("rm_watch removed dir: %s\n", en(inotify_rm_watch(fd, sw)));
	drain(fd, "rm_watch");

	/* a blocking instance woken by a child's change */
	int bfd = inotify_init1(0);
	inotify_add_watch(bfd, "ino.d", IN_CREATE);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		usleep(20000);
		close(open("ino.d/late", O_CREAT | O_WRONLY, 0644));
		_exit(0);
	}
	drain(bfd, "blocking read");
	waitpid(c, NULL, 0);
	unlink("ino.d/late");
	rmdir("ino.d");
	return 0;
}
