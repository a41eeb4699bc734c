/* exec_child: what execve handed over (see exec_parent.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(int argc, char **argv) {
    char buf[256];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("child exe: %s\n", buf);
    printf("child argc=%d argv0=%s len(argv2)=%zu last=%s\n", argc, argv[0], argc > 2 ? strlen(argv[2]) : 0,
           argv[argc - 1]);
    printf("child env GREETING=%s\n", getenv("GREETING") ? getenv("GREETING") : "(unset)");
    printf("child AT_EXECFN=%s pid=%d\n", (char *)getauxval(AT_EXECFN), getpid());
    int keep = -1, gone = -1;
    if (argc > 1) sscanf(argv[1], "%d,%d", &keep, &gone);
    printf("inherited fd %s, cloexec fd %s\n", read(keep, buf, 1) == 1 ? "open" : strerror(errno),
           read(gone, buf, 1) == 1 ? "open" : strerror(errno));
    return 7;
}
