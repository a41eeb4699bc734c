/* What the guest's stdout is, and how stdio buffers it: prints fstat(1)'s mode, rdev and size,
 * isatty(1), then N printf lines (argv[1], default 200) to stdout; the report goes to stderr in
 * one write() so that the count of write() calls (the harness counts them: emukern's --json,
 * qemu-user's -strace) is stdout's plus one.  Compared with qemu-user, which hands the guest the
 * host's descriptor itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    struct stat st;
    char rep[256];
    if (fstat(1, &st) != 0) {
        perror("fstat");
        return 1;
    }
    int tty = isatty(1);
    int len = snprintf(rep, sizeof rep, "mode=%o rdev=%u:%u size=%lld blksize=%ld isatty=%d\n",
                       (unsigned)st.st_mode, major(st.st_rdev), minor(st.st_rdev),
                       (long long)st.st_size, (long)st.st_blksize, tty);
    for (int i = 0; i < n; i++)
        printf("line %d of the stdio buffering probe\n", i);
    fflush(stdout);
    if (ferror(stdout))
        len += snprintf(rep + len, sizeof rep - len, "stdout error\n");
    write(2, rep, len);
    return 0;
}
