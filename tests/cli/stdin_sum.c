/* Sums the integers on its standard input, and says how many it read: `echo 1 2 | prog`. */
#include <stdio.h>

int main(void)
{
    long v, sum = 0, n = 0;
    while (scanf("%ld", &v) == 1) {
        sum += v;
        n++;
    }
    printf("read %ld numbers, sum %ld\n", n, sum);
    return 0;
}
