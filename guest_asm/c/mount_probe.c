/* mount(2) of tmpfs and ramfs in a mount namespace of the caller's own, as root.
 * Run from a guest root holding /marker and /w/under (a directory /w with one file).
 * Prints relations only (never device or inode numbers), so the output is the same on any kernel.
 * "mount_probe exec" is the program it copies into the tmpfs and runs there. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define TMPFS_MAGIC 0x01021994
#define RAMFS_MAGIC 0x858458f6

static int see(const char *p)
{
	return access(p, F_OK) ? -errno : 0;
}

static void put(const char *p, const char *s)
{
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0) { printf("put %s: -%d\n", p, errno); return; }
	write(fd, s, strlen(s));
	close(fd);
}

static int copy(const char *from, const char *to)
{
	char buf[4096];
	int in = open(from, O_RDONLY), out = open(to, O_CREAT | O_EXCL | O_WRONLY, 0700);
	ssize_t n;
	if (in < 0 || out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -errno;
	close(in);
	close(out);
	return 0;
}

static unsigned long dev_of(const char *p)
{
	struct stat s;
	return stat(p, &s) ? 0 : s.st_dev;
}

static unsigned long ino_of(const char *p)
{
	struct stat s;
	return stat(p, &s) ? 0 : s.st_ino;
}

static long magic(const char *p)
{
	struct statfs f;
	return statfs(p, &f) ? -errno : (long)f.f_type;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		printf("exec from tmpfs: euid %d\n", (int)geteuid());
		return 3;
	}
	setvbuf(stdout, NULL, _IONBF, 0);	/* lines in the order the processes print them */
	int go[2], done[2];
	pipe(go);
	pipe(done);
	pid_t outsider = fork();
	if (outsider == 0) {
		/* stays in the initial mount namespace: never sees the mounts */
		char c;
		read(go[0], &c, 1);
		printf("outsider: under %d, f %d\n", see("/w/under"), see("/w/f"));
		fflush(stdout);
		write(done[1], "x", 1);
		return 0;
	}
	printf("unshare: %d\n", unshare(CLONE_NEWNS) ? -errno : 0);
	printf("private: %d\n", mount(NULL, "/", NULL, MS_PRIVATE | MS_REC, NULL) ? -errno : 0);
	printf("bad fs type: %d\n", mount("x", "/w", "nosuchfs", 0, NULL) ? -errno : 0);
	printf("mount tmpfs: %d\n", mount("none", "/w", "tmpfs", 0, "mode=0751,uid=5,gid=6") ? -errno : 0);
	struct stat s;
	stat("/w", &s);
	printf("root: mode %o uid %d gid %d\n", s.st_mode, (int)s.st_uid, (int)s.st_gid);
	printf("st_dev differs: %d, magic tmpfs: %d\n", dev_of("/w") != dev_of("/"), magic("/w") == TMPFS_MAGIC);
	printf("under hidden: %d\n", see("/w/under"));
	put("/w/f", "hello");
	printf("f same dev as /w: %d\n", dev_of("/w/f") == dev_of("/w"));
	printf("copy exe: %d\n", copy("/mount_probe", "/w/exe"));
	printf("chmod 4755: %d\n", chmod("/w/exe", 04755) ? -errno : 0);
	stat("/w/exe", &s);
	printf("exe mode %o\n", s.st_mode);
	printf("chown 7 8: %d\n", chown("/w/f", 7, 8) ? -errno : 0);
	stat("/w/f", &s);
	printf("f uid %d gid %d size %ld\n", (int)s.st_uid, (int)s.st_gid, (long)s.st_size);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		execl("/w/exe", "/w/exe", "exec", (char *)0);
		printf("exec failed: -%d\n", errno);
		return 1;
	}
	int st;
	waitpid(c, &st, 0);
	printf("exec status %d\n", WEXITSTATUS(st));
	/* '..' out of the mount root is the mountpoint's parent (the guest root) */
	printf("chdir /w: %d\n", chdir("/w") ? -errno : 0);
	printf("dotdot is /: %d, ../marker %d, ../../../marker %d\n",
	       ino_of("..") == ino_of("/"), see("../marker"), see("../../../marker"));
	printf("dotdot dev is root dev: %d\n", dev_of("..") == dev_of("/"));
	/* the mount's edge: no rename or link across it, no rmdir/rename of the mountpoint */
	printf("rename out: %d, link out: %d\n", rename("/w/f", "/marker2") ? -errno : 0,
	       link("/w/f", "/marker2") ? -errno : 0);
	printf("rename in: %d\n", rename("/marker", "/w/m") ? -errno : 0);
	printf("rmdir mountpoint: %d, rename mountpoint: %d\n", rmdir("/w") ? -errno : 0,
	       rename("/w", "/w2") ? -errno : 0);
	/* hostile: links in the tmpfs resolve inside the guest root */
	printf("symlink /: %d, through it %d\n", symlink("/", "/w/lnk") ? -errno : 0, see("/w/lnk/marker"));
	printf("symlink ../../..: %d, through it %d, back in %d\n",
	       symlink("../../../..", "/w/up") ? -errno : 0, see("/w/up/marker"), see("/w/up/w/f"));
	printf("host escape via links: %d\n", see("/w/up/etc/hostname"));
	/* ramfs stacked inside the tmpfs */
	printf("mkdir sub: %d\n", mkdir("/w/sub", 0755) ? -errno : 0);
	printf("mount ramfs: %d\n", mount("r", "/w/sub", "ramfs", 0, NULL) ? -errno : 0);
	printf("magic ramfs: %d, dev differs: %d\n", magic("/w/sub") == RAMFS_MAGIC,
	       dev_of("/w/sub") != dev_of("/w"));
	put("/w/sub/r", "r");
	printf("sub/.. is /w: %d\n", ino_of("/w/sub/..") == ino_of("/w"));
	printf("umount ramfs: %d, r %d\n", umount2("/w/sub", MNT_DETACH) ? -errno : 0, see("/w/sub/r"));
	/* size=: whole pages up to the limit, then ENOSPC */
	static char big[3 * 4096];
	mkdir("/w/small", 0755);
	printf("mount size=8k: %d\n", mount("s", "/w/small", "tmpfs", 0, "size=8k") ? -errno : 0);
	struct statfs sf;
	statfs("/w/small", &sf);
	printf("blocks %ld bsize %ld\n", (long)sf.f_blocks, (long)sf.f_bsize);
	int fd = open("/w/small/big", O_CREAT | O_WRONLY, 0644);
	ssize_t n1 = write(fd, big, sizeof(big));
	printf("write 12k: %ld\n", (long)n1);
	ssize_t n2 = write(fd, big, 100);
	printf("write more: %ld\n", n2 < 0 ? (long)-errno : (long)n2);
	close(fd);
	printf("umount small: %d\n", umount2("/w/small", 0) ? -errno : 0);
	write(go[1], "x", 1);
	char b;
	read(done[0], &b, 1);
	waitpid(outsider, &st, 0);
	printf("chdir /: %d\n", chdir("/") ? -errno : 0);
	printf("umount tmpfs: %d\n", umount2("/w", MNT_DETACH) ? -errno : 0);
	printf("after: under %d, f %d\n", see("/w/under"), see("/w/f"));
	printf("umount again: %d\n", umount2("/w", 0) ? -errno : 0);
	return 0;
}
