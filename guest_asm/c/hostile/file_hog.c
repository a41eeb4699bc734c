/* Hostile guest: N processes (argv[1]) each open the same regular file (argv[2]) until open
 * fails, and report how many they hold and the errno that stopped them: EMFILE at the process's
 * own RLIMIT_NOFILE, ENFILE once the machine holds as many host descriptors as it may
 * (fs.file-max).  Each child holds its files until the parent has heard from all of them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int procs = argc > 1 ? atoi(argv[1]) : 4;
    const char *path = argc > 2 ? argv[2] : "/etc/passwd";
    int report[2], go[2];
    char line[128];

    setvbuf(stdout, NULL, _IONBF, 0);
    pipe(report);
    pipe(go);
    for (int i = 0; i < procs; i++) {
        if (fork() == 0) {
            int n = 0, fd;
            close(report[0]);
            close(go[1]);
            while ((fd = open(path, O_RDONLY)) >= 0)
                n++;
            snprintf(line, sizeof line, "%03d %s\n", n, strerrorname_np(errno));
            write(report[1], line, strlen(line));      /* one small write: atomic */
            read(go[0], line, 1);                       /* hold them until told */
            _exit(0);
        }
    }
    close(report[1]);
    close(go[0]);
    {
        static char all[4096];
        int got = 0, r;
        for (int seen = 0; seen < procs && (r = read(report[0], all + got, sizeof all - got - 1)) > 0;) {
            for (int j = got; j < got + r; j++)
                seen += all[j] == '\n';
            got += r;
        }
        all[got] = 0;
        fputs(all, stdout);
    }
    close(go[1]);                                       /* every child reads EOF and exits */
    while (wait(NULL) > 0)
        ;
    {
        int fd = open(path, O_RDONLY);
        printf("after the children: open %s\n", fd >= 0 ? "ok" : strerrorname_np(errno));
    }
    return 0;
}
