/* exec_path: execve(argv[1], argv + 1) and report the errno if it fails. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char *envp[] = {"GREETING=exec_path", NULL};
    execve(argv[1], argv + 1, envp);
    printf("execve %s: %s\n", argv[1], strerror(errno));
    return 1;
}
