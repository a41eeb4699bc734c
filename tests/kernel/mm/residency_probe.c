/* Page residency as a process sees it: /proc/self/smaps, smaps_rollup, pagemap and status,
 * mincore, across a touch, MADV_DONTNEED, MADV_POPULATE_READ/WRITE, mlock2(MLOCK_ONFAULT),
 * mlock, munlock and fork.  Every line is "step: key=value ..." about one 8-page anonymous
 * mapping; "sem:" lines are return values and errnos only (the part another kernel's numbers
 * do not change). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#define N 8

static long ps;
static char *map;

static long smaps_field(const char *want, char *flags, size_t flen)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0;
	long val = -1;
	if (!f)
		return -2;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = lo <= (unsigned long)map && (unsigned long)map < hi;
			continue;
		}
		if (!in)
			continue;
		if (flags && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, flen, "%s", line + 9);
			flags[strcspn(flags, "\n")] = 0;
		}
		if (!strncmp(line, want, strlen(want)))
			sscanf(line + strlen(want), "%ld", &val);
	}
	fclose(f);
	return val;
}

static long status_field(const char *want)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long val = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, want, strlen(want)))
			sscanf(line + strlen(want), "%ld", &val);
	if (f)
		fclose(f);
	return val;
}

static void show(const char *step)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e[N];
	unsigned char vec[N];
	char flags[512] = "";
	int present = 0, excl = 0, file = 0, pfn = 0, core = 0, i;
	if (pread(fd, e, sizeof e, (uintptr_t)map / ps * 8) != sizeof e)
		printf("%s: pagemap read failed\n", step);
	close(fd);
	for (i = 0; i < N; i++) {
		present += !!(e[i] >> 63 & 1);
		excl += !!(e[i] >> 56 & 1);
		file += !!(e[i] >> 61 & 1);
		pfn += (e[i] & ((1ULL << 55) - 1)) != 0;
	}
	mincore(map, N * ps, vec);
	for (i = 0; i < N; i++)
		core += vec[i] & 1;
	printf("%s: present=%d exclusive=%d file=%d pfn=%d mincore=%d rss=%ld pss=%ld shared_dirty=%ld "
	       "private_dirty=%ld anon=%ld locked=%ld", step, present, excl, file, pfn, core,
	       smaps_field("Rss:", NULL, 0), smaps_field("Pss:", NULL, 0),
	       smaps_field("Shared_Dirty:", NULL, 0), smaps_field("Private_Dirty:", NULL, 0),
	       smaps_field("Anonymous:", NULL, 0), smaps_field("Locked:", flags, sizeof flags));
	printf(" lo=%d lf=%d vmlck=%ld\n", strstr(flags, "lo ") != NULL, strstr(flags, "lf ") != NULL,
	       status_field("VmLck:"));
}

#define SEM(what, call) do { errno = 0; long r_ = (call); \
	printf("sem: %s=%ld errno=%d\n", what, r_, r_ < 0 ? errno : 0); } while (0)

int main(void)
{
	unsigned char vec[N];
	ps = sysconf(_SC_PAGESIZE);
	map = mmap(NULL, N * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	show("fresh");
	map[0] = 1;
	map[ps] = 2;
	printf("read: %d\n", map[2 * ps]);
	show("touched");
	SEM("dontneed", madvise(map, 3 * ps, MADV_DONTNEED));
	printf("after-dontneed: byte0=%d byte1=%d\n", map[0], map[ps]);
	show("dontneed");
	SEM("populate_write", madvise(map, 4 * ps, MADV_POPULATE_WRITE));
	show("populate-write");
	SEM("populate_read", madvise(map + 4 * ps, 4 * ps, MADV_POPULATE_READ));
	show("populate-read");
	SEM("mlock2_onfault", syscall(SYS_mlock2, map, N * ps, MLOCK_ONFAULT));
	show("mlock-onfault");
	SEM("dontneed_locked", madvise(map, ps, MADV_DONTNEED));
	SEM("munlock", munlock(map, N * ps));
	SEM("mlock", mlock(map, N * ps));
	show("mlock");
	SEM("munlock", munlock(map, N * ps));
	show("munlock");
	/* the error cases */
	SEM("populate_unaligned", madvise(map + 1, ps, MADV_POPULATE_READ));
	SEM("mincore_unaligned", mincore(map + 1, ps, vec));
	SEM("mincore_badvec", mincore(map, ps, (unsigned char *)8));
	char *h = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SEM("munmap_middle", munmap(h + ps, ps));
	SEM("populate_hole", madvise(h, 3 * ps, MADV_POPULATE_WRITE));
	SEM("mincore_hole", mincore(h, 3 * ps, vec));
	SEM("mincore_before_hole", vec[0]);
	SEM("dontneed_hole", madvise(h, 3 * ps, MADV_DONTNEED));
	SEM("mlock_hole", mlock(h, 3 * ps));
	char *ro = mmap(NULL, ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SEM("populate_write_ro", madvise(ro, ps, MADV_POPULATE_WRITE));
	SEM("populate_read_ro", madvise(ro, ps, MADV_POPULATE_READ));
	char *none = mmap(NULL, ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	SEM("populate_read_none", madvise(none, ps, MADV_POPULATE_READ));
	/* (Linux merged h's fresh vma with map's, which lies just above it: unmapping h splits
	 * map's 8 pages off again, so map's smaps entry is the same in every kernel) */
	munmap(h, 3 * ps);
	munmap(ro, ps);
	munmap(none, ps);
	SEM("mlockall", mlockall(MCL_CURRENT));
	SEM("munlockall", munlockall());
	printf("rollup: %s\n", access("/proc/self/smaps_rollup", R_OK) == 0 ? "yes" : "no");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		show("child");
		map[0] = 9;
		show("child-written");
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	/* mm->def_flags: mappings made after mlockall(MCL_FUTURE) come locked and faulted in, with
	 * MCL_ONFAULT locked but faulted in only where touched */
	SEM("mlockall_future", mlockall(MCL_FUTURE));
	map = mmap(NULL, N * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	show("future");
	SEM("munlockall", munlockall());
	show("future-unlocked");
	SEM("mlockall_future_onfault", mlockall(MCL_FUTURE | MCL_ONFAULT));
	map = mmap(NULL, N * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	map[0] = 1;
	show("future-onfault");
	SEM("munlockall", munlockall());
	return 0;
}
