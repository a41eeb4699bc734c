/* capget as a root process sees it: every capability of Linux 6.12 effective and permitted,
 * none inheritable; a probe with an unknown version learns v3; a missing pid is ESRCH. */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	long r = syscall(SYS_capget, &h, d);

	printf("v3 r=%ld eff=%x/%x perm=%x/%x inh=%x/%x\n", r, d[0].effective, d[1].effective,
	       d[0].permitted, d[1].permitted, d[0].inheritable, d[1].inheritable);
	h.version = 1;
	r = syscall(SYS_capget, &h, NULL);
	printf("probe r=%ld version=%x\n", r, h.version);
	h.version = 1;
	r = syscall(SYS_capget, &h, d);
	printf("bad version r=%ld errno=%d version=%x\n", r, r ? errno : 0, h.version);
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = 99999;
	r = syscall(SYS_capget, &h, d);
	printf("no such pid r=%ld errno=%d\n", r, r ? errno : 0);
	h.pid = getpid();
	h.version = _LINUX_CAPABILITY_VERSION_1;
	r = syscall(SYS_capget, &h, d);
	printf("v1 self r=%ld eff=%x\n", r, d[0].effective);
	return 0;
}
