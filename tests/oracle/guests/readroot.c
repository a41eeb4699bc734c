/* Reads each path named on its command line and prints what it found: the file's bytes, or the
 * errno the kernel gave.  `emukern compare --root DIR` runs it against the same tree in emukern
 * (its guest root) and in the real kernel (the initramfs), so both must print the same. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			printf("%s: %s\n", argv[i], strerror(errno));
			continue;
		}
		printf("%s: mode %o size %lld\n", argv[i], (unsigned)(st.st_mode & 07777), (long long)st.st_size);
		int fd = open(argv[i], O_RDONLY);
		if (fd < 0) {
			printf("%s: open: %s\n", argv[i], strerror(errno));
			continue;
		}
		char buf[256];
		ssize_t n = read(fd, buf, sizeof buf);
		close(fd);
		if (n < 0)
			printf("%s: read: %s\n", argv[i], strerror(errno));
		else
			printf("%s: %.*s", argv[i], (int)n, buf);
	}
	return 0;
}
