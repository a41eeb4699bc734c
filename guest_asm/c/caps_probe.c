/* Capabilities as Linux keeps them (kernel/capability.c, security/commoncap.c): capget/capset
 * and their EPERM rules, the bounding and ambient sets, the securebits, the set*id fix-ups and
 * the execve transitions (root, a set-user-ID-root and a set-group-ID-root program, ambient,
 * no_new_privs, AT_SECURE).  Run as root with /caps_probe, /caps_probe_suid (mode 04755) and
 * /caps_probe_sgid (02755) in the root: every section runs in its own child so one section's
 * changes never leak into the next; "show" is the mode the exec'd copies run in.
 * The output holds no pids, times or addresses: it must read the same under the real kernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>
#include <signal.h>

#define CAP_FULL ((1ULL << 41) - 1)
#define BIT(c) (1ULL << (c))

static int capget3(uint64_t *e, uint64_t *p, uint64_t *i)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	int r = syscall(SYS_capget, &h, d);
	*e = d[0].effective | (uint64_t)d[1].effective << 32;
	*p = d[0].permitted | (uint64_t)d[1].permitted << 32;
	*i = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return r;
}

static int capset3(uint64_t e, uint64_t p, uint64_t i)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)e, (uint32_t)p, (uint32_t)i },
		{ (uint32_t)(e >> 32), (uint32_t)(p >> 32), (uint32_t)(i >> 32) } };
	return syscall(SYS_capset, &h, d);
}

static void caps(const char *what)
{
	uint64_t e, p, i;
	capget3(&e, &p, &i);
	printf("  %s: e=%llx p=%llx i=%llx a=%d\n", what, (unsigned long long)e,
	       (unsigned long long)p, (unsigned long long)i,
	       prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0));
}

static void res(const char *what, long r)
{
	if (r < 0)
		printf("  %s -> %ld errno=%d\n", what, r, errno);
	else
		printf("  %s -> %ld\n", what, r);
	errno = 0;
}

static void status(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Cap", 3) || !strncmp(line, "NoNewPrivs", 10))
			printf("  status %s", line);
	fclose(f);
}

static void section(const char *name, void (*fn)(void))
{
	int st;
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		printf("[%s]\n", name);
		fn();
		fflush(stdout);
		_exit(0);
	}
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		printf("  (section %s ended with status %#x)\n", name, st);
}

static void initial(void)
{
	char buf[32] = "";
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	caps("root");
	if (f) {
		fgets(buf, sizeof(buf), f);
		fclose(f);
	}
	printf("  cap_last_cap %s", buf);
	res("CAPBSET_READ 40", prctl(PR_CAPBSET_READ, 40, 0, 0, 0));
	res("CAPBSET_READ 41", prctl(PR_CAPBSET_READ, 41, 0, 0, 0));
	res("GET_SECUREBITS", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
	res("GET_KEEPCAPS", prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0));
	res("GET_NO_NEW_PRIVS", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	status();
}

static void capset_rules(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_1, 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	res("capget v1", syscall(SYS_capget, &h, d));
	printf("  v1 e=%x p=%x second word untouched=%d\n", d[0].effective, d[0].permitted, d[1].effective == 0);
	h.version = 0x12345;
	res("capset bad version", syscall(SYS_capset, &h, d));
	printf("  header now %#x\n", h.version);
	h.version = _LINUX_CAPABILITY_VERSION_3;
	h.pid = getpid() + 1000;
	d[0].effective = d[0].permitted = 0xffffffff;
	d[1].effective = d[1].permitted = 0x1ff;
	res("capset another pid", syscall(SYS_capset, &h, d));
	h.pid = getpid();
	res("capset own pid", syscall(SYS_capset, &h, d));
	res("drop NET_RAW from e", capset3(CAP_FULL & ~BIT(CAP_NET_RAW), CAP_FULL, 0));
	caps("now");
	res("raise it back into e", capset3(CAP_FULL, CAP_FULL, 0));
	res("e not a subset of p", capset3(CAP_FULL, CAP_FULL & ~BIT(CAP_NET_RAW), 0));
	res("drop NET_RAW from p", capset3(CAP_FULL & ~BIT(CAP_NET_RAW), CAP_FULL & ~BIT(CAP_NET_RAW), 0));
	res("add it back to p", capset3(CAP_FULL & ~BIT(CAP_NET_RAW), CAP_FULL, 0));
	res("i gains NET_RAW (CAP_SETPCAP)", capset3(CAP_FULL & ~BIT(CAP_NET_RAW), CAP_FULL & ~BIT(CAP_NET_RAW), BIT(CAP_NET_RAW)));
	uint64_t p = CAP_FULL & ~BIT(CAP_NET_RAW) & ~BIT(CAP_SYS_TIME);
	res("drop SETPCAP and SYS_TIME", capset3(p & ~BIT(CAP_SETPCAP), p, BIT(CAP_NET_RAW)));
	res("i gains SYS_TIME without SETPCAP", capset3(p & ~BIT(CAP_SETPCAP), p, BIT(CAP_NET_RAW) | BIT(CAP_SYS_TIME)));
	res("i gains CHOWN (permitted)", capset3(p & ~BIT(CAP_SETPCAP), p, BIT(CAP_NET_RAW) | BIT(CAP_CHOWN)));
	caps("now");
	status();
}

static void bounding(void)
{
	res("CAPBSET_DROP SYS_BOOT", prctl(PR_CAPBSET_DROP, CAP_SYS_BOOT, 0, 0, 0));
	res("CAPBSET_READ SYS_BOOT", prctl(PR_CAPBSET_READ, CAP_SYS_BOOT, 0, 0, 0));
	res("CAPBSET_DROP 41", prctl(PR_CAPBSET_DROP, 41, 0, 0, 0));
	res("i gains SYS_BOOT outside the bounding set", capset3(CAP_FULL, CAP_FULL, BIT(CAP_SYS_BOOT)));
	res("drop SETPCAP from e", capset3(CAP_FULL & ~BIT(CAP_SETPCAP), CAP_FULL, 0));
	res("CAPBSET_DROP without SETPCAP", prctl(PR_CAPBSET_DROP, CAP_SYS_TIME, 0, 0, 0));
	status();
}

static void ambient(void)
{
	res("RAISE, not inheritable", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0));
	res("i += NET_BIND_SERVICE", capset3(CAP_FULL, CAP_FULL, BIT(CAP_NET_BIND_SERVICE)));
	res("RAISE", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0));
	res("IS_SET", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0));
	status();
	res("LOWER", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_NET_BIND_SERVICE, 0, 0));
	res("IS_SET", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0));
	res("RAISE", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0));
	res("CLEAR_ALL", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
	res("IS_SET", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0));
	res("CLEAR_ALL arg3=1", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 1, 0, 0));
	res("RAISE arg4=1", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 1, 0));
	res("op 9", prctl(PR_CAP_AMBIENT, 9, CAP_NET_BIND_SERVICE, 0, 0));
	res("IS_SET 41", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 41, 0, 0));
	res("RAISE", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0));
	res("i -= NET_BIND_SERVICE", capset3(CAP_FULL, CAP_FULL, 0));
	res("IS_SET after i dropped", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_BIND_SERVICE, 0, 0));
}

static void securebits(void)
{
	res("SET_SECUREBITS 0x100", prctl(PR_SET_SECUREBITS, 0x100, 0, 0, 0));
	res("SET_SECUREBITS KEEP_CAPS", prctl(PR_SET_SECUREBITS, 0x10, 0, 0, 0));
	res("GET_SECUREBITS", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
	res("GET_KEEPCAPS", prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0));
	res("SET_KEEPCAPS 2", prctl(PR_SET_KEEPCAPS, 2, 0, 0, 0));
	res("SET_KEEPCAPS 0", prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0));
	res("GET_SECUREBITS", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
	res("lock NO_CAP_AMBIENT_RAISE", prctl(PR_SET_SECUREBITS, 0xc0 | 0x30, 0, 0, 0));
	res("i += NET_BIND_SERVICE", capset3(CAP_FULL, CAP_FULL, BIT(CAP_NET_BIND_SERVICE)));
	res("ambient RAISE", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0));
	res("unlock", prctl(PR_SET_SECUREBITS, 0x10, 0, 0, 0));
	res("SET_KEEPCAPS 0 when locked", prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0));
	res("GET_SECUREBITS", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
	res("drop SETPCAP from e", capset3(CAP_FULL & ~BIT(CAP_SETPCAP), CAP_FULL, BIT(CAP_NET_BIND_SERVICE)));
	res("SET_SECUREBITS without SETPCAP", prctl(PR_SET_SECUREBITS, 0xf1, 0, 0, 0));
}

static void creds_committed(void)
{
	int sig = -1;
	prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0);
	printf("  dumpable=%d pdeath_signal=%d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), sig);
}

static void setuid_plain(void)
{
	res("PR_SET_PDEATHSIG SIGUSR1", prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0));
	res("capset e = p (no change of ids)", capset3(CAP_FULL, CAP_FULL, 0));
	creds_committed();
	res("setuid(1000)", setuid(1000));
	caps("after");
	creds_committed();
	res("setuid(0)", setuid(0));
	res("setgroups", setgroups(0, NULL));
	status();
}

static void setuid_keepcaps(void)
{
	res("SET_KEEPCAPS 1", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
	res("setresuid(1000,1000,1000)", setresuid(1000, 1000, 1000));
	caps("after");
	res("capset e = p", capset3(CAP_FULL, CAP_FULL, 0));
	caps("after");
	res("setresuid(0,0,0) with CAP_SETUID", setresuid(0, 0, 0));
	caps("after");
}

static void seteuid_fsuid(void)
{
	res("seteuid(1000)", seteuid(1000));
	caps("after");
	res("setgroups without CAP_SETGID", setgroups(0, NULL));
	res("seteuid(0)", seteuid(0));
	caps("after");
	printf("  setfsuid(1000) -> %d\n", setfsuid(1000));
	caps("after");
	printf("  setfsuid(0) -> %d\n", setfsuid(0));
	caps("after");
	res("drop CHOWN from p", capset3(CAP_FULL & ~BIT(CAP_CHOWN), CAP_FULL & ~BIT(CAP_CHOWN), 0));
	printf("  setfsuid(1000) -> %d\n", setfsuid(1000));
	printf("  setfsuid(0) -> %d\n", setfsuid(0));
	caps("after");
}

static void no_fixup(void)
{
	res("SET_SECUREBITS NO_SETUID_FIXUP", prctl(PR_SET_SECUREBITS, 0x04, 0, 0, 0));
	res("setuid(1000)", setuid(1000));
	caps("after");
}

static void run(const char *prog, const char *label)
{
	char *argv[] = { (char *)prog, "show", (char *)label, NULL };
	fflush(stdout);
	execv(prog, argv);
	printf("  execv %s failed: errno=%d\n", prog, errno);
}

static int child_exec(const char *label, void (*setup)(void), const char *prog)
{
	int st;
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		setup();
		run(prog, label);
		_exit(1);
	}
	waitpid(c, &st, 0);
	return st;
}

static void nothing(void) {}

static void root_ia(void)
{
	capset3(CAP_FULL, CAP_FULL, BIT(CAP_NET_BIND_SERVICE));
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0);
}

static void root_bset(void)
{
	prctl(PR_CAPBSET_DROP, CAP_SYS_BOOT, 0, 0, 0);
	capset3(CAP_FULL & ~BIT(CAP_SYS_TIME), CAP_FULL & ~BIT(CAP_SYS_TIME), 0);
}

static void become_1000(int ambient)
{
	prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
	setresuid(1000, 1000, 1000);
	capset3(CAP_FULL, CAP_FULL, BIT(CAP_NET_BIND_SERVICE));
	if (ambient)
		prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0, 0);
}

static void nonroot_ia(void) { become_1000(1); }
static void nonroot_i(void) { become_1000(0); }

static void nonroot_nnp(void)
{
	become_1000(1);
	res("  NO_NEW_PRIVS 2", prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0));
	res("  NO_NEW_PRIVS 1", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
}

static void gid1_ia(void)
{
	root_ia();
	setresgid(1, 1, 1);
}

static void execs(void)
{
	child_exec("root", nothing, "/caps_probe");
	child_exec("root +ia", root_ia, "/caps_probe");
	child_exec("root, bounding -SYS_BOOT, p -SYS_TIME", root_bset, "/caps_probe");
	child_exec("uid 1000 +i", nonroot_i, "/caps_probe");
	child_exec("uid 1000 +ia", nonroot_ia, "/caps_probe");
	child_exec("uid 1000 +ia, suid-root", nonroot_ia, "/caps_probe_suid");
	child_exec("uid 1000 +ia, no_new_privs, suid-root", nonroot_nnp, "/caps_probe_suid");
	child_exec("root +ia, suid-root", root_ia, "/caps_probe_suid");
	child_exec("root gid 1 +ia, sgid-root", gid1_ia, "/caps_probe_sgid");
}

static int show(const char *label)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	printf("  exec %s: uid=%d/%d/%d gid=%d/%d/%d AT_SECURE=%lu dumpable=%d nnp=%d\n", label,
	       r, e, s, gr, ge, gs, getauxval(AT_SECURE), prctl(PR_GET_DUMPABLE, 0, 0, 0, 0),
	       prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	caps("   caps");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc > 2 && !strcmp(argv[1], "show"))
		return show(argv[2]);
	section("initial", initial);
	section("capset", capset_rules);
	section("bounding", bounding);
	section("ambient", ambient);
	section("securebits", securebits);
	section("setuid", setuid_plain);
	section("keepcaps", setuid_keepcaps);
	section("seteuid/setfsuid", seteuid_fsuid);
	section("no_setuid_fixup", no_fixup);
	section("exec", execs);
	return 0;
}
