/* SysV semaphore probe (tests/test_sysv_ipc.py): semget's limits, semop's all-or-nothing
 * rule, IPC_NOWAIT, E2BIG/EFBIG/ERANGE, sleeping and being woken by another process,
 * GETNCNT/GETZCNT of a sleeper, semtimedop's timeout, EIDRM for a sleeper whose set is
 * removed, EINTR from a signal (even with SA_RESTART), SEM_UNDO undone at exit.  IPC_PRIVATE
 * sets only; nothing printed depends on ids or on the host. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/wait.h>

union semun { int val; struct semid_ds *buf; unsigned short *array; };

static const char *en(long r)
{
	if (r != -1)
		return "ok";
	switch (errno) {
	case EINVAL: return "EINVAL"; case ENOENT: return "ENOENT"; case EEXIST: return "EEXIST";
	case ENOSPC: return "ENOSPC"; case EAGAIN: return "EAGAIN"; case E2BIG: return "E2BIG";
	case EFBIG: return "EFBIG"; case ERANGE: return "ERANGE"; case EIDRM: return "EIDRM";
	case EINTR: return "EINTR"; case EACCES: return "EACCES"; case EFAULT: return "EFAULT";
	case EPERM: return "EPERM";
	default: return "other";
	}
}

static int op(int id, int num, int o, int flg)
{
	struct sembuf b = { num, o, flg };
	return semop(id, &b, 1);
}

static void wait_for(int id, int num, int cmd, int want)
{
	for (int i = 0; i < 2000 && semctl(id, num, cmd) != want; i++)
		usleep(1000);
}

static void on_alarm(int s) { (void)s; }

int main(void)
{
	union semun u;
	unsigned short all[3];
	struct sembuf ops[600];
	printf("nsems 0: %s\n", en(semget(IPC_PRIVATE, 0, 0600)));
	printf("nsems -1: %s\n", en(semget(IPC_PRIVATE, -1, 0600)));
	printf("nsems 32001: %s\n", en(semget(IPC_PRIVATE, 32001, 0600)));
	int id = semget(IPC_PRIVATE, 3, 0600);
	printf("create: %s\n", en(id));
	struct semid_ds ds;
	u.buf = &ds;
	semctl(id, 0, IPC_STAT, u);
	printf("stat: nsems %lu mode %o otime %ld\n", (unsigned long)ds.sem_nsems, ds.sem_perm.mode,
	       (long)ds.sem_otime);
	printf("nowait down: %s\n", en(op(id, 0, -1, IPC_NOWAIT)));
	printf("up: %s val %d pid==me %d\n", en(op(id, 0, 2, 0)), semctl(id, 0, GETVAL),
	       semctl(id, 0, GETPID) == getpid());
	struct sembuf two[2] = { { 0, -1, 0 }, { 1, -1, IPC_NOWAIT } };
	printf("all or nothing: %s val0 %d\n", en(semop(id, two, 2)), semctl(id, 0, GETVAL));
	printf("zero wait nowait: %s\n", en(op(id, 0, 0, IPC_NOWAIT)));
	printf("nsops 0: %s\n", en(semop(id, ops, 0)));
	for (int i = 0; i < 600; i++) {
		ops[i].sem_num = 1; ops[i].sem_op = 0; ops[i].sem_flg = IPC_NOWAIT;
	}
	printf("nsops 500: %s\n", en(semop(id, ops, 500)));
	printf("nsops 501: %s\n", en(semop(id, ops, 501)));
	printf("sem_num 3: %s\n", en(op(id, 3, 1, 0)));
	printf("bad id: %s\n", en(op(-1, 0, 1, 0)));
	printf("setval 32768: %s\n", en(semctl(id, 1, SETVAL, 32768)));
	printf("setval -1: %s\n", en(semctl(id, 1, SETVAL, -1)));
	printf("setval 32767: %s\n", en(semctl(id, 1, SETVAL, 32767)));
	printf("over SEMVMX: %s\n", en(op(id, 1, 1, 0)));
	printf("getval semnum 9: %s\n", en(semctl(id, 9, GETVAL)));
	all[0] = 1; all[1] = 2; all[2] = 3;
	u.array = all;
	printf("setall: %s\n", en(semctl(id, 0, SETALL, u)));
	all[0] = all[1] = all[2] = 0;
	semctl(id, 0, GETALL, u);
	printf("getall: %d %d %d\n", all[0], all[1], all[2]);
	struct sembuf dup[2] = { { 2, -2, 0 }, { 2, -1, IPC_NOWAIT } };
	printf("same sem twice: %s val %d\n", en(semop(id, dup, 2)), semctl(id, 2, GETVAL));
	semctl(id, 0, SETVAL, 0);

	/* a child sleeps on a down; GETNCNT sees it; an up wakes it */
	fflush(stdout);
	pid_t c = fork();
	if (c == 0)
		_exit(op(id, 0, -1, 0) == 0 ? 3 : 4);
	wait_for(id, 0, GETNCNT, 1);
	printf("ncnt %d zcnt %d\n", semctl(id, 0, GETNCNT), semctl(id, 0, GETZCNT));
	op(id, 0, 1, 0);
	int st;
	waitpid(c, &st, 0);
	printf("child woke: %d, val %d ncnt %d\n", WEXITSTATUS(st), semctl(id, 0, GETVAL),
	       semctl(id, 0, GETNCNT));

	/* a zero-waiter */
	semctl(id, 1, SETVAL, 1);
	fflush(stdout);
	c = fork();
	if (c == 0)
		_exit(op(id, 1, 0, 0) == 0 ? 5 : 6);
	wait_for(id, 1, GETZCNT, 1);
	printf("zcnt %d\n", semctl(id, 1, GETZCNT));
	op(id, 1, -1, 0);
	waitpid(c, &st, 0);
	printf("zero-waiter woke: %d\n", WEXITSTATUS(st));

	/* semtimedop times out */
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	struct sembuf down = { 0, -1, 0 };
	printf("timedop: %s\n", en(semtimedop(id, &down, 1, &ts)));
	ts.tv_nsec = 1000000000;
	printf("bad timeout: %s\n", en(semtimedop(id, &down, 1, &ts)));

	/* a signal interrupts the sleep, even under SA_RESTART */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	fflush(stdout);
	c = fork();
	if (c == 0) {
		usleep(20000);
		kill(getppid(), SIGALRM);
		_exit(0);
	}
	printf("signal: %s\n", en(op(id, 0, -1, 0)));
	waitpid(c, &st, 0);

	/* SEM_UNDO: a child's ups are taken back when it exits */
	semctl(id, 2, SETVAL, 5);
	fflush(stdout);
	c = fork();
	if (c == 0) {
		op(id, 2, 3, SEM_UNDO);
		op(id, 2, -1, SEM_UNDO);
		_exit(semctl(id, 2, GETVAL));
	}
	waitpid(c, &st, 0);
	printf("undo: child saw %d, after exit %d\n", WEXITSTATUS(st), semctl(id, 2, GETVAL));
	/* SETVAL clears the adjustment */
	fflush(stdout);
	c = fork();
	if (c == 0) {
		op(id, 2, 4, SEM_UNDO);
		semctl(id, 2, SETVAL, 10);
		_exit(0);
	}
	waitpid(c, &st, 0);
	printf("undo after setval: %d\n", semctl(id, 2, GETVAL));
	/* an undo that would go below zero is clamped */
	fflush(stdout);
	c = fork();
	if (c == 0) {
		op(id, 2, 2, SEM_UNDO);
		semctl(id, 2, SETVAL, 0);
		op(id, 2, 1, 0);
		_exit(0);
	}
	waitpid(c, &st, 0);
	printf("undo clamped: %d\n", semctl(id, 2, GETVAL));

	/* removal wakes a sleeper with EIDRM */
	fflush(stdout);
	c = fork();
	if (c == 0)
		_exit(op(id, 0, -1, 0) == -1 && errno == EIDRM ? 7 : 8);
	wait_for(id, 0, GETNCNT, 1);
	printf("rmid: %s\n", en(semctl(id, 0, IPC_RMID)));
	waitpid(c, &st, 0);
	printf("sleeper got EIDRM: %d\n", WEXITSTATUS(st) == 7);
	printf("after rmid: %s\n", en(semctl(id, 0, GETVAL)));
	printf("bad cmd: %s\n", en(semctl(0, 0, 99)));
	int k1 = semget(IPC_PRIVATE, 2, 0600);
	printf("efault: %s\n", en(semop(k1, (struct sembuf *)8, 1)));
	semctl(k1, 0, IPC_RMID);
	return 0;
}
