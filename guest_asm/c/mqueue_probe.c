/* POSIX message queue probe (tests/test_sysv_ipc_mqueue.py): mq_open's rules (names, O_EXCL, attributes
 * and their limits, RLIMIT_MSGQUEUE), priority order, O_NONBLOCK's EAGAIN, EMSGSIZE, absolute
 * timeouts, mq_getsetattr, mq_notify with a signal, a receiver woken by another process, and
 * reading the queue's descriptor.  Names carry the pid so parallel runs do not meet.  What
 * qemu-user decides itself or the host's capabilities decide (raw names, mq_notify, limits for
 * CAP_SYS_RESOURCE, RLIMIT_MSGQUEUE shared with the host's other queues) is checked on emukern
 * alone, in tests/test_sysv_ipc_mqueue.py. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static const char *en(long r)
{
	if (r != -1)
		return "ok";
	switch (errno) {
	case EINVAL: return "EINVAL"; case ENOENT: return "ENOENT"; case EEXIST: return "EEXIST";
	case EACCES: return "EACCES"; case EAGAIN: return "EAGAIN"; case EMSGSIZE: return "EMSGSIZE";
	case ETIMEDOUT: return "ETIMEDOUT"; case EBADF: return "EBADF"; case EMFILE: return "EMFILE";
	case EBUSY: return "EBUSY"; case EINTR: return "EINTR";
	default: return "other";
	}
}

int main(void)
{
	char name[64], other[64], buf[9000];
	unsigned prio;
	snprintf(name, sizeof(name), "/ek-probe-%d", getpid());
	snprintf(other, sizeof(other), "/ek-probe-%d-b", getpid());
	printf("missing: %s\n", en(mq_open(name, O_RDONLY)));
	struct mq_attr a = { 0, 0, 100, 0 };
	printf("maxmsg 0: %s\n", en(mq_open(name, O_RDWR | O_CREAT, 0600, &a)));
	a.mq_maxmsg = 4; a.mq_msgsize = 0;
	printf("msgsize 0: %s\n", en(mq_open(name, O_RDWR | O_CREAT, 0600, &a)));
	a.mq_maxmsg = 70000; a.mq_msgsize = 10;
	printf("maxmsg 70000: %s\n", en(mq_open(name, O_RDWR | O_CREAT, 0600, &a)));
	a.mq_maxmsg = 3; a.mq_msgsize = 16;
	mqd_t q = mq_open(name, O_RDWR | O_CREAT | O_NONBLOCK, 0600, &a);
	printf("create: %s\n", en(q));
	printf("excl: %s\n", en(mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a)));
	mqd_t q2 = mq_open(name, O_RDONLY);
	printf("open again: %s\n", en(q2));
	printf("send on read-only: %s\n", en(mq_send(q2, "x", 1, 0)));
	printf("prio too big: %s\n", en(mq_send(q, "x", 1, 32768)));
	printf("too long: %s\n", en(mq_send(q, buf, 17, 0)));
	mq_send(q, "low", 3, 1);
	mq_send(q, "high", 4, 9);
	mq_send(q, "low2", 4, 1);
	printf("full: %s\n", en(mq_send(q, "x", 1, 0)));
	struct pollfd p = { q, POLLIN | POLLOUT, 0 };
	poll(&p, 1, 0);
	printf("poll full: %#x\n", p.revents);
	struct mq_attr got;
	mq_getattr(q, &got);
	printf("attr: flags %#lx maxmsg %ld msgsize %ld curmsgs %ld\n", got.mq_flags, got.mq_maxmsg,
	       got.mq_msgsize, got.mq_curmsgs);
	int n = read(q, buf, sizeof(buf));
	printf("read: %.*s", n, buf);
	printf("short buffer: %s\n", en(mq_receive(q, buf, 15, &prio)));
	for (int i = 0; i < 3; i++) {
		n = mq_receive(q, buf, sizeof(buf), &prio);
		printf("got \"%.*s\" prio %u\n", n, buf, prio);
	}
	printf("empty: %s\n", en(mq_receive(q, buf, sizeof(buf), &prio)));
	struct mq_attr nb = { 0 };
	mq_setattr(q, &nb, &got);
	printf("setattr: old flags %#lx\n", got.mq_flags);
	nb.mq_flags = 1;
	printf("setattr bad flags: %s\n", en(mq_setattr(q, &nb, NULL)));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 20000000;
	if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
	printf("timed receive: %s\n", en(mq_timedreceive(q, buf, sizeof(buf), &prio, &ts)));
	ts.tv_nsec = -1;
	printf("bad timeout: %s\n", en(mq_timedreceive(q, buf, sizeof(buf), &prio, &ts)));

	/* a blocking receiver woken by a child's send */
	mqd_t qb = mq_open(name, O_RDWR);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		usleep(20000);
		mq_send(qb, "child", 5, 3);
		_exit(0);
	}
	n = mq_receive(qb, buf, sizeof(buf), &prio);
	printf("woken: \"%.*s\" prio %u\n", n, buf, prio);
	waitpid(c, NULL, 0);
	printf("unlink: %s\n", en(mq_unlink(name)));
	printf("unlink again: %s\n", en(mq_unlink(name)));
	printf("still usable: %s\n", en(mq_send(q, "z", 1, 0)));
	printf("defaults: %s\n", en(q = mq_open(other, O_RDWR | O_CREAT, 0600, NULL)));
	mq_getattr(q, &got);
	printf("default attr: maxmsg %ld msgsize %ld\n", got.mq_maxmsg, got.mq_msgsize);
	mq_unlink(other);
	printf("bad fd: %s\n", en(mq_send(99, "x", 1, 0)));
	return 0;
}
