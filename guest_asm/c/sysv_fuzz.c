/* SysV IPC driven by a seeded generator: argv[1] (seed) and argv[2] (count) pick shmget, semget,
 * msgget, semop, msgsnd, msgrcv and the *ctl commands with keys at the ends of key_t, sizes and
 * counts at and past their limits (SHMMIN, SEMMSL, SEMOPM, MSGMAX, SEMVMX, negative sizes),
 * message types at the ends of long, invalid commands and flags.  An id is printed as the order
 * in which the probe first saw it (id0, id1, ...), never its value, so the same seed prints the
 * same text on every kernel that agrees.  Every object is removed at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>

static uint64_t state;

static unsigned pick(unsigned n)
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(state >> 33) % n;
}

#define PICK(a) (a[pick(sizeof a / sizeof *a)])

enum { SHM, SEM, MSG };
static struct { int kind, id; } seen[256];
static int nseen;

static const char *idname(int kind, int id)
{
    static char buf[16];
    for (int i = 0; i < nseen; i++)
        if (seen[i].kind == kind && seen[i].id == id) {
            snprintf(buf, sizeof buf, "id%d", i);
            return buf;
        }
    if (nseen < 256) {
        seen[nseen].kind = kind;
        seen[nseen].id = id;
        snprintf(buf, sizeof buf, "id%d", nseen++);
        return buf;
    }
    return "id?";
}

/* an id of the kind, or a bogus one now and then */
static int some_id(int kind)
{
    int n = 0, ids[256];
    for (int i = 0; i < nseen; i++)
        if (seen[i].kind == kind)
            ids[n++] = seen[i].id;
    if (n == 0 || pick(6) == 0)
        return pick(2) ? -1 : INT_MAX;
    return ids[pick(n)];
}

static void res(long r)
{
    if (r < 0)
        printf(" -> %s\n", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
    else
        printf(" -> %ld\n", r);
}

static void resid(int kind, int r)
{
    if (r < 0)
        res(r);
    else
        printf(" -> %s\n", idname(kind, r));
}

static const key_t keys[] = {IPC_PRIVATE, 1, -1, INT_MIN, INT_MAX, 7};
static const int getflags[] = {0, IPC_CREAT | 0600, IPC_CREAT | IPC_EXCL | 0600, IPC_CREAT | 0400, 0600};
static const size_t shmsizes[] = {0, 1, 4096, 4097, 65536, (size_t)-1, (size_t)LONG_MAX};
static const int nsems[] = {-1, 0, 1, 3, 250, 32000, 32001, INT_MAX};
static const int ctlcmds[] = {IPC_STAT, IPC_RMID, IPC_SET, 99, -1};
static const long msgsizes[] = {0, 1, 100, 8192, 8193, -1, LONG_MAX};
static const long msgtypes[] = {1, 2, 0, -1, LONG_MAX, LONG_MIN};
static const int rcvflags[] = {IPC_NOWAIT, IPC_NOWAIT | MSG_NOERROR, IPC_NOWAIT | MSG_EXCEPT, MSG_COPY,
                               IPC_NOWAIT | MSG_COPY};
static const int semnums[] = {0, 1, 2, 3, 65535};
static const short semops[] = {-1, 1, 0, SHRT_MIN, SHRT_MAX, 2};
static const short semflgs[] = {IPC_NOWAIT, IPC_NOWAIT | SEM_UNDO};
static const size_t nsopss[] = {1, 1, 2, 0, 500, 501};

static char buf[16384];

int main(int argc, char **argv)
{
    state = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    int count = argc > 2 ? atoi(argv[2]) : 200;
    for (int i = 0; i < count; i++) {
        printf("%d ", i);
        switch (pick(9)) {
        case 0: {
            key_t k = PICK(keys);
            size_t sz = PICK(shmsizes);
            int fl = PICK(getflags);
            printf("shmget key %d size %zu flags %o", k, sz, fl);
            resid(SHM, shmget(k, sz, fl));
            break;
        }
        case 1: {
            key_t k = PICK(keys);
            int n = PICK(nsems), fl = PICK(getflags);
            printf("semget key %d nsems %d flags %o", k, n, fl);
            resid(SEM, semget(k, n, fl));
            break;
        }
        case 2: {
            key_t k = PICK(keys);
            int fl = PICK(getflags);
            printf("msgget key %d flags %o", k, fl);
            resid(MSG, msgget(k, fl));
            break;
        }
        case 3: {
            int kind = pick(3), id = some_id(kind), cmd = PICK(ctlcmds);
            printf("%sctl %s cmd %d", kind == SHM ? "shm" : kind == SEM ? "sem" : "msg",
                   id < 0 || id == INT_MAX ? (id < 0 ? "-1" : "INT_MAX") : idname(kind, id), cmd);
            long r;
            if (kind == SHM) {
                struct shmid_ds ds;
                memset(&ds, 0, sizeof ds);
                if (cmd == IPC_SET && shmctl(id, IPC_STAT, &ds) == 0)
                    ds.shm_perm.mode = 0640;
                r = shmctl(id, cmd, &ds);
            } else if (kind == SEM) {
                struct semid_ds ds;
                memset(&ds, 0, sizeof ds);
                if (cmd == IPC_SET && semctl(id, 0, IPC_STAT, &ds) == 0)
                    ds.sem_perm.mode = 0640;
                r = semctl(id, 0, cmd, &ds);
            } else {
                struct msqid_ds ds;
                memset(&ds, 0, sizeof ds);
                if (cmd == IPC_SET && msgctl(id, IPC_STAT, &ds) == 0)
                    ds.msg_perm.mode = 0640;
                r = msgctl(id, cmd, &ds);
            }
            res(r < 0 ? r : 0);
            break;
        }
        case 4:
        case 5: {
            int id = some_id(MSG);
            long sz = PICK(msgsizes), type = PICK(msgtypes);
            *(long *)buf = type;
            memset(buf + sizeof(long), 'm', sizeof buf - sizeof(long));
            printf("msgsnd size %ld type %ld", sz, type);
            res(msgsnd(id, buf, (size_t)sz, IPC_NOWAIT));
            break;
        }
        case 6: {
            int id = some_id(MSG), fl = PICK(rcvflags);
            long sz = PICK(msgsizes), type = PICK(msgtypes);
            printf("msgrcv size %ld type %ld flags %o", sz, type, fl);
            long r = msgrcv(id, buf, (size_t)(sz > 8192 ? 8192 : sz), type, fl);
            if (r >= 0)
                printf(" -> %ld bytes type %ld\n", r, *(long *)buf);
            else
                res(r);
            break;
        }
        case 7:
        case 8: {
            int id = some_id(SEM);
            size_t nsops = PICK(nsopss);
            static struct sembuf ops[501];
            for (size_t j = 0; j < (nsops ? nsops : 1); j++) {
                ops[j].sem_num = PICK(semnums);
                ops[j].sem_op = PICK(semops);
                ops[j].sem_flg = PICK(semflgs);
            }
            printf("semop nsops %zu first %u%+d flg %o", nsops, ops[0].sem_num, ops[0].sem_op, ops[0].sem_flg);
            res(semop(id, ops, nsops));
            break;
        }
        }
    }
    for (int i = 0; i < nseen; i++) {
        if (seen[i].kind == SHM)
            shmctl(seen[i].id, IPC_RMID, NULL);
        else if (seen[i].kind == SEM)
            semctl(seen[i].id, 0, IPC_RMID);
        else
            msgctl(seen[i].id, IPC_RMID, NULL);
    }
    printf("done, %d ids\n", nseen);
    return 0;
}
