/* proc_probe: the synthetic /proc a real program reads — cpuinfo, /proc/self/{auxv,maps,exe},
 * and on arm64 /proc/sys/abi/sve_default_vector_length with Linux's write semantics (the new
 * default is what the next execve gets: argv[1] == "vl" prints the VL and exits). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int slurp(const char *path, char *buf, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -errno;
    size_t got = 0;
    ssize_t n;
    while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) > 0) got += n;
    buf[got] = 0;
    close(fd);
    return (int)got;
}

#ifdef __aarch64__
static const char *VL = "/proc/sys/abi/sve_default_vector_length";
static void write_vl(const char *text) {
    int fd = open(VL, O_WRONLY);
    ssize_t r = write(fd, text, strlen(text));
    close(fd);
    char buf[32];
    slurp(VL, buf, sizeof buf);
    buf[strcspn(buf, "\n")] = 0;
    printf("write %s: %s -> %s\n", text, r < 0 ? strerror(errno) : "ok", buf);
}
#endif

int main(int argc, char **argv) {
    static char buf[1 << 16];
    if (argc > 1 && !strcmp(argv[1], "vl")) {
#ifdef __aarch64__
        printf("exec'd VL=%d\n", prctl(PR_SVE_GET_VL) & 0xffff);
#endif
        return 0;
    }
    slurp("/proc/cpuinfo", buf, sizeof buf);
    char *line = strtok(buf, "\n");
    while (line) {
        if (!strncmp(line, "Features", 8) || !strncmp(line, "isa", 3) || !strncmp(line, "processor", 9))
            printf("cpuinfo %s\n", line);
        line = strtok(NULL, "\n");
    }
    int n = slurp("/proc/self/auxv", buf, sizeof buf);
    unsigned long *av = (unsigned long *)buf;
    int ok = n > 0, pairs = n / 16;
    for (int i = 0; i < pairs && av[2 * i]; i++)
        if (av[2 * i] != AT_RANDOM && av[2 * i] != AT_EXECFN && getauxval(av[2 * i]) != av[2 * i + 1]) ok = 0;
    printf("auxv: %d pairs, %s getauxval, AT_BASE %s\n", pairs, ok ? "agrees with" : "DISAGREES with",
           getauxval(AT_BASE) ? "set" : "0");
    slurp("/proc/self/maps", buf, sizeof buf);
    printf("maps: libc %s, stack %s, heap-or-anon %s\n", strstr(buf, "libc.so.6") ? "mapped" : "absent",
           strstr(buf, "[stack]") ? "mapped" : "absent", strstr(buf, "rw-p") ? "yes" : "no");
    ssize_t l = readlink("/proc/self/exe", buf, 256);
    buf[l > 0 ? l : 0] = 0;
    printf("exe: %s\n", buf);
    n = slurp("/proc/self/cmdline", buf, sizeof buf);
    for (int i = 0; i < n; i++) if (!buf[i]) buf[i] = '|';
    printf("cmdline: %s\n", buf);
    slurp("/proc/self/status", buf, sizeof buf);
    char *th = strstr(buf, "Threads:");
    printf("status: %.*s\n", th ? (int)strcspn(th, "\n") : 0, th ? th : "");
    slurp("/proc/self/stat", buf, sizeof buf);
    int spid = 0;
    char scomm[32] = "", sstate = '?';
    sscanf(buf, "%d %31s %c", &spid, scomm, &sstate);
    printf("stat: pid=%d comm=%s state=%c pid-matches=%d\n", spid, scomm, sstate, spid == getpid());
    int fd = open("/proc/cpuinfo", O_RDONLY);
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    l = readlink(link, buf, 256);
    buf[l > 0 ? l : 0] = 0;
    printf("fd link: %s\n", buf);
    close(fd);
#ifdef __aarch64__
    slurp(VL, buf, 32);
    printf("default VL: %s", buf);
    write_vl("48");
    write_vl("-1");
    write_vl("15");
    write_vl("abc");
    write_vl("16");
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = {"proc_probe", "vl", NULL};
        execv("/bin/proc_probe", args);
        _exit(99);
    }
    int status;
    waitpid(pid, &status, 0);
    fflush(stdout);
#endif
    return 0;
}
