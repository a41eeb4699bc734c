/* exec_thread: a thread that is not the group leader calls execve; as in Linux (de_thread) the
 * other threads go, the exec'ing thread takes over the leader's pid, and the parent (here: the
 * machine) sees the new image under the same pid. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *run(void *arg) {
    char *argv[] = {"exec_child", "3,4", "from-thread", NULL};
    char *envp[] = {"GREETING=thread", NULL};
    execve("/bin/exec_child", argv, envp);
    perror("execve");
    return NULL;
}

int main(void) {
    printf("leader pid=%d\n", getpid());
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    for (;;) pause();
}
