/* hwcap_mrs (arm64): the HWCAPs the kernel gave this process next to the ID-register fields the
 * same process reads with MRS (emulated by the kernel, as HWCAP_CPUID promises).  Prints one
 * line per checked feature: name, the hwcap bit, the field value; and "agree" or "DISAGREE". */
#include <stdio.h>
#include <sys/auxv.h>

#define MRS(reg) ({ unsigned long v_; __asm__ volatile("mrs %0, " #reg : "=r"(v_)); v_; })

static int bad;

static void check(const char *name, unsigned long caps, int bit, unsigned long reg, int shift,
                  int min, int is_signed) {
    long field = (reg >> shift) & 0xf;
    if (is_signed && field >= 8) field -= 16;
    int has = (caps >> bit) & 1, want = field >= min;
    printf("%-8s hwcap=%d field=%ld %s\n", name, has, field, has == want ? "agree" : "DISAGREE");
    bad |= has != want;
}

int main(void) {
    unsigned long h = getauxval(AT_HWCAP), h2 = getauxval(AT_HWCAP2);
    unsigned long isar0 = MRS(ID_AA64ISAR0_EL1), isar1 = MRS(ID_AA64ISAR1_EL1);
    unsigned long pfr0 = MRS(ID_AA64PFR0_EL1), pfr1 = MRS(ID_AA64PFR1_EL1);
    unsigned long zfr0 = MRS(S3_0_C0_C4_4);     /* ID_AA64ZFR0_EL1 */
    unsigned long midr = MRS(MIDR_EL1);
    printf("cpuid    hwcap=%lu\n", (h >> 11) & 1);
    printf("midr     implementer=0x%lx\n", (midr >> 24) & 0xff);
    check("fp", h, 0, pfr0, 16, 0, 1);
    check("asimd", h, 1, pfr0, 20, 0, 1);
    check("fphp", h, 9, pfr0, 16, 1, 1);
    check("asimdhp", h, 10, pfr0, 20, 1, 1);
    check("aes", h, 3, isar0, 4, 1, 0);
    check("pmull", h, 4, isar0, 4, 2, 0);
    check("sha1", h, 5, isar0, 8, 1, 0);
    check("sha2", h, 6, isar0, 12, 1, 0);
    check("sha512", h, 21, isar0, 12, 2, 0);
    check("crc32", h, 7, isar0, 16, 1, 0);
    check("atomics", h, 8, isar0, 20, 2, 0);
    check("asimdrdm", h, 12, isar0, 28, 1, 0);
    check("sha3", h, 17, isar0, 32, 1, 0);
    check("sm3", h, 18, isar0, 36, 1, 0);
    check("sm4", h, 19, isar0, 40, 1, 0);
    check("asimddp", h, 20, isar0, 44, 1, 0);
    check("asimdfhm", h, 23, isar0, 48, 1, 0);
    check("flagm", h, 27, isar0, 52, 1, 0);
    check("dcpop", h, 16, isar1, 0, 1, 0);
    check("jscvt", h, 13, isar1, 12, 1, 0);
    check("fcma", h, 14, isar1, 16, 1, 0);
    check("lrcpc", h, 15, isar1, 20, 1, 0);
    check("ilrcpc", h, 26, isar1, 20, 2, 0);
    check("sb", h, 29, isar1, 36, 1, 0);
    check("sve", h, 22, pfr0, 32, 1, 0);
    check("dit", h, 24, pfr0, 48, 1, 0);
    check("sve2", h2, 1, zfr0, 0, 1, 0);
    check("bti", h2, 17, pfr1, 0, 1, 0);
    check("rng", h2, 16, isar0, 60, 1, 0);
    check("frint", h2, 8, isar1, 32, 1, 0);
    check("flagm2", h2, 7, isar0, 52, 2, 0);
    check("dcpodp", h2, 0, isar1, 0, 2, 0);
    printf("%s\n", bad ? "SOME DISAGREE" : "all agree");
    return bad;
}
