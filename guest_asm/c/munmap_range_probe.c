/* munmap's range check (do_vmi_munmap): a length that runs past the user address space, or
 * wraps when rounded to pages, is EINVAL and unmaps nothing; stress-ng's mmap stressor asks. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

int main(void)
{
	volatile int alive = 1;
	int r = munmap((void *)0, ~(size_t)0);

	printf("munmap(0, ~0) r=%d errno=%d\n", r, r ? errno : 0);
	r = munmap((void *)0, (size_t)1 << 63);
	printf("munmap(0, 2^63) r=%d errno=%d\n", r, r ? errno : 0);
	r = munmap((void *)0, 0);
	printf("munmap(0, 0) r=%d errno=%d\n", r, r ? errno : 0);
	printf("still mapped: %d\n", alive);
	return 0;
}
