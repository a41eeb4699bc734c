/* glibc's own use of clone3: pthread_create (glibc 2.34+ tries clone3 first where it has a
 * clone3 wrapper) and fork (clone).  Run against Debian trixie's libc6.  (posix_spawn is left
 * out: it needs CLONE_VFORK's wait for exec, which emukern does not model.) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *work(void *p) { *(int *)p *= 2; return p; }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return 5;
    int v[4] = {1, 2, 3, 4};
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, &v[i]);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("threads %d %d %d %d\n", v[0], v[1], v[2], v[3]);
    pid_t pid;
    int st = 0;
    pid = fork();
    if (pid == 0) _exit(6);
    waitpid(pid, &st, 0);
    printf("fork status %d\n", WEXITSTATUS(st));
    return 0;
}
