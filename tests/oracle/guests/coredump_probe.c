/* coredump_probe: a child dies of SIGSEGV with RLIMIT_CORE unlimited in a fresh directory; the
 * parent reports the wait status and walks the ELF core the kernel wrote there: the header, the
 * program headers and every note (name, type, size), and the fields of the first NT_PRSTATUS and
 * of NT_SIGINFO.  Run on a real kernel (initramfs, core_pattern "core") and under emukern with a
 * writable root, the two reports are compared (tests/oracle/test_oracle_coredump.py). */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned char buf[1 << 22];

int main(void) {
    mkdir("/coreprobe", 0755);
    if (chdir("/coreprobe")) { perror("chdir"); return 1; }
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
        setrlimit(RLIMIT_CORE, &rl);
        *(volatile int *)16 = 1;
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("signaled %d sig %d core %d\n", WIFSIGNALED(st), WTERMSIG(st), WCOREDUMP(st) != 0);
    int fd = open("core", O_RDONLY);
    if (fd < 0) { printf("no core file\n"); return 0; }
    struct stat sb;
    fstat(fd, &sb);
    printf("core mode %o\n", sb.st_mode & 0777);
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < (ssize_t)sizeof(Elf64_Ehdr)) { printf("short core %zd\n", n); return 0; }
    Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
    printf("ident %s class %d data %d type %d machine %d version %d ehsize %d phentsize %d shnum %d\n",
           memcmp(eh->e_ident, ELFMAG, SELFMAG) ? "bad" : "ELF", eh->e_ident[EI_CLASS], eh->e_ident[EI_DATA],
           eh->e_type, eh->e_machine, eh->e_version, eh->e_ehsize, eh->e_phentsize, eh->e_shnum);
    Elf64_Phdr *ph = (Elf64_Phdr *)(buf + eh->e_phoff);
    int loads = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD) {
            loads++;
            if (ph[i].p_offset % 4096 || ph[i].p_align != 4096)
                printf("load %d misaligned\n", i);
            continue;
        }
        if (ph[i].p_type != PT_NOTE) { printf("phdr type %u\n", ph[i].p_type); continue; }
        printf("PT_NOTE first %d\n", i == 0);
        unsigned char *p = buf + ph[i].p_offset, *end = p + ph[i].p_filesz;
        int prstatus = 0;
        while (p < end) {
            Elf64_Nhdr *nh = (Elf64_Nhdr *)p;
            const char *name = (const char *)(p + sizeof *nh);
            unsigned char *desc = p + sizeof *nh + ((nh->n_namesz + 3) & ~3u);
            printf("note %s %#x %u\n", name, nh->n_type, nh->n_descsz);
            if (nh->n_type == NT_PRSTATUS && !prstatus++) {
                int *si = (int *)desc;
                short cursig = *(short *)(desc + 12);
                int prpid = *(int *)(desc + 32);
                printf("prstatus signo %d cursig %d pid %s\n", si[0], cursig, prpid == pid ? "child" : "?");
            }
            if (nh->n_type == NT_SIGINFO) {
                int *si = (int *)desc;
                printf("siginfo signo %d errno %d code %d addr %#lx\n", si[0], si[1], si[2],
                       *(unsigned long *)(desc + 16));
            }
            if (nh->n_type == NT_AUXV) {            /* the a_type of every pair, AT_NULL included */
                printf("auxv types");
                for (unsigned k = 0; k + 16 <= nh->n_descsz; k += 16)
                    printf(" %lu", *(unsigned long *)(desc + k));
                printf("\n");
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    printf("loads %s\n", loads >= 4 ? "4+" : "few");
    return 0;
}
