/* SVE2 integer instructions as a C program reaches them: ACLE intrinsics (arm_sve.h) for the
 * indexed multiplies, saturating multiply-accumulates, narrowing shifts/extracts, complex
 * integer arithmetic, carry-chained adds and predicated shifts, plus loops GCC auto-vectorizes
 * for -march=armv9-a.  Prints one hash line per group and the vector length; the test compares
 * the output with qemu-aarch64 -cpu max at the same VL.  Built -O2 -march=armv9-a. */
#include <arm_sve.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 1024
#define PAD 256      /* whole-vector loads past N stay inside the arrays */

static int8_t b8[N + PAD], c8[N + PAD];
static int16_t a16[N + PAD], b16[N + PAD], c16[N + PAD];
static int32_t a32[N + PAD], b32[N + PAD], c32[N + PAD];
static int64_t a64[N + PAD], b64[N + PAD];
static uint32_t u32[N + PAD];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t hash;
static void mix(const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		hash = (hash ^ c[i]) * 0x100000001b3ull;
}

#define LOOP16(...) for (int i = 0; i < N; i += svcnth()) { svbool_t pg = svwhilelt_b16(i, N); __VA_ARGS__; }
#define LOOP32(...) for (int i = 0; i < N; i += svcntw()) { svbool_t pg = svwhilelt_b32(i, N); __VA_ARGS__; }
#define LOOP64(...) for (int i = 0; i < N; i += svcntd()) { svbool_t pg = svwhilelt_b64(i, N); __VA_ARGS__; }

static void report(const char *what, const void *p, size_t n)
{
	hash = 0xcbf29ce484222325ull;
	mix(p, n);
	printf("%s %016llx\n", what, (unsigned long long)hash);
}

/* plain C loops the compiler turns into SVE2 (narrowing shifts, high-half adds, abs-diff
 * accumulates, saturating narrows) */
__attribute__((noinline)) static void autovec(int16_t *out, const int32_t *x, const int32_t *y)
{
	for (int i = 0; i < N; i++) {
		int32_t s = (x[i] + y[i] + (1 << 15)) >> 16;
		out[i] = (int16_t)(s > 32767 ? 32767 : s < -32768 ? -32768 : s);
	}
}

__attribute__((noinline)) static int32_t sad(const int16_t *x, const int16_t *y)
{
	int32_t acc = 0;
	for (int i = 0; i < N; i++)
		acc += x[i] > y[i] ? x[i] - y[i] : y[i] - x[i];
	return acc;
}

