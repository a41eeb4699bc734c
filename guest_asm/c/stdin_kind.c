/* What the guest's fd 0 is: fstat's mode and size, then lseek/read on it (a regular file is
 * seekable, /dev/null reads end of file and seeks to 0). */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    struct stat st;
    char b[4] = "";
    if (fstat(0, &st) != 0)
        return 1;
    long a = lseek(0, 2, SEEK_SET);
    long n = read(0, b, 3);
    long e = lseek(0, 0, SEEK_END);
    printf("mode=%o size=%lld seek=%ld read=%ld '%.*s' end=%ld\n", (unsigned)st.st_mode,
           (long long)st.st_size, a, n, (int)(n > 0 ? n : 0), b, e);
    return 0;
}
