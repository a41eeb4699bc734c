/* printf, then fork without fflush: where stdout is a pipe or a file glibc buffers the line, the
 * child inherits the unflushed buffer and both processes print it at exit (twice in all); on a
 * terminal the line left at once (once).  The parent waits for the child before it exits, so the
 * order of the output is fixed. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    printf("before fork\n");
    pid_t pid = fork();
    if (pid == 0) {
        printf("child\n");
        exit(3);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("parent: child exit %d\n", WEXITSTATUS(status));
    return 0;
}
