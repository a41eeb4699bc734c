/* hwprobe: riscv_hwprobe(2) for keys 0..14 (Linux 6.4+), one "key value" line each; a key the
 * kernel does not know comes back with key -1.  The exit status is 0, or 1 if the call failed. */
#include <stdio.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>

struct riscv_hwprobe { int64_t key; uint64_t value; };

int main(void)
{
	struct riscv_hwprobe p[15];
	for (int i = 0; i < 15; i++) {
		p[i].key = i;
		p[i].value = 0;
	}
	long r = syscall(258 /* __NR_riscv_hwprobe */, p, 15, 0, NULL, 0);
	printf("riscv_hwprobe = %ld\n", r);
	if (r != 0)
		return 1;
	for (int i = 0; i < 15; i++)
		printf("key %2d -> %lld value %#llx\n", i, (long long)p[i].key, (unsigned long long)p[i].value);
	return 0;
}
