/* Hostile guest: a loop of cheap syscalls that never ends (almost no user instructions). */
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	for (;;)
		syscall(SYS_getppid);
}
