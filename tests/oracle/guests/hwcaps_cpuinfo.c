/* hwcaps_cpuinfo: what a program learns about the CPU's features from the kernel, both ways:
 * the HWCAP words of the auxiliary vector (getauxval(AT_HWCAP), getauxval(AT_HWCAP2)) and the
 * first processor's feature line of /proc/cpuinfo ("Features" on arm64, "isa" on riscv).
 * Linux derives both from the same place (the sanitised ID registers on arm64, the ISA string
 * of the device tree on riscv), so they must tell the same story. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

int main(void)
{
	printf("AT_HWCAP  %#lx\n", getauxval(AT_HWCAP));
	printf("AT_HWCAP2 %#lx\n", getauxval(AT_HWCAP2));
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f) {
		printf("cpuinfo: cannot open: %s\n", strerror(errno));
		return 0;
	}
	char line[4096];
	int seen = 0;
	while (fgets(line, sizeof(line), f)) {
		/* only the first processor's block: the line appears once per CPU */
		if (!strncmp(line, "Features", 8) || !strncmp(line, "isa", 3)) {
			if (seen++)
				break;
			printf("cpuinfo %s", line);
		}
	}
	fclose(f);
	if (!seen)
		printf("cpuinfo: no Features/isa line\n");
	return 0;
}
