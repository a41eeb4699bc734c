/* execve and POSIX record locks (fs/locks.c, fs/exec.c): exec closes the close-on-exec
 * descriptors, and that close drops the process's locks on their file; a lock taken through a
 * descriptor that stays open survives exec (the process, its owner, is the same).
 * Usage: posix_locks_exec DIR [after] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int wrlock(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
    return fcntl(fd, F_SETLK, &fl) < 0 ? -errno : 0;
}

static void probe(const char *path, const char *name, pid_t holder)
{
    int fd = open(path, O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    fcntl(fd, F_GETLK, &fl);
    printf("  %s: %s%s\n", name, fl.l_type == F_UNLCK ? "unlocked" : "locked",
           fl.l_type == F_UNLCK ? "" : fl.l_pid == holder ? " by the exec'd process" : " by someone else");
    close(fd);
}

int main(int argc, char **argv)
{
    char a[512], b[512];
    setvbuf(stdout, NULL, _IONBF, 0);
    snprintf(a, sizeof a, "%s/cloexec", argv[1]);
    snprintf(b, sizeof b, "%s/kept", argv[1]);
    if (argc > 2) {
        pid_t me = getpid();
        printf("after exec:\n");
        if (fork() == 0) {
            probe(a, "file locked through an O_CLOEXEC descriptor", me);
            probe(b, "file locked through a kept descriptor", me);
            _exit(0);
        }
        wait(NULL);
        unlink(a);
        unlink(b);
        return 0;
    }
    int fa = open(a, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    int fb = open(b, O_RDWR | O_CREAT, 0644);
    printf("lock through cloexec fd: %d\n", wrlock(fa));
    printf("lock through kept fd: %d\n", wrlock(fb));
    execl("/proc/self/exe", argv[0], argv[1], "after", (char *)NULL);
    printf("execl: %d\n", -errno);
    return 1;
}
