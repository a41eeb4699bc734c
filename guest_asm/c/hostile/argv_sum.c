/* Hostile guest: prints argc and the total length of its arguments. */
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
	size_t total = 0;
	for (int i = 1; i < argc; i++)
		total += strlen(argv[i]);
	printf("argc=%d total=%zu\n", argc, total);
	return 0;
}
