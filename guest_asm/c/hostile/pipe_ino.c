/* Hostile guest: the inode numbers fstat reports for pipes (both ends share one inode). */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void)
{
	for (int i = 0; i < 3; i++) {
		int p[2];
		struct stat a, b;
		pipe(p);
		fstat(p[0], &a);
		fstat(p[1], &b);
		printf("pipe %d: ino %lu %lu fifo=%d\n", i, (unsigned long)a.st_ino, (unsigned long)b.st_ino,
		       S_ISFIFO(a.st_mode));
	}
	return 0;
}
