/* Hostile guest: a fork bomb (every process forks forever; failures are retried). */
#include <unistd.h>
int main(void)
{
	for (;;)
		fork();
}
