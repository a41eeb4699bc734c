/* A tiny JIT: write "mov w0, #42; ret" into an anonymous RWX page, make it visible to
 * instruction fetch with __builtin___clear_cache (on arm64: mrs ctr_el0, dc cvau, dsb, ic ivau,
 * dsb, isb at EL0), call it, then patch the immediate and call it again. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

typedef int (*fn_t)(void);

int main(void)
{
    uint32_t *code = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return 2;
    code[0] = 0x52800540;            /* mov w0, #42 */
    code[1] = 0xd65f03c0;            /* ret */
    __builtin___clear_cache((char *)code, (char *)(code + 2));
    int a = ((fn_t)code)();
    code[0] = 0x52800000 | (7 << 5); /* mov w0, #7 */
    __builtin___clear_cache((char *)code, (char *)(code + 2));
    int b = ((fn_t)code)();
    printf("jit %d %d\n", a, b);
    return a == 42 && b == 7 ? 0 : 1;
}