int main(void)
{
	for (int i = 0; i < N; i++) {
		uint64_t r = next();
		b8[i] = (int8_t)r; c8[i] = (int8_t)(r >> 8);
		a16[i] = (int16_t)(r >> 16); b16[i] = (int16_t)(r >> 32); c16[i] = (int16_t)(r >> 48);
		r = next();
		a32[i] = (int32_t)r; b32[i] = (int32_t)(r >> 32); u32[i] = (uint32_t)(r >> 7);
		a64[i] = (int64_t)next(); b64[i] = (int64_t)next();
		if (i % 17 == 0) { a16[i] = INT16_MIN; b16[i] = INT16_MIN; a32[i] = INT32_MIN; }
	}
	printf("vl %d\n", (int)svcntb() * 8);

	/* indexed multiplies and saturating multiply-accumulates */
	LOOP16(svint16_t a = svld1(pg, a16 + i), b = svld1(pg, b16 + i), c = svld1(pg, c16 + i);
	       svint16_t r = svmul_lane(a, b, 3);
	       r = svqrdmlah_lane(r, a, c, 5);
	       r = svqrdmlsh(r, b, c);
	       r = svqdmulh_lane(r, c, 7);
	       r = svqrdmulh_lane(r, a, 1);
	       r = svmla_lane(r, a, b, 2);
	       r = svmls_lane(r, b, c, 6);
	       svst1(pg, c16 + i, r));
	report("mul16", c16, N * sizeof c16[0]);
	LOOP32(svint16_t a = svld1(svptrue_b16(), a16 + (2 * i) % N), b = svld1(svptrue_b16(), b16 + (2 * i) % N);
	       svint32_t acc = svld1(pg, a32 + i);
	       acc = svqdmlalb_lane(acc, a, b, 4);
	       acc = svqdmlslt(acc, a, b);
	       acc = svqdmlalbt(acc, b, a);
	       acc = svmlalb_lane(acc, a, b, 7);
	       acc = svmlslt_lane(acc, b, a, 0);
	       acc = svadd_x(pg, acc, svmullb_lane(a, b, 2));
	       acc = svadd_x(pg, acc, svqdmullt_lane(a, b, 5));
	       acc = svabalb(acc, a, b);
	       acc = svaba(acc, acc, svld1(pg, b32 + i));
	       svst1(pg, c32 + i, acc));
	report("mac32", c32, N * sizeof c32[0]);

	/* narrowing shifts, extracts and high-half add/sub */
	LOOP32(svint32_t a = svld1(pg, a32 + i), b = svld1(pg, b32 + i);
	       svint16_t lo = svqrshrnb(a, 7);
	       lo = svqshrnt(lo, b, 13);
	       svint16_t h2 = svaddhnb(a, b);
	       h2 = svrsubhnt(h2, a, b);
	       svuint16_t u = svqxtunb(a);
	       u = svqrshrunt(u, b, 3);
	       svint16_t x = svqxtnb(b);
	       x = svshrnt(x, a, 16);
	       svst1(svptrue_b16(), c16 + (2 * i) % N, svadd_x(svptrue_b16(), svadd_x(svptrue_b16(), lo, h2),
	                                                  svadd_x(svptrue_b16(), svreinterpret_s16(u), x))));
	report("narrow", c16, N * sizeof c16[0]);
	LOOP32(svint32_t w = svshllb(svld1(svptrue_b16(), a16 + (2 * i) % N), 5);
	       w = svadd_x(pg, w, svshllt(svld1(svptrue_b16(), b16 + (2 * i) % N), 11));
	       svst1(pg, c32 + i, w));
	report("shll", c32, N * sizeof c32[0]);

	/* complex integer arithmetic */
	LOOP16(svint16_t a = svld1(pg, a16 + i), b = svld1(pg, b16 + i), c = svld1(pg, c16 + i);
	       svint16_t r = svcadd(a, b, 90);
	       r = svqcadd(r, c, 270);
	       r = svcmla(r, a, b, 180);
	       r = svcmla_lane(r, b, c, 1, 90);
	       r = svqrdcmlah(r, a, c, 270);
	       r = svqrdcmlah_lane(r, c, a, 3, 0);
	       svst1(pg, c16 + i, r));
	report("complex", c16, N * sizeof c16[0]);
	LOOP32(svint32_t acc = svld1(pg, a32 + i);
	       svint8_t x = svld1(svptrue_b8(), b8 + (4 * i) % N), y = svld1(svptrue_b8(), c8 + (4 * i) % N);
	       acc = svcdot(acc, x, y, 90);
	       acc = svcdot_lane(acc, y, x, 2, 180);
	       svst1(pg, c32 + i, acc));
	report("cdot", c32, N * sizeof c32[0]);

	/* carry chains, interleaved long, predicated shifts, estimates */
	LOOP32(svuint32_t a = svreinterpret_u32(svld1(pg, a32 + i)), b = svreinterpret_u32(svld1(pg, b32 + i));
	       svuint32_t acc = svadclb(a, b, svld1(pg, u32 + i));
	       acc = svadclt(acc, b, a);
	       acc = svsbclb(acc, a, b);
	       acc = svsbclt(acc, a, acc);
	       svint32_t s = svrshl_m(pg, svreinterpret_s32(acc), svasr_x(pg, svld1(pg, b32 + i), 27));
	       s = svqrshl_m(pg, s, svasr_x(pg, svld1(pg, a32 + i), 28));
	       s = svqshl_n_s32_m(pg, s, 3);
	       s = svrshr_n_s32_m(pg, s, 9);
	       svuint32_t e = svrecpe_u32_m(svreinterpret_u32(s), pg, a);
	       e = svadd_x(pg, e, svrsqrte_u32_x(pg, b));
	       svst1(pg, u32 + i, e));
	report("carry", u32, N * sizeof u32[0]);
	LOOP64(svint32_t a = svld1(svptrue_b32(), a32 + (2 * i) % N), b = svld1(svptrue_b32(), b32 + (2 * i) % N);
	       svint64_t r = svaddlbt(a, b);
	       r = svadd_x(pg, r, svsublbt(a, b));
	       r = svadd_x(pg, r, svsubltb(b, a));
	       r = svqrdmlah(r, svld1(pg, a64 + i), svld1(pg, b64 + i));
	       svst1(pg, b64 + i, r));
	report("long64", b64, N * sizeof b64[0]);

	autovec(c16, a32, b32);
	report("autovec", c16, N * sizeof c16[0]);
	printf("sad %d\n", sad(a16, b16));
	return 0;
}
