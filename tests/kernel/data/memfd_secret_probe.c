/* memfd_secret(2) as mm/secretmem.c (Linux 6.12): flags (O_CLOEXEC only), read/write EINVAL,
 * one ftruncate, fallocate EOPNOTSUPP, MAP_SHARED only, the pages locked (VmLck) and counted
 * against RLIMIT_MEMLOCK once privilege is dropped, and unreachable from outside the process:
 * /proc/self/mem (EIO), process_vm_readv (EFAULT), vmsplice (EFAULT), ptrace PEEKDATA (EIO). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define E(r) ((r) < 0 ? strerrorname_np(errno) : "ok")

static void vmlck(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmLck:", 6))
			printf("  %s", line);
	fclose(f);
}

int main(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	char buf[64];
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("flags 1: %s\n", E(syscall(SYS_memfd_secret, 1)));
	printf("flags O_NONBLOCK: %s\n", E(syscall(SYS_memfd_secret, O_NONBLOCK)));
	int fd = syscall(SYS_memfd_secret, O_CLOEXEC);
	printf("O_CLOEXEC: %s cloexec %d\n", E(fd), fcntl(fd, F_GETFD));
	printf("ftruncate: %s\n", E(ftruncate(fd, 4 * ps)));
	printf("ftruncate again: %s\n", E(ftruncate(fd, 8 * ps)));
	printf("fallocate: %s\n", E(fallocate(fd, 0, 0, ps)));
	printf("read %s write %s pread %s pwrite %s\n", E(read(fd, buf, 8)), E(write(fd, buf, 8)),
	       E(pread(fd, buf, 8, 0)), E(pwrite(fd, buf, 8, 0)));
	char link[64] = "";
	snprintf(buf, sizeof buf, "/proc/self/fd/%d", fd);
	readlink(buf, link, sizeof link - 1);
	printf("fd link %s\n", link);
	void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	printf("MAP_PRIVATE: %s\n", p == MAP_FAILED ? strerrorname_np(errno) : "mapped");
	char *m = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	printf("MAP_SHARED: %s\n", m == MAP_FAILED ? strerrorname_np(errno) : "mapped");
	memset(m, 0x55, 2 * ps);
	vmlck();
	int mem = open("/proc/self/mem", O_RDONLY);
	printf("/proc/self/mem pread: %s\n", E(pread(mem, buf, 8, (off_t)m)));
	struct iovec l = { buf, 8 }, r = { m, 8 };
	printf("process_vm_readv: %s\n", E(process_vm_readv(getpid(), &l, 1, &r, 1, 0)));
	int pfd[2];
	pipe(pfd);
	struct iovec v = { m, ps };
	printf("vmsplice: %s\n", E(vmsplice(pfd[1], &v, 1, 0)));
	pid_t child = fork();
	if (child == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		_exit(m[0] == 0x55 ? 0 : 1);       /* the child's own mapping still works */
	}
	int st;
	waitpid(child, &st, 0);
	errno = 0;
	long w = ptrace(PTRACE_PEEKDATA, child, m, 0);
	printf("ptrace PEEKDATA: %ld %s\n", w, errno ? strerrorname_np(errno) : "ok");
	ptrace(PTRACE_DETACH, child, 0, 0);
	waitpid(child, &st, 0);
	printf("child's own read: exit %d\n", WEXITSTATUS(st));
	/* RLIMIT_MEMLOCK once CAP_IPC_LOCK is gone (dropping root drops it here) */
	struct rlimit rl = { 3 * ps, 3 * ps };
	setrlimit(RLIMIT_MEMLOCK, &rl);
	if (setresuid(1000, 1000, 1000))
		printf("setresuid: %s\n", strerrorname_np(errno));
	char *m2 = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	printf("2 more pages over a 3-page limit: %s\n", m2 == MAP_FAILED ? strerrorname_np(errno) : "mapped");
	m2 = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	printf("1 more page: %s\n", m2 == MAP_FAILED ? strerrorname_np(errno) : "mapped");
	vmlck();
	munmap(m, 2 * ps);
	vmlck();
	return 0;
}
