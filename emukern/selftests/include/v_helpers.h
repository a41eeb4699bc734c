/* emukern's stand-in for tools/testing/selftests/riscv/vector/v_helpers.h, which Linux 6.12's tree
 * does not have (the RISC-V ptrace selftests that include it are newer).  Only the three helpers
 * those tests call, written for emukern: V support from AT_HWCAP's 'V' bit, no XTheadVector (the
 * machine is RVV 1.0 only), and vlenb read from its CSR; and _BITUL (linux/const.h). */
#ifndef EMUKERN_V_HELPERS_H
#define EMUKERN_V_HELPERS_H
#include <stdbool.h>
#include <linux/const.h>       /* _BITUL, which validate_v_ptrace uses without including it */

/* getauxval without <sys/auxv.h>: that pulls in glibc's <elf.h>, whose types clash with the
 * <linux/elf.h> the tests include for NT_RISCV_VECTOR */
extern unsigned long getauxval(unsigned long type);
#define EMUKERN_AT_HWCAP 16

static inline bool is_vector_supported(void)
{
	return getauxval(EMUKERN_AT_HWCAP) & (1ul << ('V' - 'A'));
}

static inline bool is_xtheadvector_supported(void)
{
	return false;
}

static inline unsigned long get_vr_len(void)
{
	unsigned long vlenb;
	asm volatile(".option push\n.option arch, +v\ncsrr %0, vlenb\n.option pop" : "=r"(vlenb));
	return vlenb;
}
#endif
