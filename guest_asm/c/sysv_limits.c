/* SysV IPC at its limits, beside sysv_shm.c, sysv_sem.c and sysv_msg.c (which cover the everyday
 * errors): keys at the ends of key_t (only 0 is IPC_PRIVATE; -1 and INT_MIN are keys like any
 * other), an existing key asked for with a smaller, zero or larger size / nsems, SEMMSL itself,
 * MSGMAX itself, negative message sizes, msgrcv's msgtyp LONG_MIN (its absolute value does not
 * fit a long), and the *_STAT / *_INFO commands with indices past the table.  Every line is the
 * errno name or a value that does not depend on ids, so one expected text serves every kernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

static const char *e(long r)
{
    static char buf[32];
    if (r >= 0)
        return "ok";
    switch (errno) {
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case ENOSPC: return "ENOSPC";
    case ENOMEM: return "ENOMEM";
    case E2BIG: return "E2BIG";
    case ENOMSG: return "ENOMSG";
    case EFAULT: return "EFAULT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EAGAIN: return "EAGAIN";
    case ERANGE: return "ERANGE";
    case EFBIG: return "EFBIG";
    }
    snprintf(buf, sizeof buf, "errno %d", errno);
    return buf;
}

struct msg { long type; char text[8200]; };

int main(void)
{
    /* keys: the ends of key_t */
    static const key_t keys[] = {-1, INT_MIN, INT_MAX, 1};
    int ids[4];
    for (int i = 0; i < 4; i++) {
        ids[i] = shmget(keys[i], 4096, IPC_CREAT | IPC_EXCL | 0600);
        printf("shm key %d: %s\n", keys[i], e(ids[i]));
    }
    printf("keys are four objects: %d\n", ids[0] != ids[1] && ids[1] != ids[2] && ids[2] != ids[3] && ids[0] != ids[3]);
    printf("key -1 again: %s, same id %d\n", e(shmget(-1, 0, 0)), shmget(-1, 0, 0) == ids[0]);
    printf("key -1 smaller size: %s\n", e(shmget(-1, 1, 0)));
    printf("key -1 size 4097: %s\n", e(shmget(-1, 4097, 0)));
    printf("key -1 size 4097 IPC_CREAT: %s\n", e(shmget(-1, 4097, IPC_CREAT | 0600)));
    struct shmid_ds ds;
    printf("key -1 segsz %s %zu\n", e(shmctl(ids[0], IPC_STAT, &ds)), (size_t)ds.shm_segsz);
    for (int i = 0; i < 4; i++)
        shmctl(ids[i], IPC_RMID, NULL);
    printf("key -1 after rmid: %s\n", e(shmget(-1, 0, 0)));
    printf("shm size 1: %s\n", e(shmctl(shmget(IPC_PRIVATE, 1, 0600), IPC_RMID, NULL)));
    printf("shm size SIZE_MAX: %s\n", e(shmget(IPC_PRIVATE, (size_t)-1, 0600)));
    printf("shm size LONG_MAX: %s\n", e(shmget(IPC_PRIVATE, (size_t)LONG_MAX, 0600)));
    printf("SHM_STAT index INT_MAX: %s\n", e(shmctl(INT_MAX, SHM_STAT, &ds)));
    printf("SHM_STAT index -1: %s\n", e(shmctl(-1, SHM_STAT, &ds)));
    struct shminfo si;
    printf("IPC_INFO: %s shmmni %lu shmseg %lu shmmin %lu\n", shmctl(0, IPC_INFO, (struct shmid_ds *)&si) < 0 ? "fail" : "ok",
           (unsigned long)si.shmmni, (unsigned long)si.shmseg, (unsigned long)si.shmmin);

    /* semaphores: SEMMSL, and an existing set asked for with other sizes */
    int s = semget(IPC_PRIVATE, 32000, 0600);
    printf("nsems 32000 (SEMMSL): %s\n", e(s));
    semctl(s, 0, IPC_RMID);
    int sk = semget(-1, 4, IPC_CREAT | IPC_EXCL | 0600);
    printf("sem key -1 nsems 4: %s\n", e(sk));
    printf("sem key -1 nsems 0: %s\n", e(semget(-1, 0, 0)));
    printf("sem key -1 nsems 3: %s\n", e(semget(-1, 3, 0)));
    printf("sem key -1 nsems 5: %s\n", e(semget(-1, 5, 0)));
    printf("sem key -1 nsems 32001: %s\n", e(semget(-1, 32001, 0)));
    printf("SETVAL semnum -1: %s\n", e(semctl(sk, -1, SETVAL, 1)));
    printf("SETVAL semnum 4: %s\n", e(semctl(sk, 4, SETVAL, 1)));
    printf("GETVAL semnum INT_MAX: %s\n", e(semctl(sk, INT_MAX, GETVAL)));
    struct sembuf op = {.sem_num = 0, .sem_op = SHRT_MIN, .sem_flg = IPC_NOWAIT};
    printf("semop -32768 on 0: %s\n", e(semop(sk, &op, 1)));
    op.sem_op = SHRT_MAX;
    printf("semop +32767: %s val %d\n", e(semop(sk, &op, 1)), semctl(sk, 0, GETVAL));
    op.sem_op = 1;
    printf("semop +1 past SEMVMX: %s\n", e(semop(sk, &op, 1)));
    op.sem_num = USHRT_MAX;
    printf("semop sem_num 65535: %s\n", e(semop(sk, &op, 1)));
    semctl(sk, 0, IPC_RMID);
    struct semid_ds sds;
    printf("SEM_STAT index INT_MAX: %s\n", e(semctl(INT_MAX, 0, SEM_STAT, &sds)));

    /* messages: MSGMAX exactly, negative sizes, msgtyp LONG_MIN */
    static struct msg m;
    int q = msgget(-1, IPC_CREAT | IPC_EXCL | 0600);
    printf("msg key -1: %s\n", e(q));
    m.type = 5;
    memset(m.text, 'x', sizeof m.text);
    printf("msgsnd 8192 (MSGMAX): %s\n", e(msgsnd(q, &m, 8192, IPC_NOWAIT)));
    printf("msgsnd size -1: %s\n", e(msgsnd(q, &m, (size_t)-1, IPC_NOWAIT)));
    printf("msgsnd type LONG_MAX: %s\n", e((m.type = LONG_MAX, msgsnd(q, &m, 1, IPC_NOWAIT))));
    printf("msgsnd type LONG_MIN: %s\n", e((m.type = LONG_MIN, msgsnd(q, &m, 1, IPC_NOWAIT))));
    m.type = 2;
    printf("msgsnd type 2: %s\n", e(msgsnd(q, &m, 3, IPC_NOWAIT)));
    printf("msgrcv size -1: %s\n", e(msgrcv(q, &m, (size_t)-1, 0, IPC_NOWAIT)));
    long n = msgrcv(q, &m, sizeof m.text, LONG_MIN, IPC_NOWAIT);
    printf("msgrcv type LONG_MIN: %s %ld bytes type %ld\n", e(n), n, m.type);
    n = msgrcv(q, &m, sizeof m.text, -LONG_MAX, IPC_NOWAIT);
    printf("msgrcv type -LONG_MAX: %s %ld bytes type %ld\n", e(n), n, m.type == LONG_MAX ? -1 : m.type);
    n = msgrcv(q, &m, sizeof m.text, LONG_MAX, IPC_NOWAIT);
    printf("msgrcv type LONG_MAX: %s %ld bytes type==LONG_MAX %d\n", e(n), n, m.type == LONG_MAX);
    n = msgrcv(q, &m, 100, 0, IPC_NOWAIT | MSG_NOERROR);
    printf("msgrcv MSG_NOERROR, queue empty: %s %ld bytes\n", e(n), n);
    printf("msgrcv empty: %s\n", e(msgrcv(q, &m, 100, 0, IPC_NOWAIT)));
    struct msqid_ds mds;
    msgctl(q, IPC_STAT, &mds);
    mds.msg_qbytes = 0;
    printf("IPC_SET qbytes 0: %s\n", e(msgctl(q, IPC_SET, &mds)));
    msgctl(q, IPC_RMID, NULL);
    printf("MSG_STAT index INT_MAX: %s\n", e(msgctl(INT_MAX, MSG_STAT, &mds)));
    printf("done\n");
    return 0;
}
