/* execveat(2) as fs/exec.c does it: the program found through a descriptor (dirfd + relative
 * path, AT_FDCWD, an absolute path with a nonsense dirfd, AT_EMPTY_PATH with a regular, O_PATH,
 * O_CLOEXEC or deleted file's descriptor), the errors (EINVAL flags, ELOOP under
 * AT_SYMLINK_NOFOLLOW, ENOENT for "" without AT_EMPTY_PATH, EFAULT for NULL, EBADF, ENOTDIR,
 * EACCES for a directory or a file without x), and the name a script's interpreter is given:
 * /dev/fd/N or /dev/fd/N/path, with ENOENT when N is close-on-exec.  The interpreter here is
 * this program itself (#!/probe), which prints its argv, AT_EXECFN and comm. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char *args[] = { "probe", "child", NULL };

static void run(const char *what, int fd, const char *path, int flags)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		long r = syscall(SYS_execveat, fd, path, args, NULL, flags);
		printf("%s: execveat %ld %s\n", what, r, strerrorname_np(errno));
		exit(3);
	}
	int st;
	waitpid(pid, &st, 0);
	if (WEXITSTATUS(st) != 0)
		printf("%s: child exit %d\n", what, WEXITSTATUS(st));
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[argc - 1], "child"))) {
		char comm[32] = "";
		int c = open("/proc/self/comm", O_RDONLY);
		ssize_t n = read(c, comm, sizeof(comm) - 1);
		comm[n > 0 ? n - 1 : 0] = 0;
		printf("  ran: argc %d argv", argc);
		for (int i = 0; i < argc; i++)
			printf(" '%s'", argv[i]);
		printf(" execfn '%s' comm '%s'\n", (char *)getauxval(AT_EXECFN), comm);
		return 0;
	}
	mkdir("/d", 0755);
	int fdd = open("/d", O_DIRECTORY | O_RDONLY);
	int dot = open("/", O_DIRECTORY | O_RDONLY);
	int dotp = open("/", O_DIRECTORY | O_PATH);
	int fd = open("/probe", O_RDONLY);
	int fdp = open("/probe", O_PATH);
	int fdc = open("/probe", O_RDONLY | O_CLOEXEC);
	int sfd = open("/script", O_RDWR | O_CREAT | O_TRUNC, 0755);
	write(sfd, "#!/probe\n", 9);
	close(sfd);
	sfd = open("/script", O_RDONLY);
	int sfdc = open("/script", O_RDONLY | O_CLOEXEC);
	symlink("probe", "/link");
	int cp = open("/copy", O_RDWR | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	ssize_t n;
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		write(cp, buf, n);
	close(cp);
	int fdcopy = open("/copy", O_RDONLY);
	unlink("/copy");
	lseek(fd, 10, SEEK_SET);     /* the descriptor's offset does not matter */

	printf("fds: d %d dot %d dotp %d fd %d fdp %d fdc %d sfd %d sfdc %d\n", fdd, dot, dotp, fd, fdp, fdc, sfd, sfdc);
	run("dirfd ../probe", fdd, "../probe", 0);
	run("O_PATH dirfd", dotp, "probe", 0);
	run("AT_FDCWD", AT_FDCWD, "probe", 0);
	run("absolute, dirfd 99", 99, "/probe", 0);
	run("fd", fd, "", AT_EMPTY_PATH);
	run("O_CLOEXEC fd", fdc, "", AT_EMPTY_PATH);
	run("O_PATH fd", fdp, "", AT_EMPTY_PATH);
	run("deleted fd", fdcopy, "", AT_EMPTY_PATH);
	run("symlink", dot, "link", 0);
	run("symlink NOFOLLOW", dot, "link", AT_SYMLINK_NOFOLLOW);
	run("abs symlink NOFOLLOW", AT_FDCWD, "/link", AT_SYMLINK_NOFOLLOW);
	run("empty, no flag", fd, "", 0);
	run("NULL path", fd, NULL, AT_EMPTY_PATH);
	run("bad flags", dot, "probe", 0xFFFF);
	run("bad fd", 99, "", AT_EMPTY_PATH);
	run("bad dirfd", 99, "probe", 0);
	run("not a dir", fd, "probe", 0);
	run("dir fd", dot, "", AT_EMPTY_PATH);
	run("missing", dot, "nothing", 0);
	run("script dirfd", dot, "script", 0);
	run("script fd", sfd, "", AT_EMPTY_PATH);
	run("script O_CLOEXEC fd", sfdc, "", AT_EMPTY_PATH);
	run("script absolute", AT_FDCWD, "/script", 0);
	return 0;
}
