/* Hostile guest: tries to reach host files outside its --root.
 * argv[1]: "rw" (the root is writable) or "ro"; argv[2]: an absolute host directory P outside the
 * root that holds "secret" (a file), "prog" (an executable) and "core" (a symlink to "precious").
 * Every line is "name=result"; a result that reaches the host would read, list or create there. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[4096];

static int rd(const char *path)          /* bytes read, or -errno */
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    int n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        n = -errno;
    close(fd);
    return n;
}

static void mkdirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(tmp, 0755); *p = '/'; }
    mkdir(tmp, 0755);
}

static void list_dot(const char *tag)
{
    DIR *d = opendir(".");
    printf("%s=", tag);
    if (!d) { printf("err%d\n", errno); return; }
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            printf("%s%s", n++ ? "," : "", e->d_name);
    closedir(d);
    printf("\n");
}

static void show_cwd(const char *tag)
{
    char c[4096];
    printf("%s=%s\n", tag, getcwd(c, sizeof c) ? c : "ERR");
}

static void show_link(const char *tag, const char *path)
{
    char c[4096];
    ssize_t n = readlink(path, c, sizeof c - 1);
    c[n < 0 ? 0 : n] = 0;
    printf("%s=%s\n", tag, n < 0 ? "ERR" : c);
}

static int try_exec(const char *path)
{
    pid_t p = fork();
    if (p == 0) {
        char *av[] = {(char *)path, "child", NULL};
        execv(path, av);
        _exit(100 + errno);
    }
    int st;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int dump_core(void)            /* a child dies of SIGABRT in the cwd: WCOREDUMP? */
{
    struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &rl);
    pid_t p = fork();
    if (p == 0)
        abort();
    int st;
    waitpid(p, &st, 0);
    return WIFSIGNALED(st) && WCOREDUMP(st);
}

int main(int argc, char **argv)
{
    int rw = argc > 1 && !strcmp(argv[1], "rw");
    const char *P = argc > 2 ? argv[2] : "/tmp/victim";
    char path[4096];
    setvbuf(stdout, NULL, _IONBF, 0);

    /* .. at the root stays at the root */
    chdir("/../../..");
    show_cwd("dotdot_cwd");
    snprintf(path, sizeof path, "/../../../../..%s/secret", P);
    printf("dotdot_secret=%d\n", rd(path));
    /* a symlink the root already holds that points at / (ro) or one the guest makes (rw) */
    if (rw)
        symlink("/", "/rootlink");
    snprintf(path, sizeof path, "/rootlink%s/secret", P);
    printf("rootlink_secret=%d\n", rd(path));
    snprintf(path, sizeof path, "/uplink%s/secret", P);
    printf("uplink_secret=%d\n", rd(path));
    /* symlink loops */
    if (rw) { symlink("l2", "/l1"); symlink("l1", "/l2"); }
    printf("loop=%d\n", rd("/l1"));
    show_link("proc_root", "/proc/self/root");

    if (!rw) {
        chdir("/d1/d2");
        show_cwd("ro_cwd");
        show_link("ro_proc_cwd", "/proc/self/cwd");
        printf("ro_core=%d\n", dump_core());
        return 0;
    }

    /* the rename + symlink attack: the cwd is a directory, not a path */
    snprintf(path, sizeof path, "/a%s", P);
    mkdirs(path);
    printf("chdir=%d\n", chdir(path) ? -errno : 0);
    printf("rename=%d\n", rename("/a", "/a2") ? -errno : 0);
    printf("symlink=%d\n", symlink("/", "/a") ? -errno : 0);
    show_cwd("attack_cwd");
    show_link("attack_proc_cwd", "/proc/self/cwd");
    printf("attack_secret=%d\n", rd("secret"));
    int fd = open("planted", O_CREAT | O_WRONLY, 0644);
    printf("attack_creat=%d\n", fd < 0 ? -errno : 0);
    if (fd >= 0) { write(fd, "guest\n", 6); close(fd); }
    list_dot("attack_list");
    printf("attack_exec=%d\n", try_exec("./prog"));
    /* the core file: a symlink named core in the cwd (made by the guest) is replaced, not followed */
    symlink("/victim_of_core", "core");
    fd = open("/victim_of_core", O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) { write(fd, "precious\n", 9); close(fd); }
    printf("attack_core=%d\n", dump_core());
    struct stat sb;
    int lr = lstat("core", &sb);
    printf("core_is_file=%d\n", lr == 0 && S_ISREG(sb.st_mode) ? 1 : lr ? -errno : (int)sb.st_mode);
    printf("victim_of_core=%d\n", rd("/victim_of_core"));

    /* a directory fd follows its directory; .. from it uses the new name */
    mkdirs("/x/y");
    int dfd = open("/x/y", O_RDONLY | O_DIRECTORY);
    rename("/x", "/x2");
    symlink("/", "/x");
    fd = openat(dfd, "z", O_CREAT | O_WRONLY, 0644);
    printf("dirfd_creat=%d\n", fd < 0 ? -errno : 0);
    if (fd >= 0) close(fd);
    printf("dirfd_z_in_x2=%d\n", rd("/x2/y/z"));
    printf("dirfd_dotdot=%d\n", (fd = openat(dfd, "../y/z", O_RDONLY)) < 0 ? -errno : (close(fd), 0));
    snprintf(path, sizeof path, "/proc/self/fd/%d", dfd);
    show_link("dirfd_proc", path);

    /* renames between walks: a child flips /m between a directory and a link to / while the
     * parent keeps walking through it */
    mkdirs("/m/sub");
    pid_t p = fork();
    if (p == 0) {
        for (int i = 0; i < 200; i++) {
            rename("/m", "/m_away");
            symlink("/", "/m");
            unlink("/m");
            rename("/m_away", "/m");
        }
        _exit(0);
    }
    int leaks = 0, ok = 0;
    snprintf(path, sizeof path, "/m%s/secret", P);
    for (int i = 0; i < 400; i++) {
        int r = rd(path);
        if (r > 0) leaks++;
        if (rd("/m/sub/../sub/.") == -EISDIR) ok++;
    }
    waitpid(p, NULL, 0);
    printf("race_leaks=%d race_walks_ok=%d\n", leaks, ok > 0);

    /* the cwd follows a rename of a parent */
    mkdirs("/p/q");
    chdir("/p/q");
    rename("/p", "/r");
    show_cwd("parent_renamed_cwd");
    return 0;
}
