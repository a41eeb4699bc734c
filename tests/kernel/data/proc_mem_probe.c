/* /proc/version and /proc/self/mem (fs/proc/version.c, fs/proc/base.c mem_rw): what the
#include <signal.h>
 * cachestat and mkdirty selftests rely on, one line per check. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	char buf[256];
	int fd = open("/proc/version", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	printf("version: %s\n", n > 14 && !memcmp(buf, "Linux version ", 14) && buf[n - 1] == '\n' ? "ok" : "bad");
	close(fd);

	int mem = open("/proc/self/mem", O_RDWR);
	printf("open mem: %s\n", mem >= 0 ? "ok" : strerror(errno));
	long pg = sysconf(_SC_PAGESIZE);
	/* a write into a read-only private page (FOLL_FORCE): the process sees it, its own
	 * store still faults */
	char *ro = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char one = 1;
	n = pwrite(mem, &one, 1, (off_t)(unsigned long)ro);
	printf("force write ro private: %zd value %d\n", n, ro[0]);
	/* a PROT_NONE page reads through mem */
	char *none = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	strcpy(none + pg - 3, "abcdef");
	mprotect(none, 2 * pg, PROT_NONE);
	n = pread(mem, buf, 6, (off_t)(unsigned long)(none + pg - 3));
	buf[n > 0 ? n : 0] = 0;
	printf("read prot_none across pages: %zd %s\n", n, buf);
	/* a read-only shared mapping is not written */
	char *sh = mmap(NULL, pg, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	n = pwrite(mem, &one, 1, (off_t)(unsigned long)sh);
	printf("force write ro shared: %zd %s\n", n, n < 0 ? strerror(errno) : "");
	/* a read that runs into a hole is short; one that starts in a hole is EIO */
	munmap(none + pg, pg);
	n = pread(mem, buf, 16, (off_t)(unsigned long)(none + pg - 4));
	printf("short read: %zd\n", n);
	n = pread(mem, buf, 16, (off_t)(unsigned long)(none + pg));
	printf("hole read: %zd %s\n", n, n < 0 ? strerror(errno) : "");
	/* lseek + write, as mkdirty does */
	lseek(mem, (off_t)(unsigned long)(ro + 1), SEEK_SET);
	n = write(mem, "Z", 1);
	printf("lseek write: %zd %c pos %ld\n", n, ro[1], (long)lseek(mem, 0, SEEK_CUR) - (long)(unsigned long)ro);
	/* another process's memory through /proc/PID/mem */
	static volatile char secret[8] = "child";
	int p[2];
	pipe(p);
	pid_t pid = fork();
	if (pid == 0) {
		secret[0] = 'C';
		write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	read(p[0], buf, 1);
	snprintf(buf, sizeof(buf), "/proc/%d/mem", pid);
	int cm = open(buf, O_RDONLY);
	n = pread(cm, buf, 5, (off_t)(unsigned long)secret);
	buf[n > 0 ? n : 0] = 0;
	printf("child mem: %zd %s parent %s\n", n, buf, (char *)secret);
	kill(pid, 9);
	waitpid(pid, NULL, 0);
	return 0;
}
