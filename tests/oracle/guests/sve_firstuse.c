/* sve_firstuse: what the SVE registers hold at a task's first SVE instruction.  The first
 * instruction is a store of Z0 (it takes the SVE access trap); the kernel's do_sve_acc() hands
 * over the FPSIMD registers as the low 128 bits of Z and zeroes everything else (Z bits above
 * 128, P0-P15, FFR).  Prints, per register, whether the bits the kernel must zero are zero (the
 * low bits are whatever the C library left in V0-V31, so they are not printed). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static unsigned char z[32][256], p[17][32];

int main(void)
{
	uint64_t vl;
	__asm__ volatile(
		".arch_extension sve\n"
		"\tstr z0, [%1]\n"               /* first SVE use: the access trap */
		"\trdvl %0, #1\n"
		: "=&r"(vl) : "r"(z[0]) : "memory");
#define SZ(n) __asm__ volatile(".arch_extension sve\n\tstr z" #n ", [%0]" :: "r"(z[n]) : "memory")
	SZ(1); SZ(2); SZ(3); SZ(4); SZ(5); SZ(6); SZ(7); SZ(8); SZ(9); SZ(10); SZ(11); SZ(12); SZ(13);
	SZ(14); SZ(15); SZ(16); SZ(17); SZ(18); SZ(19); SZ(20); SZ(21); SZ(22); SZ(23); SZ(24);
	SZ(25); SZ(26); SZ(27); SZ(28); SZ(29); SZ(30); SZ(31);
#define SP(n) __asm__ volatile(".arch_extension sve\n\tstr p" #n ", [%0]" :: "r"(p[n]) : "memory")
	SP(0); SP(1); SP(2); SP(3); SP(4); SP(5); SP(6); SP(7); SP(8); SP(9); SP(10); SP(11);
	SP(12); SP(13); SP(14); SP(15);
	__asm__ volatile(".arch_extension sve\n\trdffr p0.b\n\tstr p0, [%0]" :: "r"(p[16]) : "memory", "p0");
	printf("vl %llu bytes\n", (unsigned long long)vl);
	for (int i = 0; i < 32; i++) {
		int hi = 0;
		for (uint64_t b = 16; b < vl; b++)
			hi |= z[i][b];
		printf("z%-2d above 128 bits: %s\n", i, hi ? "NONZERO" : "zero");
	}
	for (int i = 0; i < 17; i++) {
		int any = 0;
		for (uint64_t b = 0; b < vl / 8; b++)
			any |= p[i][b];
		printf("%s%-2d: %s\n", i == 16 ? "ffr" : "p", i == 16 ? 0 : i, any ? "NONZERO" : "zero");
	}
	return 0;
}
