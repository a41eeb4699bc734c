/* Hostile guest: file names and comm values that are not UTF-8 (Linux names are bytes).
 * argv[1] == "child": the exec'd copy prints its comm and exits. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void hex(const char *tag, const unsigned char *s, int n)
{
    printf("%s=", tag);
    for (int i = 0; i < n; i++)
        printf("%02x", s[i]);
    printf("\n");
}

static void comm(const char *tag)
{
    char c[32];
    int fd = open("/proc/self/comm", O_RDONLY);
    int n = fd < 0 ? -1 : read(fd, c, sizeof c);
    if (fd >= 0) close(fd);
    hex(tag, (unsigned char *)c, n < 0 ? 0 : n);
    prctl(PR_GET_NAME, c);
    hex("get_name", (unsigned char *)c, strlen(c));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && !strcmp(argv[1], "child")) {
        comm("exec_comm");
        return 0;
    }
    const char bad[] = "\xff\xfe", bad2[] = "\xc3\x28x";
    int fd = open(bad, O_CREAT | O_WRONLY, 0644);
    printf("creat=%d\n", fd < 0 ? -errno : 0);
    if (fd >= 0) { write(fd, "hi\n", 3); close(fd); }
    struct stat sb;
    printf("stat=%d size=%ld\n", stat(bad, &sb) ? -errno : 0, (long)sb.st_size);
    printf("mkdir=%d\n", mkdir("\x80" "dir", 0755) ? -errno : 0);
    printf("rename=%d\n", rename(bad, bad2) ? -errno : 0);
    printf("stat_old=%d\n", stat(bad, &sb) ? -errno : 0);
    printf("symlink=%d\n", symlink(bad2, "\xfelink") ? -errno : 0);
    char t[64];
    ssize_t n = readlink("\xfelink", t, sizeof t);
    hex("readlink", (unsigned char *)t, n < 0 ? 0 : n);
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] & 0x80)
            hex("entry", (unsigned char *)e->d_name, strlen(e->d_name));
    if (d) closedir(d);
    printf("chdir=%d\n", chdir("\x80" "dir") ? -errno : 0);
    char c[64];
    if (getcwd(c, sizeof c)) hex("cwd", (unsigned char *)c, strlen(c));
    chdir("..");
    prctl(PR_SET_NAME, "\xff\xfe\x80name");
    comm("set_comm");
    /* exec of a program whose name is not UTF-8: comm is the raw basename */
    int in = open("/probe", O_RDONLY), out = open("\xe9xe", O_CREAT | O_WRONLY, 0755);
    char buf[65536];
    while ((n = read(in, buf, sizeof buf)) > 0) write(out, buf, n);
    close(in); close(out);
    pid_t p = fork();
    if (p == 0) {
        char *av[] = {"\xe9xe", "child", NULL};
        execv("./\xe9xe", av);
        printf("exec=%d\n", -errno);
        _exit(1);
    }
    int st;
    waitpid(p, &st, 0);
    printf("exec_status=%d\n", WEXITSTATUS(st));
    return 0;
}
