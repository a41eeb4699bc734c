/* Robust and PI futexes as glibc uses them.  A thread that exits holding a
 * PTHREAD_MUTEX_ROBUST mutex: the kernel walks its robust list at exit, marks the lock
 * FUTEX_OWNER_DIED and wakes the waiter, whose pthread_mutex_lock returns EOWNERDEAD.  The same
 * for a robust PI mutex (the lock handed over by the kernel), and set_robust_list with a wrong
 * length (EINVAL).  Prints one line per check; exit status 0 when all hold. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t m;
static volatile int locked;

static void *holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    locked = 1;
    usleep(20000);              /* let main block on the lock first */
    return NULL;                /* exits holding it */
}

static int run(int protocol, const char *what)
{
    pthread_mutexattr_t a;
    pthread_t t;
    int bad = 0, r;

    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutexattr_setprotocol(&a, protocol);
    pthread_mutex_init(&m, &a);
    locked = 0;
    pthread_create(&t, NULL, holder, NULL);
    while (!locked)
        sched_yield();
    r = pthread_mutex_lock(&m);          /* blocks until the holder dies */
    printf("%s: lock after owner died: %s\n", what, r == EOWNERDEAD ? "EOWNERDEAD" : strerror(r));
    bad |= r != EOWNERDEAD;
    r = pthread_mutex_consistent(&m);
    bad |= r != 0;
    pthread_mutex_unlock(&m);
    r = pthread_mutex_lock(&m);
    printf("%s: lock again: %d\n", what, r);
    bad |= r != 0;
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    pthread_mutex_destroy(&m);
    return bad;
}

int main(void)
{
    int bad = 0;
    long r;

    bad |= run(PTHREAD_PRIO_NONE, "robust");
    bad |= run(PTHREAD_PRIO_INHERIT, "robust-pi");
    r = syscall(SYS_set_robust_list, (void *)0, 23);
    printf("set_robust_list(len 23): %s\n", r == -1 && errno == EINVAL ? "EINVAL" : "accepted");
    bad |= !(r == -1 && errno == EINVAL);
    return bad;
}
