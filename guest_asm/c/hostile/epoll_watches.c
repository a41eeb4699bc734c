/* Hostile guest: argv[1] epoll instances each watching the same argv[2] pipe ends, the n^2
 * growth of watches from few descriptors.  Prints how many watches were added before
 * epoll_ctl failed and its errno; then closes every instance and adds argv[2] watches to a new
 * one (the charge came back). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int neps = argc > 1 ? atoi(argv[1]) : 100, nfds = argc > 2 ? atoi(argv[2]) : 100;
	int *eps = calloc(neps, sizeof(int)), *fds = calloc(nfds, sizeof(int));
	for (int i = 0; i < nfds; i += 2) {
		int p[2];
		pipe(p);
		fds[i] = p[0];
		if (i + 1 < nfds)
			fds[i + 1] = p[1];
	}
	long added = 0;
	int err = 0, made = 0;
	for (int e = 0; e < neps && !err; e++, made++) {
		eps[e] = epoll_create1(0);
		for (int i = 0; i < nfds; i++) {
			struct epoll_event ev = { .events = EPOLLIN };
			if (epoll_ctl(eps[e], EPOLL_CTL_ADD, fds[i], &ev) < 0) {
				err = errno;
				break;
			}
			added++;
		}
	}
	printf("watches %ld errno %s\n", added, err ? strerrorname_np(err) : "0");
	for (int e = 0; e < made; e++)
		close(eps[e]);
	int ep = epoll_create1(0);
	long again = 0;
	for (int i = 0; i < nfds; i++) {
		struct epoll_event ev = { .events = EPOLLIN };
		again += epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) == 0;
	}
	printf("after close %ld\n", again);
	return 0;
}
