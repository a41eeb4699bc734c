/* MAP_SHARED of a regular file, read-write, as Linux keeps it coherent: stores through the
 * mapping reach read()/pread() of the file and every other mapping of it (a second mmap, a
 * forked child's inherited one), and write()/pwrite() reach the mappings; msync; a page wholly
 * past the end of the file raises SIGBUS (BUS_ADRERR), following ftruncate both ways; munmap
 * and mprotect of a part; mremap moving, growing over the file's next pages and
 * MREMAP_DONTUNMAP (the old range still maps the file); a read-only open gives EACCES for
 * PROT_WRITE and for mprotect(PROT_WRITE).
 *
 * argv[1]: the file to use (default /tmp/shared_file.dat), created and removed here; with
 * argv[2] "ro", an existing file only mapped read-only (a read-only root).  The output
 * has no addresses, so emukern's and qemu-user's (the host's Linux) compare byte for byte
 * (tests/kernel/test_shared_file.py). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096
static sigjmp_buf jb;
static volatile int got_sig, got_code, addr_ok;
static volatile char *want_addr;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = si->si_code;
	addr_ok = si->si_addr == (void *)want_addr;
	siglongjmp(jb, 1);
}

/* touch one byte (a load, or a store of 'x'): the signal it raised, 0 for none */
static int touch(volatile char *p, int store)
{
	got_sig = got_code = addr_ok = 0;
	want_addr = p;
	if (!sigsetjmp(jb, 1)) {
		if (store)
			*p = 'x';
		else
			(void)*p;
	}
	return got_sig;
}

static long fsize(int fd) { return (long)lseek(fd, 0, SEEK_END); }

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/shared_file.dat";
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	setvbuf(stdout, 0, _IONBF, 0);
	sigaction(SIGBUS, &sa, 0);
	sigaction(SIGSEGV, &sa, 0);

	if (argc > 2 && !strcmp(argv[2], "ro")) {
		/* an existing file of a read-only root: shared read-only mappings only */
		int rfd = open(path, O_RDONLY);
		char *m = mmap(0, PG, PROT_READ, MAP_SHARED, rfd, 0);
		if (m == MAP_FAILED) {
			perror("mmap");
			return 5;
		}
		printf("ro root: %.5s; O_RDWR open errno %d; PROT_WRITE %s; mprotect %d errno %d\n", m,
		       open(path, O_RDWR) < 0 ? errno : 0,
		       mmap(0, PG, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0) == MAP_FAILED ? "refused" : "mapped",
		       mprotect(m, PG, PROT_READ | PROT_WRITE), errno);
		return 0;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	if (ftruncate(fd, 2 * PG))
		return 2;
	char *p = mmap(0, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 3;
	}
	char b[32] = {0};

	/* the mapping and the file are one set of pages */
	strcpy(p, "hello");
	pread(fd, b, 5, 0);
	printf("pread sees a store: %s\n", b);
	pwrite(fd, "WORLD", 5, PG);
	printf("mapping sees pwrite: %.5s\n", p + PG);
	char *q = mmap(0, PG, PROT_READ, MAP_SHARED, fd, 0);
	printf("second mapping: %s\n", q);

	/* two processes: the child's stores, the parent's writes */
	int go[2], back[2];
	pipe(go);
	pipe(back);
	pid_t c = fork();
	if (c == 0) {
		strcpy(p + 100, "from child");
		write(back[1], "1", 1);
		read(go[0], b, 1);
		printf("child sees parent's pwrite: %.6s\n", p + 200);
		fflush(stdout);
		_exit(0);
	}
	read(back[0], b, 1);
	memset(b, 0, sizeof b);
	pread(fd, b, 10, 100);
	printf("parent's pread sees child's store: %s; mapping: %s\n", b, p + 100);
	pwrite(fd, "parent", 6, 200);
	write(go[1], "1", 1);
	int st;
	waitpid(c, &st, 0);
	printf("child exit %d\n", WEXITSTATUS(st));

	printf("msync MS_SYNC %d, MS_ASYNC %d, MS_INVALIDATE %d\n", msync(p, 2 * PG, MS_SYNC),
	       msync(p, PG, MS_ASYNC), msync(p, PG, MS_INVALIDATE));

	/* past the end of the file */
	ftruncate(fd, 100);
	printf("byte 200 of the file's last page after shrinking: %d\n", p[200]);
	printf("page past EOF, load: sig %d code %d addr %d\n", touch(p + PG, 0), got_code, addr_ok);
	printf("page past EOF, store: sig %d code %d\n", touch(p + PG + 8, 1), got_code);
	printf("file size unchanged: %ld\n", fsize(fd));
	ftruncate(fd, PG + 10);
	printf("after growing: sig %d, store reaches file: ", touch(p + PG + 1, 1));
	pread(fd, b, 1, PG + 1);
	printf("%c\n", b[0]);
	pwrite(fd, "tail", 4, 2 * PG - 4);      /* a write that extends the file */
	printf("file extended by write: size %ld, mapping %.4s\n", fsize(fd), p + 2 * PG - 4);

	/* mprotect and munmap of a part */
	printf("mprotect first page read-only: %d; store: sig %d\n", mprotect(p, PG, PROT_READ),
	       touch(p, 1));
	printf("second page still writable: sig %d\n", touch(p + PG + 2, 1));
	mprotect(p, PG, PROT_READ | PROT_WRITE);
	munmap(p + PG, PG);
	printf("unmapped half: sig %d; first half: %s\n", touch(p + PG, 0), p);

	/* mremap: move and grow over the file's next pages */
	ftruncate(fd, 3 * PG);
	pwrite(fd, "third", 5, 2 * PG);
	char *r = mremap(p, PG, 3 * PG, MREMAP_MAYMOVE);
	if (r == MAP_FAILED) {
		perror("mremap");
		return 4;
	}
	printf("mremap grown: %s / %.4s / %.5s\n", r, r + 2 * PG - 4, r + 2 * PG);
	strcpy(r + 2 * PG + 8, "via-remap");
	pread(fd, b, 9, 2 * PG + 8);
	printf("store through the moved mapping: %.9s\n", b);
	char *d = mremap(r, 3 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	if (d == MAP_FAILED) {
		printf("mremap DONTUNMAP: errno %d\n", errno);
	} else {
		strcpy(d + 300, "new");
		printf("DONTUNMAP: new %s, old range still the file: %s %.3s\n", d, r, r + 300);
	}

	/* a read-only open */
	int ro = open(path, O_RDONLY);
	void *w = mmap(0, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
	printf("read-only open, PROT_WRITE: %s\n", w == MAP_FAILED && errno == EACCES ? "EACCES" : "mapped");
	char *s = mmap(0, PG, PROT_READ, MAP_SHARED, ro, 0);
	printf("read-only open, mapping: %s; mprotect(PROT_WRITE): %d errno %d\n", s,
	       mprotect(s, PG, PROT_READ | PROT_WRITE), errno);
	printf("a writable open's read-only mapping may become writable: %d\n",
	       mprotect(q, PG, PROT_READ | PROT_WRITE));
	close(fd);
	close(ro);
	strcpy(q + 50, "after close");
	int fd2 = open(path, O_RDONLY);
	pread(fd2, b, 11, 50);
	printf("store after close reaches the file: %.11s\n", b);
	unlink(path);
	return 0;
}
