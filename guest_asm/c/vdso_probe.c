/* Looks at the vDSO the kernel mapped: finds it through AT_SYSINFO_EHDR, walks its dynamic
 * section to the version-checked symbols (the way glibc and the selftests' parse_vdso do),
 * calls them, compares with glibc's own calls and the raw syscalls, and returns from a signal
 * handler installed without SA_RESTORER (the kernel points it at the vDSO's rt_sigreturn). */
#include <elf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__aarch64__)
#define VERSION "LINUX_2.6.39"
#define SYM(x) "__kernel_" x
#else
#define VERSION "LINUX_4.15"
#define SYM(x) "__vdso_" x
#endif

static const char *strtab;
static const Elf64_Sym *symtab;
static const Elf64_Word *hash;
static const Elf64_Half *versym;
static const Elf64_Verdef *verdef;
static uintptr_t base;

static int parse(uintptr_t ehdr_addr)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)ehdr_addr;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(ehdr_addr + eh->e_phoff);
	const Elf64_Dyn *dyn = 0;
	uintptr_t load = 0;
	int loads = 0;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_type != ET_DYN)
		return -1;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) { load = ehdr_addr + ph[i].p_offset - ph[i].p_vaddr; loads++; }
		if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn *)(ehdr_addr + ph[i].p_offset);
		if (ph[i].p_type == PT_NOTE) {
			const Elf64_Nhdr *n = (const Elf64_Nhdr *)(ehdr_addr + ph[i].p_offset);
			printf("note %s type %u code %#x\n", (const char *)(n + 1), n->n_type,
			       *(const unsigned *)((const char *)(n + 1) + 8));
		}
	}
	base = load;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = base + dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_STRTAB: strtab = (const char *)p; break;
		case DT_SYMTAB: symtab = (const Elf64_Sym *)p; break;
		case DT_HASH: hash = (const Elf64_Word *)p; break;
		case DT_VERSYM: versym = (const Elf64_Half *)p; break;
		case DT_VERDEF: verdef = (const Elf64_Verdef *)p; break;
		case DT_SONAME: break;
		}
	}
	printf("loads %d hash %d versym %d verdef %d\n", loads, !!hash, !!versym, !!verdef);
	return strtab && symtab && hash ? 0 : -1;
}

static void *lookup(const char *name)
{
	Elf64_Word nchain = hash[1];
	for (Elf64_Word i = 1; i < nchain; i++) {
		const Elf64_Sym *s = &symtab[i];
		if (strcmp(strtab + s->st_name, name) || s->st_shndx == SHN_UNDEF)
			continue;
		/* the symbol's version must be VERSION (verdef entry with the versym index) */
		const Elf64_Verdef *d = verdef;
		for (;;) {
			if (d->vd_ndx == (versym[i] & 0x7fff)) {
				const Elf64_Verdaux *a = (const Elf64_Verdaux *)((const char *)d + d->vd_aux);
				if (strcmp(strtab + a->vda_name, VERSION))
					return 0;
				return (void *)(base + s->st_value);
			}
			if (!d->vd_next) return 0;
			d = (const Elf64_Verdef *)((const char *)d + d->vd_next);
		}
	}
	return 0;
}

static volatile int got;
static void on_usr1(int sig) { got = sig; }

/* the [vvar] and [vdso] lines of /proc/self/maps, prefixed with who looked */
static void show_maps(const char *who)
{
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "[vvar]") || strstr(line, "[vdso]"))
			printf("%s %s", who, line);
	if (f) fclose(f);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "maps")) {      /* fork keeps the mappings, exec remakes them */
		show_maps("parent");
		pid_t pid = fork();
		if (pid == 0) {
			show_maps("child");
			execl(argv[2], argv[2], "exec", (char *)0);   /* argv[2]: its own path in the root */
			_exit(127);
		}
		int st;
		waitpid(pid, &st, 0);
		return WEXITSTATUS(st);
	}
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		show_maps("exec'd");
		return getauxval(AT_SYSINFO_EHDR) ? 0 : 3;
	}
	uintptr_t ehdr = getauxval(AT_SYSINFO_EHDR);
	printf("AT_SYSINFO_EHDR %s\n", ehdr ? "present" : "absent");
	if (!ehdr || parse(ehdr))
		return 1;
	int (*gettime)(clockid_t, struct timespec *) = lookup(SYM("clock_gettime"));
	int (*getres)(clockid_t, struct timespec *) = lookup(SYM("clock_getres"));
	int (*gtod)(struct timeval *, void *) = lookup(SYM("gettimeofday"));
	void *sigret = lookup(SYM("rt_sigreturn"));
	printf("symbols %d %d %d %d\n", !!gettime, !!getres, !!gtod, !!sigret);
	struct timespec a, b, c, r;
	struct timeval tv;
	int ra = gettime(CLOCK_MONOTONIC, &a);
	int rb = clock_gettime(CLOCK_MONOTONIC, &b);          /* glibc: through the vDSO */
	int rc = syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &c);
	printf("monotonic rets %d %d %d ordered %d\n", ra, rb, rc,
	       (a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec)) &&
	       (b.tv_sec < c.tv_sec || (b.tv_sec == c.tv_sec && b.tv_nsec <= c.tv_nsec)));
	printf("getres %d %ld.%09ld\n", getres(CLOCK_REALTIME, &r), (long)r.tv_sec, r.tv_nsec);
	printf("gettimeofday %d sec %ld\n", gtod(&tv, 0), (long)tv.tv_sec);
	printf("bad clock %d\n", gettime(12345, &a));
#if defined(__riscv)
	unsigned cpu = 99, node = 99;
	long (*getcpu)(unsigned *, unsigned *, void *) = lookup("__vdso_getcpu");
	struct { long long key; unsigned long long value; } pair = { 0, 0 };  /* MVENDORID */
	long (*hwprobe)(void *, long, long, void *, unsigned) = lookup("__vdso_riscv_hwprobe");
	long (*flush)(void *, void *, unsigned long) = lookup("__vdso_flush_icache");
	printf("getcpu %ld cpu %u node %u\n", getcpu(&cpu, &node, 0), cpu, node);
	printf("hwprobe %ld key %lld\n", hwprobe(&pair, 1, 0, 0, 0), pair.key);
	printf("flush_icache %ld\n", flush(0, 0, 0));
#endif
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	/* the raw syscall, without glibc's SA_RESTORER (arm64 glibc always sets its own) */
	struct { void *h; unsigned long flags; void *restorer; unsigned long mask; } ksa = { (void *)on_usr1, 0, 0, 0 };
	syscall(SYS_rt_sigaction, SIGUSR1, &ksa, 0, 8);
	kill(getpid(), SIGUSR1);
	printf("signal %d returned\n", got);
	return 0;
}
