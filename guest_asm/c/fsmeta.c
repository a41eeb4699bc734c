/* fsmeta: chmod/chown/utimensat/truncate/fallocate/flock/mknod/sendfile/copy_file_range/xattr
 * in a writable directory argv[1]; output path-independent */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#define R(x) ({ long _r = (long)(x); _r < 0 ? -errno : _r; })
static void st(const char *what, const char *p) {
	struct stat s;
	if (lstat(p, &s)) { printf("%s: stat %d\n", what, -errno); return; }
	printf("%s: mode %o uid %u gid %u size %lld\n", what, s.st_mode, s.st_uid, s.st_gid, (long long)s.st_size);
}
int main(int argc, char **argv) {
	if (chdir(argv[1])) return 1;
	int fd = open("f", O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "hello world\n", 12);
	printf("chmod: %ld\n", R(chmod("f", 0751))); st("f", "f");
	printf("fchmod: %ld\n", R(fchmod(fd, 04755))); st("f", "f");
	printf("chmod missing: %ld\n", R(chmod("nope", 0644)));
	printf("chmod notdir: %ld\n", R(chmod("f/x", 0644)));
	symlink("f", "l");
	printf("fchmodat2 nofollow link: %ld\n", R(syscall(452, AT_FDCWD, "l", 0600, AT_SYMLINK_NOFOLLOW)));
	printf("fchmodat2 bad flags: %ld\n", R(syscall(452, AT_FDCWD, "f", 0600, 1)));
	printf("fchmodat via link: %ld\n", R(fchmodat(AT_FDCWD, "l", 04711, 0))); st("f", "f");
	printf("chown: %ld\n", R(chown("f", 1000, 1001))); st("f after chown (suid cleared)", "f");
	printf("fchown -1: %ld\n", R(fchown(fd, -1, 7))); st("f", "f");
	printf("lchown: %ld\n", R(lchown("l", 5, 6)));
	{ struct stat s; lstat("l", &s); printf("link owner %u %u\n", s.st_uid, s.st_gid); }
	printf("fchownat bad flags: %ld\n", R(fchownat(AT_FDCWD, "f", 0, 0, 1)));
	printf("fchownat empty: %ld\n", R(fchownat(fd, "", 3, 4, AT_EMPTY_PATH))); st("f", "f");
	struct timespec ts[2] = {{1000, 5}, {2000, 6}};
	printf("utimensat: %ld\n", R(utimensat(AT_FDCWD, "f", ts, 0)));
	{ struct stat s; stat("f", &s); printf("times %ld.%ld %ld.%ld\n", (long)s.st_atim.tv_sec, s.st_atim.tv_nsec, (long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec); }
	ts[0].tv_nsec = UTIME_OMIT; ts[1].tv_sec = 3000; ts[1].tv_nsec = 7;
	printf("futimens omit: %ld\n", R(futimens(fd, ts)));
	{ struct stat s; fstat(fd, &s); printf("times %ld.%ld %ld.%ld\n", (long)s.st_atim.tv_sec, s.st_atim.tv_nsec, (long)s.st_mtim.tv_sec, s.st_mtim.tv_nsec); }
	ts[0].tv_nsec = 1000000000;
	printf("utimensat bad nsec: %ld\n", R(utimensat(AT_FDCWD, "f", ts, 0)));
	printf("utimensat bad flags: %ld\n", R(utimensat(AT_FDCWD, "f", NULL, 0x4)));
	ts[0].tv_nsec = UTIME_OMIT; ts[1].tv_nsec = UTIME_OMIT;
	printf("utimensat both omit, missing: %ld\n", R(utimensat(AT_FDCWD, "nope", ts, 0)));
	printf("utimensat missing: %ld\n", R(utimensat(AT_FDCWD, "nope", NULL, 0)));
	printf("utimensat fd null path bad fd: %ld\n", R(syscall(SYS_utimensat, 99, NULL, NULL, 0)));
	printf("truncate: %ld\n", R(truncate("f", 5))); st("f", "f");
	printf("truncate neg: %ld\n", R(truncate("f", -1)));
	printf("truncate dir: %ld\n", R(truncate(".", 0)));
	printf("truncate missing: %ld\n", R(truncate("nope", 0)));
	printf("fallocate 0: %ld\n", R(fallocate(fd, 0, 0, 100))); st("f", "f");
	printf("fallocate keep: %ld\n", R(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4000))); st("f", "f");
	printf("fallocate punch no keep: %ld\n", R(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4)));
	printf("fallocate punch: %ld\n", R(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1, 2)));
	{ char b[8] = {0}; pread(fd, b, 5, 0); printf("after punch: %02x %02x %02x %02x %02x\n", b[0], b[1], b[2], b[3], b[4]); }
	printf("fallocate len 0: %ld\n", R(fallocate(fd, 0, 0, 0)));
	printf("fallocate neg off: %ld\n", R(fallocate(fd, 0, -1, 10)));
	printf("fallocate bad mode: %ld\n", R(fallocate(fd, 0x100, 0, 10)));
	int ro = open("f", O_RDONLY);
	printf("fallocate ro: %ld\n", R(fallocate(ro, 0, 0, 10)));
	int p[2]; pipe(p);
	printf("fallocate pipe: %ld\n", R(fallocate(p[1], 0, 0, 10)));
	printf("fallocate badfd: %ld\n", R(fallocate(99, 0, 0, 10)));
	/* flock */
	int a = open("f", O_RDONLY), b = open("f", O_RDONLY);
	printf("flock sh a: %ld\n", R(flock(a, LOCK_SH)));
	printf("flock sh b: %ld\n", R(flock(b, LOCK_SH | LOCK_NB)));
	printf("flock ex b nb: %ld\n", R(flock(b, LOCK_EX | LOCK_NB)));
	printf("flock un b: %ld\n", R(flock(b, LOCK_UN)));
	printf("flock ex b nb: %ld\n", R(flock(b, LOCK_EX | LOCK_NB)));
	printf("flock un a: %ld\n", R(flock(a, LOCK_UN)));
	printf("flock ex b nb: %ld\n", R(flock(b, LOCK_EX | LOCK_NB)));
	printf("flock bad: %ld\n", R(flock(b, 0)));
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		close(b);              /* the description is shared: the parent's close is then the last */
		int x = open("f", O_RDONLY);
		int r = flock(x, LOCK_EX);          /* blocks until the parent closes b */
		printf("child got lock: %d\n", r); fflush(stdout);
		_exit(0);
	}
	usleep(50000);
	printf("parent closing\n"); fflush(stdout);
	close(b);
	waitpid(c, NULL, 0);
	/* mknod */
	printf("mknod reg: %ld\n", R(mknod("m", S_IFREG | 0600, 0))); st("m", "m");
	printf("mknod exist: %ld\n", R(mknod("m", S_IFREG | 0600, 0)));
	printf("mknod bad type: %ld\n", R(mknod("m2", 0170000 | 0600, 0)));
	/* sendfile / copy_file_range */
	int g = open("g", O_CREAT | O_RDWR | O_TRUNC, 0644);
	pwrite(fd, "abcdefghij", 10, 0);
	off_t off = 2;
	printf("sendfile: %ld\n", R(sendfile(g, fd, &off, 4))); printf("off %lld\n", (long long)off);
	lseek(fd, 6, SEEK_SET);
	printf("sendfile pos: %ld\n", R(sendfile(g, fd, NULL, 100))); printf("pos %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
	{ char buf[32] = {0}; pread(g, buf, 31, 0); printf("g: %s\n", buf); }
	printf("sendfile badfd: %ld\n", R(sendfile(g, 99, NULL, 4)));
	printf("sendfile ro out: %ld\n", R(sendfile(ro, fd, NULL, 4)));
	loff_t i = 0, o = 20;
	printf("cfr: %ld\n", R(copy_file_range(fd, &i, g, &o, 5, 0))); printf("i %lld o %lld\n", (long long)i, (long long)o);
	printf("cfr flags: %ld\n", R(copy_file_range(fd, &i, g, &o, 5, 1)));
	printf("cfr pipe: %ld\n", R(copy_file_range(p[0], NULL, g, NULL, 5, 0)));
	printf("cfr dir: %ld\n", R(copy_file_range(open(".", O_RDONLY), NULL, g, NULL, 5, 0)));
	st("g", "g");
	/* xattr */
	char v[16];
	printf("getxattr: %ld\n", R(getxattr("f", "user.x", v, sizeof v)));
	printf("setxattr: %ld\n", R(setxattr("f", "user.x", "1", 1, 0)));
	printf("getxattr missing: %ld\n", R(getxattr("nope", "user.x", v, sizeof v)));
	printf("fgetxattr badfd: %ld\n", R(fgetxattr(99, "user.x", v, sizeof v)));
	unlink("f"); unlink("l"); unlink("m"); unlink("g");
	return 0;
}
