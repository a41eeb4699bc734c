/* landlock_create_ruleset / landlock_add_rule / landlock_restrict_self: emukern is a kernel
 * built without Landlock (ENOSYS for each, whatever the arguments).  Prints errnos only. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#define T(name, expr) do { errno = 0; long _r = (long)(expr); \
    printf("%-26s %ld errno=%d\n", name, _r, _r < 0 ? errno : 0); } while (0)

int main(void) {
    unsigned long long attr[3] = {1, 0, 0};       /* handled_access_fs = EXECUTE */
    T("abi version", syscall(SYS_landlock_create_ruleset, NULL, 0, 1L));
    T("create ruleset", syscall(SYS_landlock_create_ruleset, attr, 8L, 0L));
    T("create bad flags", syscall(SYS_landlock_create_ruleset, NULL, 0, 0x80L));
    T("add rule", syscall(SYS_landlock_add_rule, -1L, 1L, NULL, 0L));
    T("restrict self", syscall(SYS_landlock_restrict_self, -1L, 0L));
    return 0;
}
