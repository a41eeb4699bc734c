/* exec_parent: execve inside the guest root.  First the errors Linux returns (ENOENT, EACCES,
 * ENOEXEC, E2BIG, EFAULT), each leaving this image intact; then, from a process with a second
 * thread, execve of /bin/exec_child with arguments, an environment and one close-on-exec and
 * one inherited descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void try_exec(const char *what, const char *path, char **argv) {
    char *envp[] = {NULL};
    execve(path, argv, envp);
    printf("%s: %s\n", what, strerror(errno));
}

static void *sleeper(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

int main(int argc, char **argv) {
    char buf[256];
    char *args[] = {"x", NULL};
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("parent exe: %s\n", buf);
    try_exec("missing", "/bin/no-such-program", args);
    try_exec("directory", "/bin", args);
    try_exec("not executable", "/data/hello.txt", args);
    try_exec("not an ELF", "/data/script-noexec", args);
    try_exec("host path", "/usr/bin/env", args);
    try_exec("bad argv", "/bin/exec_child", (char **)8);
    try_exec("dev zero", "/dev/zero", args);
    try_exec("fifo", "/data/fifo", args);
    try_exec("dev stdin", "/dev/stdin", args);
    try_exec("proc file", "/proc/self/maps", args);
    try_exec("reserved range", "/bin/high-elf", args);
    char *big = malloc(200000);
    memset(big, 'a', 199999);
    big[199999] = 0;
    char *bigargs[] = {"x", big, NULL};
    try_exec("argument over MAX_ARG_STRLEN", "/bin/exec_child", bigargs);
    int many_n = 300000;
    char **many = malloc(sizeof(char *) * (many_n + 1));
    for (int i = 0; i < many_n; i++) many[i] = "argument";
    many[many_n] = NULL;
    try_exec("total over the stack limit", "/bin/exec_child", many);
    printf("still here\n");
    fflush(stdout);

    int keep = open("/data/hello.txt", O_RDONLY);
    int gone = open("/data/hello.txt", O_RDONLY | O_CLOEXEC);
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    char fds[64];
    snprintf(fds, sizeof fds, "%d,%d", keep, gone);
    static char arg5000[5001];
    memset(arg5000, 'b', 5000);
    char *child_argv[] = {"exec_child", fds, arg5000, NULL};
    char *child_env[] = {"GREETING=from-parent", NULL};
    /* 5000 more arguments: more than the 4096 emukern once cut silently */
    int extra = 5000;
    char **av = malloc(sizeof(char *) * (extra + 4));
    for (int i = 0; i < 3; i++) av[i] = child_argv[i];
    for (int i = 0; i < extra; i++) av[3 + i] = "z";
    av[3 + extra] = NULL;
    execve("/bin/exec_child", av, child_env);
    printf("exec failed: %s\n", strerror(errno));
    return 1;
}
