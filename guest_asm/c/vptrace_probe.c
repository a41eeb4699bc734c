/* NT_RISCV_VECTOR through PTRACE_GETREGSET/SETREGSET, between a parent and its PTRACE_TRACEME
 * child, at the vtype given as argv[1] (the child's vsetvl, vl = VLMAX) and a write of argv[2]
 * (vtype) / argv[3] (vl) by the tracer.  Three stops:
 *   0: the child's SIGSTOP before it ever used V (the errno of a read),
 *   1: an ebreak right after the child filled v0-v31 (a read, a write, an invalid write),
 *   2: an ebreak right after a getpid() ecall: what a debugger sees of the state the syscall
 *      made dead (the "hidden state"), and whether a write made there reaches the child.
 * The child reports what it found after each stop once it is done (it prints nothing between
 * stops, so no library code touches V in between).  Build with -march=rv64gcv. */
#define _GNU_SOURCE
#include <errno.h>
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NT_RISCV_VECTOR
#define NT_RISCV_VECTOR 0x901
#endif

struct vhdr { unsigned long vstart, vl, vtype, vcsr, vlenb; };

static unsigned char seen[2][3 * 8];        /* per resume: vl, vtype, v0[0] v31[0] */

static void child_view(int i)
{
	unsigned long vl, vtype;
	unsigned char b0, b31;
	static unsigned char buf[64];
	asm volatile("csrr %0, vl\n\tcsrr %1, vtype" : "=r"(vl), "=r"(vtype));
	asm volatile("vsetivli zero, 1, e8, m1, ta, ma\n\tvse8.v v0, (%0)" : : "r"(buf) : "memory");
	b0 = buf[0];
	asm volatile("vse8.v v31, (%0)" : : "r"(buf) : "memory");
	b31 = buf[0];
	memcpy(seen[i], &vl, 8);
	memcpy(seen[i] + 8, &vtype, 8);
	seen[i][16] = b0;
	seen[i][17] = b31;
}

static int child(unsigned long vtype)
{
	unsigned long vl;
	ptrace(PTRACE_TRACEME, 0, 0, 0);
	raise(SIGSTOP);
	asm volatile("vsetvli t0, zero, e8, m8, ta, ma\n\t"
		     "vmv.v.i v0, 1\n\tvmv.v.i v8, 2\n\tvmv.v.i v16, 3\n\tvmv.v.i v24, 4\n\t"
		     "vsetvl %0, zero, %1\n\t"
		     ".option push\n\t.option norvc\n\tebreak\n\t.option pop"
		     : "=r"(vl) : "r"(vtype) : "t0", "memory");
	child_view(0);
	{
		register long a7 asm("a7") = 172;         /* getpid */
		register long a0 asm("a0");
		asm volatile("ecall\n\t.option push\n\t.option norvc\n\tebreak\n\t.option pop"
			     : "=r"(a0) : "r"(a7) : "memory");
	}
	child_view(1);
	for (int i = 0; i < 2; i++) {
		unsigned long v, t;
		memcpy(&v, seen[i], 8);
		memcpy(&t, seen[i] + 8, 8);
		printf("child after stop %d: vl %lu vtype %#lx v0[0] %#x v31[0] %#x\n", i + 1, v, t,
		       seen[i][16], seen[i][17]);
	}
	return 0;
}

static int next_stop(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFSTOPPED(st) ? WSTOPSIG(st) : -1;
}

static void skip_ebreak(pid_t pid)
{
	unsigned long regs[32];
	struct iovec iov = { regs, sizeof(regs) };
	ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov);
	regs[0] += 4;
	ptrace(PTRACE_SETREGSET, pid, NT_PRSTATUS, &iov);
}

static void show(const char *what, unsigned char *buf, unsigned long vlenb, long ret, size_t len)
{
	struct vhdr *h = (struct vhdr *)buf;
	if (ret) {
		printf("%s: GETREGSET %s\n", what, strerror(errno));
		return;
	}
	printf("%s: length %zu vstart %lu vl %lu vtype %#lx vcsr %lu vlenb %lu v0[0] %#x v31[0] %#x\n",
	       what, len, h->vstart, h->vl, h->vtype, h->vcsr, h->vlenb, buf[sizeof(*h)],
	       buf[sizeof(*h) + 31 * vlenb]);
}

