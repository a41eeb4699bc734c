/* sve_probe_vls (arm64): enumerate the supported SVE vector lengths the way the kernel's
 * sve-probe-vls selftest does: PR_SVE_SET_VL for every VQ from the largest down, collecting the
 * lengths the kernel actually grants (it rounds down to a supported one). */
#include <stdio.h>
#include <sys/prctl.h>

int main(void) {
    int last = -1;
    for (int vq = 512; vq >= 1; vq--) {
        int vl = prctl(PR_SVE_SET_VL, vq * 16);
        if (vl < 0) { printf("PR_SVE_SET_VL failed at vq %d\n", vq); return 1; }
        vl &= 0xffff;
        if (vl != last) printf("vl %d\n", vl);
        if (vl / 16 > vq) break;        /* rounded up: nothing smaller is supported */
        last = vl;
        vq = vl / 16;
    }
    return 0;
}
