/* Hostile guest: pread64/pwrite64 at offsets on a /proc/sys int file (argv[1], a 0..1 knob).
 * Linux: the file has FMODE_PREAD|FMODE_PWRITE (proc_sys_open does not make it nonseekable);
 * proc_sys_call_handler runs the handler at the call's offset, so with the default
 * sysctl_writes_strict=1 a pwrite at a non-zero offset is ignored (0), one at offset 0 writes
 * whatever the file position is, and neither moves the file position. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv)
{
	knob = argc > 1 ? argv[1] : "/proc/sys/abi/riscv_v_vstate_discard";
	char b[16];
	int fd = open(knob, O_RDWR);
	printf("write0=%ld value=%ld\n", ret(write(fd, "0", 1)), cur());
	printf("pwrite_at5=%ld value=%ld\n", ret(pwrite(fd, "1", 1, 5)), cur());
	printf("pwrite_at0=%ld value=%ld\n", ret(pwrite(fd, "1", 1, 0)), cur());
	printf("pos=%ld\n", ret(lseek(fd, 0, SEEK_CUR)));
	printf("pwrite_bad=%ld value=%ld\n", ret(pwrite(fd, "x", 1, 0)), cur());
	printf("pwrite_neg=%ld\n", ret(pwrite(fd, "0", 1, -1)));
	long n = ret(pread(fd, b, sizeof b, 0));
	printf("pread_at0=%ld first=%d\n", n, n > 0 ? b[0] : -1);
	printf("pread_at1=%ld\n", ret(pread(fd, b, sizeof b, 1)));
	printf("pread_at9=%ld\n", ret(pread(fd, b, sizeof b, 9)));
	printf("pos_after=%ld\n", ret(lseek(fd, 0, SEEK_CUR)));
	printf("pwrite_at0_again=%ld value=%ld\n", ret(pwrite(fd, "0", 1, 0)), cur());
	close(fd);
	return 0;
}
