/* FEAT_LSE atomics at every size, each result printed, then misaligned ones caught as SIGBUS
 * (a CPU without FEAT_LSE2: alignment fault -> BUS_ADRALN with si_addr the address). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint8_t buf[64] __attribute__((aligned(16)));
static sigjmp_buf env;
static volatile int code;
static void *volatile where;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	code = si->si_code;
	where = si->si_addr;
	siglongjmp(env, 1);
}

#define LDOP(name, sfx, reg, T)                                                          \
	static void t_##name##sfx(T init, T operand)                                       \
	{                                                                                  \
		T *p = (T *)buf;                                                           \
		T old;                                                                     \
		*p = init;                                                                 \
		asm volatile(#name #sfx " %" reg "[o], %" reg "[r], [%[p]]"              \
			     : [r] "=&r"(old) : [o] "r"(operand), [p] "r"(p) : "memory"); \
		printf("%-8s %#llx %#llx -> old %#llx new %#llx\n", #name #sfx,            \
		       (unsigned long long)init, (unsigned long long)operand,              \
		       (unsigned long long)old, (unsigned long long)*p);                   \
	}

#define ALLOPS(sfx, reg, T)                                                              \
	LDOP(ldadd, sfx, reg, T) LDOP(ldclr, sfx, reg, T) LDOP(ldeor, sfx, reg, T)          \
	LDOP(ldset, sfx, reg, T) LDOP(ldsmax, sfx, reg, T) LDOP(ldsmin, sfx, reg, T)        \
	LDOP(ldumax, sfx, reg, T) LDOP(ldumin, sfx, reg, T) LDOP(swp, sfx, reg, T)

ALLOPS(b, "w", uint8_t)
ALLOPS(h, "w", uint16_t)
ALLOPS(, "w", uint32_t)
ALLOPS(al, "x", uint64_t)

#define RUN(sfx, a, b)                                                                  \
	t_ldadd##sfx(a, b); t_ldclr##sfx(a, b); t_ldeor##sfx(a, b); t_ldset##sfx(a, b);      \
	t_ldsmax##sfx(a, b); t_ldsmin##sfx(a, b); t_ldumax##sfx(a, b); t_ldumin##sfx(a, b);  \
	t_swp##sfx(a, b)

static void cas_tests(void)
{
	uint64_t *p = (uint64_t *)buf, cmp, pair_lo, pair_hi;
	uint32_t *w = (uint32_t *)buf, wc;

	*p = 5; cmp = 5;
	asm volatile("casal %[c], %[n], [%[p]]" : [c] "+r"(cmp) : [n] "r"(9ull), [p] "r"(p) : "memory");
	printf("casal hit: rs %llu mem %llu\n", (unsigned long long)cmp, (unsigned long long)*p);
	cmp = 5;
	asm volatile("cas %[c], %[n], [%[p]]" : [c] "+r"(cmp) : [n] "r"(7ull), [p] "r"(p) : "memory");
	printf("cas miss: rs %llu mem %llu\n", (unsigned long long)cmp, (unsigned long long)*p);
	*w = 0xfffffff0u; wc = 0xfffffff0u;
	asm volatile("casb %w[c], %w[n], [%[p]]" : [c] "+r"(wc) : [n] "r"(0x11u), [p] "r"(w) : "memory");
	printf("casb: rs %#x mem %#x\n", wc, *w);
	p[0] = 1; p[1] = 2;
	{
		register uint64_t x0 asm("x0") = 1, x1 asm("x1") = 2, x2 asm("x2") = 30, x3 asm("x3") = 40;
		asm volatile("caspal x0, x1, x2, x3, [%[p]]" : "+r"(x0), "+r"(x1) : "r"(x2), "r"(x3), [p] "r"(p)
			     : "memory");
		pair_lo = x0; pair_hi = x1;
	}
	printf("caspal hit: rs %llu %llu mem %llu %llu\n", (unsigned long long)pair_lo,
	       (unsigned long long)pair_hi, (unsigned long long)p[0], (unsigned long long)p[1]);
	{
		uint64_t v;
		p[0] = 0x1122334455667788ull;
		asm volatile("ldapr %[v], [%[p]]" : [v] "=r"(v) : [p] "r"(p) : "memory");
		printf("ldapr: %#llx\n", (unsigned long long)v);
	}
}

static void misaligned(const char *what, int off, int kind)
{
	struct sigaction sa;
	uint8_t *p = buf + off;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGBUS, &sa, NULL);
	code = 0;
	where = 0;
	if (sigsetjmp(env, 1) == 0) {
		uint64_t old = 0;
		if (kind == 0)
			asm volatile("ldadd %x[o], %x[r], [%[p]]" : [r] "=&r"(old) : [o] "r"(1ull), [p] "r"(p) : "memory");
		else if (kind == 1)
			asm volatile("stadd %w[o], [%[p]]" : : [o] "r"(1u), [p] "r"(p) : "memory");
		else if (kind == 2)
			asm volatile("cas %x[r], %x[o], [%[p]]" : [r] "+r"(old) : [o] "r"(1ull), [p] "r"(p) : "memory");
		else
			asm volatile("ldaddh %w[o], %w[r], [%[p]]" : [r] "=&r"(old) : [o] "r"(1u), [p] "r"(p) : "memory");
		printf("%s at +%d: no fault\n", what, off);
		return;
	}
	printf("%s at +%d: SIGBUS code %d (BUS_ADRALN %d), si_addr is the address %d\n", what, off, code,
	       BUS_ADRALN, where == (void *)p);
}

int main(void)
{
	RUN(b, 0x80, 0x7f);
	RUN(b, 0x05, 0xfe);
	RUN(h, 0x8000, 0x1234);
	RUN(, 0x80000001u, 0x7ffffffeu);
	RUN(, 3, 0xfffffffdu);
	RUN(al, 0x8000000000000000ull, 0x123456789abcdefull);
	RUN(al, 0xffffffffffffffffull, 2);
	cas_tests();
	misaligned("ldadd x", 4, 0);
	misaligned("stadd w", 2, 1);
	misaligned("cas x", 8 + 1, 2);
	misaligned("ldaddh", 1, 3);
	misaligned("ldaddh", 2, 3);
	return 0;
}
