/* Prints the smaps entry of a fresh 2-page mapping with one page written, then smaps_rollup and
 * status, separated by "=== rollup" and "=== status" lines. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static void cat(const char *path, unsigned long from)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int on = !from;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (from && sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			on = lo == from;
		if (on)
			fputs(line, stdout);
	}
	if (f)
		fclose(f);
}

int main(void)
{
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p[0] = 1;
	cat("/proc/self/smaps", (unsigned long)p);
	puts("=== rollup");
	cat("/proc/self/smaps_rollup", 0);
	puts("=== status");
	cat("/proc/self/status", 0);
	return 0;
}
