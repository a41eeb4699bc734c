/* hwcap: the HWCAPs the kernel put in the auxiliary vector (AT_HWCAP, AT_HWCAP2), one per line.
 * Linux derives them from the CPU's ID registers (arm64) or ISA string (riscv). */
#include <stdio.h>
#include <sys/auxv.h>

int main(void)
{
	printf("AT_HWCAP  %#lx\n", getauxval(AT_HWCAP));
	printf("AT_HWCAP2 %#lx\n", getauxval(AT_HWCAP2));
	return 0;
}
