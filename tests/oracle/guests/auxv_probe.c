/* The auxiliary vector as a program sees it: every entry in the kernel's order, from
 * /proc/self/auxv.  Values that are addresses the two kernels choose differently (the stack, the
 * vDSO) are shown by what they point to, not where: AT_PLATFORM as its string, AT_EXECFN as
 * whether it is the path the program was started by (argv[0] here),
 * AT_RANDOM as "16 bytes", AT_SYSINFO_EHDR as its ELF magic or "no vDSO".  HWCAP bit 2 on arm64
 * (HWCAP_EVTSTRM, the generic timer's event stream, which emukern's machine has not) is masked.
 * Then sysconf(_SC_CLK_TCK), which glibc takes from AT_CLKTCK.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long v[256];
	int fd = open("/proc/self/auxv", O_RDONLY);
	int n = (int)(read(fd, v, sizeof(v)) / 16);
	for (int i = 0; i < n; i++) {
		unsigned long t = v[2 * i], x = v[2 * i + 1];
		switch (t) {
		case AT_PLATFORM:
			printf("%lu \"%s\"\n", t, (const char *)x);
			break;
		case AT_EXECFN:
			printf("%lu argv[0]: %d\n", t, argc > 0 && !strcmp((const char *)x, argv[0]));
			break;
		case AT_RANDOM:
			printf("%lu 16 bytes\n", t);
			break;
		case AT_SYSINFO_EHDR:
			printf("%lu vDSO %s\n", t, memcmp((void *)x, "\177ELF", 4) ? "?" : "ELF");
			break;
		case AT_HWCAP:
#ifdef __aarch64__
			x &= ~(1UL << 2);
#endif
			/* fall through */
		default:
			printf("%lu %#lx\n", t, x);
		}
	}
	printf("_SC_CLK_TCK %ld\n", sysconf(_SC_CLK_TCK));
	return 0;
}
