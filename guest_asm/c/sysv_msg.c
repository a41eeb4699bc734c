/* SysV message queue probe (tests/test_sysv_ipc.py): msgget's key rules, msgsnd/msgrcv's
 * type selection (0, positive, negative, MSG_EXCEPT), MSG_NOERROR and E2BIG, IPC_NOWAIT's
 * ENOMSG/EAGAIN, the msg_qbytes budget, a sleeping receiver and sender woken by another
 * process, EIDRM on removal, IPC_STAT's counts.  IPC_PRIVATE queues only.  (A size of
 * (size_t)-1 is EINVAL in Linux but crashes qemu-user, which allocates size + 8 first: not
 * probed here; tests/test_sysv_ipc.py checks it on emukern alone.) */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/wait.h>

struct m { long type; char text[64]; };
static struct { long type; char text[9000]; } big = { 1 };

static const char *en(long r)
{
	if (r != -1)
		return "ok";
	switch (errno) {
	case EINVAL: return "EINVAL"; case ENOENT: return "ENOENT"; case EEXIST: return "EEXIST";
	case EAGAIN: return "EAGAIN"; case E2BIG: return "E2BIG"; case ENOMSG: return "ENOMSG";
	case EIDRM: return "EIDRM"; case EACCES: return "EACCES"; case EFAULT: return "EFAULT";
	case EPERM: return "EPERM"; case EINTR: return "EINTR";
	default: return "other";
	}
}

static int snd(int q, long type, const char *s, int flg)
{
	struct m b = { type };
	strcpy(b.text, s);
	return msgsnd(q, &b, strlen(s) + 1, flg);
}

static void rcv(int q, long type, size_t sz, int flg)
{
	struct m b;
	memset(&b, 0, sizeof(b));
	long n = msgrcv(q, &b, sz, type, flg);
	if (n < 0)
		printf("rcv %ld: %s\n", type, en(n));
	else
		printf("rcv %ld: %ld bytes type %ld \"%.*s\"\n", type, n, b.type, (int)n, b.text);
}

int main(void)
{
	struct msqid_ds ds;
	int q = msgget(IPC_PRIVATE, 0600);
	printf("create: %s\n", en(q));
	printf("type 0: %s\n", en(snd(q, 0, "x", 0)));
	printf("type -1: %s\n", en(snd(q, -1, "x", 0)));
	printf("size 8193: %s\n", en(msgsnd(q, &big, 8193, 0)));
	printf("bad id: %s\n", en(snd(-1, 1, "x", 0)));
	printf("efault: %s\n", en(msgsnd(q, (void *)8, 1, 0)));
	snd(q, 5, "five", 0);
	snd(q, 3, "three", 0);
	snd(q, 7, "seven", 0);
	snd(q, 3, "three-b", 0);
	snd(q, 1, "one", 0);
	msgctl(q, IPC_STAT, &ds);
	printf("stat: qnum %lu cbytes %lu qbytes %lu lspid==me %d\n", (unsigned long)ds.msg_qnum,
	       (unsigned long)ds.__msg_cbytes, (unsigned long)ds.msg_qbytes, ds.msg_lspid == getpid());
	rcv(q, 3, 64, 0);
	rcv(q, -4, 64, 0);
	rcv(q, 9, 64, IPC_NOWAIT);
	rcv(q, 5, 64, MSG_EXCEPT);
	rcv(q, 0, 2, IPC_NOWAIT);
	rcv(q, 0, 2, MSG_NOERROR);
	rcv(q, 0, 64, 0);
	rcv(q, 0, 64, IPC_NOWAIT);
	printf("copy without nowait: %s\n", en(msgrcv(q, &(struct m){0}, 64, 0, MSG_COPY)));
	snd(q, 2, "kept", 0);
	rcv(q, 0, 64, MSG_COPY | IPC_NOWAIT);
	rcv(q, 1, 64, MSG_COPY | IPC_NOWAIT);
	msgctl(q, IPC_STAT, &ds);
	printf("after copy: qnum %lu\n", (unsigned long)ds.msg_qnum);
	rcv(q, 0, 64, 0);

	/* a small budget: the second message does not fit */
	ds.msg_qbytes = 10;
	printf("set qbytes: %s\n", en(msgctl(q, IPC_SET, &ds)));
	printf("fits: %s\n", en(snd(q, 1, "12345678", IPC_NOWAIT)));
	printf("full: %s\n", en(snd(q, 1, "abc", IPC_NOWAIT)));
	fflush(stdout);
	pid_t c = fork();
	if (c == 0)
		_exit(snd(q, 4, "late", 0) == 0 ? 1 : 2);
	usleep(30000);
	rcv(q, 0, 64, 0);
	int st;
	waitpid(c, &st, 0);
	printf("blocked sender went on: %d\n", WEXITSTATUS(st));
	rcv(q, 0, 64, 0);

	/* a receiver sleeps until a message of its type comes */
	fflush(stdout);
	c = fork();
	if (c == 0) {
		struct m b;
		long n = msgrcv(q, &b, 64, 9, 0);
		_exit(n == 5 && b.type == 9 ? 3 : 4);
	}
	usleep(30000);
	snd(q, 8, "skip", 0);
	snd(q, 9, "nine", 0);
	waitpid(c, &st, 0);
	printf("receiver woke: %d\n", WEXITSTATUS(st));
	rcv(q, 0, 64, IPC_NOWAIT);

	fflush(stdout);
	c = fork();
	if (c == 0) {
		struct m b;
		_exit(msgrcv(q, &b, 64, 0, 0) == -1 && errno == EIDRM ? 5 : 6);
	}
	usleep(30000);
	printf("rmid: %s\n", en(msgctl(q, IPC_RMID, NULL)));
	waitpid(c, &st, 0);
	printf("sleeper got EIDRM: %d\n", WEXITSTATUS(st) == 5);
	printf("after rmid: %s\n", en(snd(q, 1, "x", IPC_NOWAIT)));
	printf("bad cmd: %s\n", en(msgctl(0, 99, &ds)));
	return 0;
}
