/* Which mmap layout a process gets, and the resource limits that choose it.
 *   mmlayout layout          print the layout two NULL-hint mmaps show and RLIMIT_STACK
 *   mmlayout reexec PATH     setrlimit(RLIMIT_STACK, unlimited), then exec PATH layout
 *   mmlayout errors          setrlimit/prlimit errnos (soft > hard, bad pid, bad resource)
 *   mmlayout hint            a free page-aligned hint is taken as given */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static void *anon(void *hint)
{
	return mmap(hint, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static int layout(void)
{
	struct rlimit r;
	void *a = anon(NULL), *b = anon(NULL);

	getrlimit(RLIMIT_STACK, &r);
	printf("stack rlimit: %s\n", r.rlim_cur == RLIM_INFINITY ? "unlimited" : "finite");
	printf("layout: %s\n", b > a ? "bottom-up" : "top-down");
	printf("first mmap below 1/2 of the address space: %d\n", (uintptr_t)a < ((uintptr_t)1 << 37));
	return 0;
}

static int errors(void)
{
	struct rlimit r, bad;
	int rc;

	getrlimit(RLIMIT_NOFILE, &r);
	bad.rlim_cur = r.rlim_max + 1;
	bad.rlim_max = r.rlim_max;
	rc = setrlimit(RLIMIT_NOFILE, &bad);
	printf("nofile soft > hard: %d %s\n", rc, rc ? strerror(errno) : "");
	rc = prlimit(999999, RLIMIT_NOFILE, NULL, &r);
	printf("prlimit on no such pid: %d %s\n", rc, rc ? strerror(errno) : "");
	rc = prlimit(0, 99, NULL, &r);
	printf("prlimit on resource 99: %d %s\n", rc, rc ? strerror(errno) : "");
	r.rlim_cur = 100;
	rc = setrlimit(RLIMIT_NOFILE, &r);
	getrlimit(RLIMIT_NOFILE, &bad);
	printf("nofile soft set to 100: %d, reads back %llu\n", rc, (unsigned long long)bad.rlim_cur);
	return 0;
}

static int hint(void)
{
	void *a = anon(NULL);
	void *want = (char *)a - 64 * 4096;
	void *got = anon(want);
	printf("free hint taken: %d\n", got == want);
	got = mmap(want, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	printf("MAP_FIXED_NOREPLACE on a used page: %s\n", got == MAP_FAILED ? strerror(errno) : "mapped");
	got = mmap((char *)want - 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	printf("MAP_FIXED_NOREPLACE on a free page: %d\n", got == (char *)want - 4096);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "layout"))
		return layout();
	if (argc > 1 && !strcmp(argv[1], "errors"))
		return errors();
	if (argc > 1 && !strcmp(argv[1], "hint"))
		return hint();
	if (argc > 2 && !strcmp(argv[1], "reexec")) {
		struct rlimit r = { RLIM_INFINITY, RLIM_INFINITY };
		char *args[] = { argv[2], "layout", NULL };
		if (setrlimit(RLIMIT_STACK, &r))
			perror("setrlimit");
		execv(argv[2], args);
		perror("execv");
		return 1;
	}
	fprintf(stderr, "usage: mmlayout layout|reexec PATH|errors|hint\n");
	return 2;
}
