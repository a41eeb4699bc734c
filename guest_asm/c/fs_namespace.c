/* rename/link/symlink in a writable root (renameat2, linkat, symlinkat, and renameat on arm64),
 * compared with qemu-user (the host kernel's answers in a scratch directory).
 * Usage: fs_namespace DIR (a writable directory; it makes and removes DIR/t). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#endif

static int r2(const char *a, const char *b, unsigned f)
{
	return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, f) ? -errno : 0;
}

static void put(const char *p, const char *s)
{
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	write(fd, s, strlen(s));
	close(fd);
}

static void show(const char *p)
{
	char b[64] = {0};
	int fd = open(p, O_RDONLY);
	if (fd < 0) { printf("  %s: -%d\n", p, errno); return; }
	read(fd, b, sizeof(b) - 1);
	close(fd);
	printf("  %s: %s\n", p, b);
}

int main(int argc, char **argv)
{
	if (argc < 2 || chdir(argv[1])) { printf("usage: fs_namespace DIR\n"); return 2; }
	mkdir("t", 0755);
	chdir("t");
	put("a", "A");
	put("b", "B");
	mkdir("d", 0755);
	put("d/in", "IN");
	printf("rename a c: %d\n", r2("a", "c", 0)); show("a"); show("c");
	printf("noreplace c b: %d\n", r2("c", "b", RENAME_NOREPLACE));
	printf("exchange c b: %d\n", r2("c", "b", RENAME_EXCHANGE)); show("b"); show("c");
	printf("exchange+noreplace: %d\n", r2("c", "b", RENAME_EXCHANGE | RENAME_NOREPLACE));
	printf("bad flags: %d\n", r2("c", "b", 8));
	printf("missing: %d\n", r2("nope", "x", 0));
	printf("dir into itself: %d\n", r2("d", "d/sub", 0));
	printf("file over dir: %d\n", r2("c", "d", 0));
	printf("dir over non-empty dir: %d\n", (mkdir("e", 0755), put("e/f", "F"), r2("d", "e", 0)));
	printf("dot: %d\n", r2(".", "x", 0));
	printf("link b l: %d\n", linkat(AT_FDCWD, "b", AT_FDCWD, "l", 0) ? -errno : 0); show("l");
	/* one file under two names (emukern shows no host inode numbers or link counts) */
	put("l", "L");
	show("b");
	printf("link exists: %d\n", linkat(AT_FDCWD, "b", AT_FDCWD, "l", 0) ? -errno : 0);
	printf("link dir: %d\n", linkat(AT_FDCWD, "d", AT_FDCWD, "ld", 0) ? -errno : 0);
	printf("link bad flag: %d\n", linkat(AT_FDCWD, "b", AT_FDCWD, "lx", 1) ? -errno : 0);
	printf("symlink s -> b: %d\n", symlinkat("b", AT_FDCWD, "s") ? -errno : 0); show("s");
	char t[64] = {0};
	printf("readlink: %zd %s\n", readlink("s", t, sizeof(t) - 1), t);
	printf("symlink exists: %d\n", symlinkat("x", AT_FDCWD, "s") ? -errno : 0);
	printf("link to symlink (no follow): %d\n", linkat(AT_FDCWD, "s", AT_FDCWD, "ls", 0) ? -errno : 0);
	struct stat s3;
	lstat("ls", &s3);
	printf("  ls is a symlink: %d\n", S_ISLNK(s3.st_mode));
	printf("link follow: %d\n", linkat(AT_FDCWD, "s", AT_FDCWD, "lf", AT_SYMLINK_FOLLOW) ? -errno : 0);
	lstat("lf", &s3);
	printf("  lf is a regular file: %d\n", S_ISREG(s3.st_mode));
	printf("rename symlink: %d\n", r2("s", "s2", 0)); show("s2");
	printf("dangling symlink: %d\n", symlinkat("/no/such", AT_FDCWD, "dang") ? -errno : 0); show("dang");
	printf("rename over itself: %d\n", r2("b", "l", 0)); show("b"); show("l");
	/* clean up */
	const char *files[] = {"b", "c", "l", "s2", "ls", "lf", "dang", "e/f", "d/in", "x"};
	for (unsigned i = 0; i < sizeof(files) / sizeof(*files); i++)
		unlink(files[i]);
	rmdir("e"); rmdir("d");
	chdir("..");
	printf("cleanup: %d\n", rmdir("t") ? -errno : 0);
	return 0;
}