int main(int argc, char **argv)
{
	unsigned long vtype = argc > 1 ? strtoul(argv[1], 0, 0) : 0;
	unsigned long new_vtype = argc > 2 ? strtoul(argv[2], 0, 0) : 0;
	unsigned long new_vl = argc > 3 ? strtoul(argv[3], 0, 0) : 1;
	unsigned long vlenb;
	asm volatile("csrr %0, vlenb" : "=r"(vlenb));
	size_t size = sizeof(struct vhdr) + 32 * vlenb;
	unsigned char *buf = calloc(1, size);
	struct iovec iov = { buf, size };
	struct vhdr *h = (struct vhdr *)buf;
	pid_t pid = fork();
	if (pid == 0)
		return child(vtype);
	long r;
	int status;

	printf("stop 0: signal %d\n", next_stop(pid));
	r = ptrace(PTRACE_GETREGSET, pid, NT_RISCV_VECTOR, &iov);
	show("before first use", buf, vlenb, r, iov.iov_len);
	ptrace(PTRACE_CONT, pid, 0, 0);

	printf("stop 1: signal %d\n", next_stop(pid));
	iov.iov_len = size;
	r = ptrace(PTRACE_GETREGSET, pid, NT_RISCV_VECTOR, &iov);
	show("after vsetvl", buf, vlenb, r, iov.iov_len);
	iov.iov_len = 7;
	r = ptrace(PTRACE_GETREGSET, pid, NT_RISCV_VECTOR, &iov);
	printf("length 7: %s\n", r ? strerror(errno) : "ok");
	iov.iov_len = 1 << 20;
	r = ptrace(PTRACE_GETREGSET, pid, NT_RISCV_VECTOR, &iov);
	printf("length 1 MiB: %s, cut to %zu\n", r ? strerror(errno) : "ok", iov.iov_len);
	iov.iov_len = size;
	h->vtype = 1ul << 63;                     /* vill: a value no vsetvl gives */
	r = ptrace(PTRACE_SETREGSET, pid, NT_RISCV_VECTOR, &iov);
	printf("SETREGSET vill: %s\n", r ? strerror(errno) : "ok");
	h->vlenb = vlenb * 2;
	h->vtype = new_vtype;
	r = ptrace(PTRACE_SETREGSET, pid, NT_RISCV_VECTOR, &iov);
	printf("SETREGSET vlenb*2: %s\n", r ? strerror(errno) : "ok");
	h->vlenb = vlenb;
	h->vl = new_vl;
	memset(buf + sizeof(*h), 0x5a, 32 * vlenb);
	r = ptrace(PTRACE_SETREGSET, pid, NT_RISCV_VECTOR, &iov);
	printf("SETREGSET vtype %#lx vl %lu: %s\n", new_vtype, new_vl, r ? strerror(errno) : "ok");
	memset(buf, 0, size);
	r = ptrace(PTRACE_GETREGSET, pid, NT_RISCV_VECTOR, &iov);
	show("read back", buf, vlenb, r, iov.iov_len);
	skip_ebreak(pid);
	ptrace(PTRACE_CONT, pid, 0, 0);

	printf("stop 2: signal %d\n", next_stop(pid));
	iov.iov_len = size;
	r = ptrace(PTRACE_GETREGSET, pid, NT_RISCV_VECTOR, &iov);
	show("after a syscall", buf, vlenb, r, iov.iov_len);
	h->vstart = 0; h->vl = 1; h->vtype = 0; h->vcsr = 0; h->vlenb = vlenb;
	memset(buf + sizeof(*h), 0x77, 32 * vlenb);
	r = ptrace(PTRACE_SETREGSET, pid, NT_RISCV_VECTOR, &iov);
	printf("SETREGSET after a syscall: %s\n", r ? strerror(errno) : "ok");
	skip_ebreak(pid);
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &status, 0);
	fflush(stdout);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}
