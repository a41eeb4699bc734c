/* process_vm_readv / process_vm_writev between a parent and its forked child (mm/process_vm_access.c).
 * The child holds a 3-page buffer (page 2 read-only, then an unmapped page) and waits on a pipe;
 * the parent reads and writes it with split iovecs and checks Linux's rules: flags != 0 is
 * EINVAL, an unknown pid ESRCH, no local bytes 0 before anything is checked, a fault after some
 * bytes gives the bytes, a fault at once EFAULT, a read-only remote page is a fault for writev.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static long rv(pid_t pid, struct iovec *l, int nl, struct iovec *r, int nr, unsigned long flags)
{
	long n = process_vm_readv(pid, l, nl, r, nr, flags);
	return n < 0 ? -errno : n;
}

static long wv(pid_t pid, struct iovec *l, int nl, struct iovec *r, int nr)
{
	long n = process_vm_writev(pid, l, nl, r, nr, 0);
	return n < 0 ? -errno : n;
}

int main(void)
{
	int go[2], back[2];
	setvbuf(stdout, NULL, _IONBF, 0);       /* one order of lines whatever stdout is */
	pipe(go);
	pipe(back);
	char *buf = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 3 * PG; i++)
		buf[i] = (char)('a' + i % 26);
	munmap(buf + 3 * PG, PG);
	pid_t pid = fork();
	if (pid == 0) {
		mprotect(buf + 2 * PG, PG, PROT_READ);
		char c;
		write(back[1], "r", 1);
		read(go[0], &c, 1);               /* the parent has written */
		printf("child sees: %.6s at 0, %.4s at %d\n", buf, buf + PG - 2, PG - 2);
		return 0;
	}
	char c;
	read(back[0], &c, 1);
	char a[8] = {0}, b[8] = {0}, big[2 * PG];
	struct iovec l2[2] = {{a, 3}, {b, 5}}, r1 = {buf + 1, 8};
	printf("split read: %ld \"%.3s\" \"%.5s\"\n", rv(pid, l2, 2, &r1, 1, 0), a, b);
	printf("flags 1: %ld\n", rv(pid, l2, 2, &r1, 1, 1));
	printf("no such pid: %ld\n", rv(99999, l2, 2, &r1, 1, 0));
	struct iovec l0 = {a, 0};
	printf("no local bytes, bad pid: %ld\n", rv(99999, &l0, 1, &r1, 1, 0));
	struct iovec lb = {big, sizeof(big)}, rpart = {buf + 3 * PG - 100, 2 * PG};
	printf("into the unmapped page: %ld\n", rv(pid, &lb, 1, &rpart, 1, 0));
	struct iovec rbad = {buf + 3 * PG, 16};
	printf("unmapped at once: %ld\n", rv(pid, &lb, 1, &rbad, 1, 0));
	struct iovec lbad = {(void *)16, 8};
	printf("bad local buffer: %ld\n", rv(pid, &lbad, 1, &r1, 1, 0));
	printf("too many iovecs: %ld\n", rv(pid, l2, 1025, &r1, 1, 0));
	char w[] = "XYZWVU";
	struct iovec lw = {w, 6}, rw[2] = {{buf, 3}, {buf + PG - 2, 3}};
	printf("write: %ld\n", wv(pid, &lw, 1, rw, 2));
	struct iovec rro = {buf + 2 * PG, 4};
	printf("write read-only page: %ld\n", wv(pid, &lw, 1, &rro, 1));
	struct iovec rmix[2] = {{buf + 10, 2}, {buf + 2 * PG, 4}};
	printf("write then read-only: %ld\n", wv(pid, &lw, 1, rmix, 2));
	write(go[1], "g", 1);
	int st;
	waitpid(pid, &st, 0);
	printf("child exit %d\n", WEXITSTATUS(st));
	return 0;
}
