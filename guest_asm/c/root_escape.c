/* root_escape: every way a guest might name a file outside the guest root.  Each line prints
 * the first line of what it opened (or the errno); in a root whose /etc/passwd is a decoy, no
 * line may show the host's /etc/passwd.  Then writes to the (read-only) root: EROFS. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void show(const char *what, const char *path) {
    char buf[128] = {0};
    int fd = open(path, O_RDONLY);
    if (fd < 0) { printf("%s: %s\n", what, strerror(errno)); return; }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    char *nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    printf("%s: %s\n", what, buf);
    close(fd);
}

int main(void) {
    char buf[256];
    show("dotdot", "../../../../../../etc/passwd");
    show("absolute", "/etc/passwd");
    show("abs-symlink-out", "/data/hostetc/passwd");        /* data/hostetc -> /etc */
    show("rel-symlink-out", "/data/up/etc/passwd");         /* data/up -> ../../../../../.. */
    show("proc-root", "/proc/self/root/../../etc/passwd");
    if (chdir("/data/sub") == 0) show("cwd-dotdot", "../../../../../../../etc/passwd");
    ssize_t n = readlink("/proc/self/root", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("readlink /proc/self/root: %s\n", buf);
    n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("readlink /proc/self/exe: %s\n", buf);
    show("loop", "/data/loop");                              /* data/loop -> loop */
    /* a host FIFO in the root: an in-kernel pipe, never the host's (a non-blocking reader
     * opens at once and reads an empty pipe with no writer: end of file) */
    int ff = open("/data/fifo", O_RDONLY | O_NONBLOCK);
    if (ff < 0) printf("fifo: %s\n", strerror(errno));
    else printf("fifo: opened, read %d\n", (int)read(ff, buf, sizeof buf));
    if (ff >= 0) close(ff);
    int fd = open("/data/new-file", O_WRONLY | O_CREAT, 0644);
    printf("create in root: %s\n", fd < 0 ? strerror(errno) : "created");
    fd = open("/data/hello.txt", O_RDWR);
    printf("open rw: %s\n", fd < 0 ? strerror(errno) : "opened");
    printf("mkdir: %s\n", mkdir("/data/newdir", 0755) < 0 ? strerror(errno) : "made");
    printf("unlink: %s\n", unlink("/data/hello.txt") < 0 ? strerror(errno) : "removed");
    printf("access W_OK: %s\n", access("/data/hello.txt", W_OK) < 0 ? strerror(errno) : "writable");
    fd = open("/dev/null", O_WRONLY);
    printf("/dev/null write: %zd\n", write(fd, "xyz", 3));
    fd = open("/dev/zero", O_RDONLY);
    memset(buf, 1, 16);
    printf("/dev/zero read: %zd first=%d\n", read(fd, buf, 16), buf[0]);
    return 0;
}
