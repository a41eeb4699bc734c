/* Hostile guest: writes to a /proc/sys entry (argv[1], a 0..1 int or bool) that Linux's
 * proc_dointvec parser and its default kernel.sysctl_writes_strict=1 treat specially.
 * Prints one "name=result value=current" line per case; results are write()/lseek() returns
 * (negative errno).  The file starts at 0. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *knob;

static long cur(void)
{
	char b[32] = {0};
	int fd = open(knob, O_RDONLY);
	long n = read(fd, b, sizeof b - 1);
	close(fd);
	return n > 0 ? strtol(b, NULL, 10) : -1000;
}

static long ret(long r) { return r < 0 ? -errno : r; }

static void one(const char *name, const char *text, size_t len)
{
	int fd = open(knob, O_WRONLY);
	long r = ret(write(fd, text, len));
	close(fd);
	printf("%s=%ld value=%ld\n", name, r, cur());
}

int main(int argc, char **argv)
{
	knob = argc > 1 ? argv[1] : "/proc/sys/abi/riscv_v_vstate_discard";
	static char big[4400];
	one("plain", "1\n", 2);
	one("zero", "0", 1);
	one("underscore", "0_1", 3);          /* Python int() took it; Linux: EINVAL */
	one("plus", "+1", 2);                 /* EINVAL */
	one("trailing", "1x", 2);             /* EINVAL */
	one("octal9", "09", 2);               /* "0" then '9': EINVAL */
	one("spaces", "  1 \n", 5);           /* leading and trailing blanks: accepted, all 5 */
	one("zero2", "0", 1);
	memset(big, '1', sizeof big);
	one("digits4400", big, sizeof big);   /* >21 characters: EINVAL (was an internal error) */
	memset(big, '0', sizeof big);
	one("zeros4400", big, sizeof big);    /* also too long for proc_get_long: EINVAL */
	one("long21", "000000000000000000001", 21);  /* exactly 21 characters: EINVAL */
	one("ok20", "00000000000000000001", 20);     /* 20: octal 1, accepted */

	/* strict writes: a write at a non-zero position is ignored (returns 0) */
	one("zero3", "0", 1);
	int fd = open(knob, O_RDWR);
	char b[8];
	long n = read(fd, b, sizeof b);       /* position 2 now */
	printf("after_read=%ld value=%ld\n", ret(write(fd, "1", 1)), cur());
	printf("seek0=%ld\n", ret(lseek(fd, 0, SEEK_SET)));
	printf("first=%ld value=%ld\n", ret(write(fd, "1", 1)), cur());
	printf("second=%ld value=%ld\n", ret(write(fd, "0", 1)), cur());
	printf("pos=%ld\n", ret(lseek(fd, 0, SEEK_CUR)));
	printf("seek_neg=%ld\n", ret(lseek(fd, -1, SEEK_SET)));
	printf("seek_cur_neg=%ld\n", ret(lseek(fd, -5, SEEK_CUR)));
	printf("seek_end=%ld\n", ret(lseek(fd, 3, SEEK_END)));
	printf("seek_data=%ld\n", ret(lseek(fd, 0, 3 /* SEEK_DATA */)));
	printf("seek_bad_whence=%ld\n", ret(lseek(fd, 0, 7)));
	close(fd);
	int p[2];
	pipe(p);
	printf("pipe_seek=%ld\n", ret(lseek(p[0], -1, SEEK_SET)));
	(void)n;
	return 0;
}
