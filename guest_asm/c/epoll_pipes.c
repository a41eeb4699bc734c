/* epoll on pipes and eventfd, as fp-stress uses it: readiness, blocking waits, timeouts, errors.
 * Prints one line per check; emukern's output is compared with qemu-user's (the host kernel). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void show(const char *what, int ret)
{
	printf("%s: %d%s%s\n", what, ret, ret < 0 ? " " : "", ret < 0 ? strerror(errno) : "");
}

static void events(const char *what, int ep, int timeout)
{
	struct epoll_event ev[8];
	int n = epoll_wait(ep, ev, 8, timeout), i, j;

	/* sort by data so the line does not depend on the ready-list order */
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (ev[j].data.u64 < ev[i].data.u64) {
				struct epoll_event t = ev[i]; ev[i] = ev[j]; ev[j] = t;
			}
	printf("%s: %d", what, n);
	if (n < 0)
		printf(" %s", strerror(errno));
	for (i = 0; i < n; i++)
		printf(" [%llu:%#x]", (unsigned long long)ev[i].data.u64, ev[i].events);
	printf("\n");
}

int main(void)
{
	int ep, p[2], efd, ep2, st;
	struct epoll_event ev = { 0 };
	uint64_t v;
	char buf[16];
	pid_t pid;

	show("create1 bad flags", epoll_create1(1));
	ep = epoll_create1(EPOLL_CLOEXEC);
	show("create1", ep >= 0 ? 0 : -1);
	show("pipe", pipe(p));
	ev.events = EPOLLIN;
	ev.data.u64 = 1;
	show("add pipe read end", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	show("add again", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	show("mod missing", epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &ev));
	show("del missing", epoll_ctl(ep, EPOLL_CTL_DEL, p[1], &ev));
	show("add self", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev));
	show("add bad fd", epoll_ctl(ep, EPOLL_CTL_ADD, 99, &ev));
	show("ctl on a pipe", epoll_ctl(p[0], EPOLL_CTL_ADD, p[1], &ev));
	events("empty, timeout 0", ep, 0);
	events("still empty", ep, 0);
	{
		struct epoll_event e1;
		show("wait maxevents 0", epoll_wait(ep, &e1, 0, 0));
	}
	show("write 3", write(p[1], "abc", 3));
	events("pipe readable", ep, 0);

	efd = eventfd(3, 0);
	ev.events = EPOLLIN | EPOLLOUT;
	ev.data.u64 = 2;
	show("add eventfd", epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev));
	events("pipe + eventfd", ep, 0);
	show("read eventfd", read(efd, &v, 8));
	printf("eventfd value %llu\n", (unsigned long long)v);
	events("eventfd drained", ep, 0);
	show("short eventfd read", read(efd, &v, 4));
	show("read pipe", read(p[0], buf, sizeof(buf)));
	events("pipe drained", ep, 0);
	v = 5;
	show("write eventfd", write(efd, &v, 8));
	v = UINT64_MAX;
	show("write ULLONG_MAX", write(efd, &v, 8));
	ev.events = EPOLLOUT;
	show("mod eventfd to OUT", epoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev));
	events("after mod", ep, 0);
	show("del eventfd", epoll_ctl(ep, EPOLL_CTL_DEL, efd, &ev));

	/* a child writes after 10 ms: the parent's infinite wait blocks, then wakes */
	pid = fork();
	if (pid == 0) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		write(p[1], "x", 1);
		_exit(0);
	}
	events("blocking wait", ep, -1);
	waitpid(pid, &st, 0);
	show("read pipe", read(p[0], buf, sizeof(buf)));
	events("timeout 20 ms", ep, 20);

	/* nested: an epoll watching the first one */
	ep2 = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.u64 = 7;
	show("add epoll to epoll", epoll_ctl(ep2, EPOLL_CTL_ADD, ep, &ev));
	show("loop", epoll_ctl(ep, EPOLL_CTL_ADD, ep2, &ev));
	events("nested idle", ep2, 0);
	write(p[1], "y", 1);
	events("nested ready", ep2, 0);
	read(p[0], buf, 1);

	/* hang-up: the last writer goes */
	close(p[1]);
	events("writer closed", ep, 0);

	/* semaphore and non-blocking eventfd */
	efd = eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
	show("sem read", read(efd, &v, 8));
	printf("sem value %llu\n", (unsigned long long)v);
	show("sem read", read(efd, &v, 8));
	show("sem read empty", read(efd, &v, 8));
	show("eventfd bad flags", eventfd(0, 0x40));

	/* the item goes when the file's last descriptor does */
	show("close read end", close(p[0]));
	events("after close", ep, 0);
	return 0;
}
