/* vfork_probe: CLONE_VFORK and __WCLONE.
 *
 *   vfork_probe SELF           run every check; SELF is this program's own path (posix_spawn)
 *   vfork_probe spawned N      what the posix_spawn'd copy runs: exits with N
 *
 * vfork: glibc's vfork() is clone(CLONE_VM | CLONE_VFORK | SIGCHLD) on arm64 and riscv64 (they
 * have no vfork syscall).  The child yields a few times, writes a word of the shared memory and
 * exits 7: the parent must see the word (it ran only after the child was done) and wait gives 7.
 * A signal the child sends its waiting parent is handled once, after vfork returned, and makes
 * no second child.  posix_spawn starts its child the same way and learns of a failed exec
 * through shared memory: a missing program is ENOENT only if the parent waited.
 * __WCLONE: a child whose exit signal is not SIGCHLD is only seen by waits with __WCLONE or
 * __WALL; a plain one answers ECHILD, and __WCLONE does not see an ordinary child.  Last, a
 * parent killed (SIGKILL) while it waits in vfork dies there. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile int shared_word;
static volatile int handled;

static void on_usr1(int sig) {
    (void)sig;
    handled++;
}

static void report_wait(const char *what, pid_t want, int options) {
    int st = -1;
    pid_t got = waitpid(want, &st, options);
    if (got < 0)
        printf("%s: %s\n", what, strerror(errno));
    else
        printf("%s: %s, exited %d\n", what, got == want ? "the child" : "another pid",
               WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "spawned") == 0)
        return atoi(argv[2]);           /* (silent: its output would race the parent's) */
    if (argc < 2) {
        fprintf(stderr, "usage: vfork_probe SELF\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);

    /* 1. vfork: the parent runs after the child's exit */
    pid_t pid = vfork();
    if (pid == 0) {
        for (int i = 0; i < 5; i++)
            sched_yield();
        shared_word = 42;
        _exit(7);
    }
    printf("vfork: parent sees %d\n", shared_word);
    report_wait("vfork wait", pid, 0);

    /* 2. a signal to the parent while it waits: handled once, after the child exits */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = 0;            /* no SA_RESTART: an interrupted wait would be EINTR */
    sigaction(SIGUSR1, &sa, NULL);
    shared_word = 0;
    pid = vfork();
    if (pid == 0) {
        kill(getppid(), SIGUSR1);
        for (int i = 0; i < 3; i++)
            sched_yield();
        shared_word = 9;
        _exit(9);
    }
    printf("vfork+signal: parent sees %d, handler ran %d time(s)\n", shared_word, handled);
    report_wait("vfork+signal wait", pid, 0);
    report_wait("no second child", -1, WNOHANG);

    /* 3. posix_spawn: the exec of this program, then a program that is not there */
    char *args[] = {"vfork_probe", "spawned", "5", NULL};
    int rc = posix_spawn(&pid, argv[1], NULL, NULL, args, environ);
    printf("posix_spawn self: %s\n", rc ? strerror(rc) : "ok");
    if (rc == 0)
        report_wait("posix_spawn wait", pid, 0);
    pid = 0;
    rc = posix_spawn(&pid, "/no/such/program", NULL, NULL, args, environ);
    printf("posix_spawn missing: %s\n", rc ? strerror(rc) : "ok");
    if (rc == 0)
        report_wait("posix_spawn missing wait", pid, 0);
    else
        report_wait("posix_spawn missing: child left", -1, WNOHANG);

    /* 4. __WCLONE: a child with exit signal 0 (fork-like: no CLONE_VM) */
    pid = syscall(SYS_clone, 0, 0, 0, 0, 0);
    if (pid == 0)
        _exit(3);
    report_wait("clone child, plain waitpid", pid, 0);
    report_wait("clone child, waitpid(-1)", -1, 0);
    report_wait("clone child, __WCLONE", pid, __WCLONE);
    pid = syscall(SYS_clone, 0, 0, 0, 0, 0);
    if (pid == 0)
        _exit(4);
    report_wait("clone child, __WALL", pid, __WALL);
    pid = fork();
    if (pid == 0)
        _exit(6);
    report_wait("fork child, __WCLONE", pid, __WCLONE);
    report_wait("fork child, __WALL", pid, __WALL);
    pid = syscall(SYS_clone, 0, 0, 0, 0, 0);
    if (pid == 0)
        _exit(8);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    rc = waitid(P_PID, pid, &si, WEXITED);
    printf("clone child, waitid: %s\n", rc ? strerror(errno) : "reported");
    memset(&si, 0, sizeof si);
    rc = waitid(P_PID, pid, &si, WEXITED | __WCLONE);
    printf("clone child, waitid __WCLONE: %s, status %d\n", rc ? strerror(errno) : "reported", si.si_status);

    /* 5. SIGKILL to a parent waiting in vfork ends the wait: the parent dies, the child goes on
     * (last: the orphan is reparented, here possibly to this process) */
    int done[2];
    pipe(done);                         /* EOF once the orphaned child is gone too */
    pid = fork();
    if (pid == 0) {
        close(done[0]);
        pid_t c = vfork();
        if (c == 0) {
            kill(getppid(), SIGKILL);
            for (int i = 0; i < 3; i++)
                sched_yield();
            _exit(0);
        }
        _exit(1);
    }
    close(done[1]);
    int st = 0;
    waitpid(pid, &st, 0);
    char byte;
    while (read(done[0], &byte, 1) > 0)
        ;
    printf("killed in vfork: %s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? "by SIGKILL" : "not killed");
    return 0;
}
