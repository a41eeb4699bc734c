/* SysV shared memory probe (tests/kernel/test_sysv_ipc.py): shmget's limits and key rules,
 * shmat's address rules, sharing across fork, IPC_STAT's counts, IPC_RMID with the segment
 * still attached.  Prints only what does not depend on ids or addresses the host picks, so
 * the output matches qemu-user's (the host kernel's).  IPC_PRIVATE keys except one key made
 * from the pid, removed at once.  (SHM_REMAP with a NULL address is EINVAL in Linux but not
 * under qemu-user, which picks the address itself and passes SHM_REMAP on: not probed.) */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>

static const char *en(long r)
{
	if (r != -1)
		return "ok";
	switch (errno) {
	case EINVAL: return "EINVAL"; case ENOENT: return "ENOENT"; case EEXIST: return "EEXIST";
	case ENOSPC: return "ENOSPC"; case ENOMEM: return "ENOMEM"; case EACCES: return "EACCES";
	case EIDRM: return "EIDRM"; case EPERM: return "EPERM"; case EFAULT: return "EFAULT";
	default: return "other";
	}
}

int main(void)
{
	struct shmid_ds ds;
	key_t key = 0x5e000000 | (getpid() & 0xffffff);
	printf("size 0: %s\n", en(shmget(IPC_PRIVATE, 0, 0600)));
	printf("size huge: %s\n", en(shmget(IPC_PRIVATE, (size_t)-1, 0600)));
	printf("size 2^63: %s\n", en(shmget(IPC_PRIVATE, (size_t)1 << 63, 0600)));
	printf("size 2^50: %s\n", en(shmget(IPC_PRIVATE, (size_t)1 << 50, 0600)));
	printf("missing key: %s\n", en(shmget(key, 4096, 0600)));
	int k1 = shmget(key, 10000, IPC_CREAT | 0600);
	printf("create key: %s\n", en(k1));
	printf("same key: %s\n", shmget(key, 100, 0600) == k1 ? "same id" : "other");
	printf("excl: %s\n", en(shmget(key, 100, IPC_CREAT | IPC_EXCL | 0600)));
	printf("bigger: %s\n", en(shmget(key, 20000, 0600)));
	shmctl(k1, IPC_STAT, &ds);
	printf("stat: segsz %zu nattch %lu mode %o cpid==pid %d\n", (size_t)ds.shm_segsz,
	       (unsigned long)ds.shm_nattch, ds.shm_perm.mode, ds.shm_cpid == getpid());
	printf("rmid key: %s\n", en(shmctl(k1, IPC_RMID, NULL)));
	printf("stat removed: %s\n", en(shmctl(k1, IPC_STAT, &ds)));

	int id = shmget(IPC_PRIVATE, 8192, 0600);
	printf("bad id: %s\n", en((long)shmat(-1, NULL, 0)));
	char *rnd = mmap(NULL, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(rnd, 65536);
	printf("unaligned: %s\n", en((long)shmat(id, rnd + 100, 0)));
	char *r2 = shmat(id, rnd + 100, SHM_RND);
	printf("SHM_RND: %s at base %d\n", en((long)r2), r2 == rnd);
	printf("overlap: %s\n", en((long)shmat(id, rnd, 0)));
	char *r3 = shmat(id, rnd, SHM_REMAP);
	printf("SHM_REMAP: %s at base %d\n", en((long)r3), r3 == rnd);
	printf("dt: %s\n", en(shmdt(rnd)));
	printf("dt again: %s\n", en(shmdt(rnd)));
	printf("dt unaligned: %s\n", en(shmdt(rnd + 1)));

	volatile int *p = shmat(id, NULL, 0);
	int *ro = shmat(id, NULL, SHM_RDONLY);
	shmctl(id, IPC_STAT, &ds);
	printf("two attaches: nattch %lu\n", (unsigned long)ds.shm_nattch);
	p[0] = 41;
	printf("read-only view sees %d\n", ro[0]);
	int fds[2];
	pipe(fds);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		struct shmid_ds cds;
		shmctl(id, IPC_STAT, &cds);
		printf("child: nattch %lu, sees %d\n", (unsigned long)cds.shm_nattch, p[0]);
		fflush(stdout);
		p[0] = 42;
		p[1] = 7;
		write(fds[1], "x", 1);
		_exit(0);
	}
	char b;
	read(fds[0], &b, 1);
	waitpid(c, NULL, 0);
	printf("parent sees %d %d\n", p[0], p[1]);
	shmctl(id, IPC_STAT, &ds);
	printf("after child exit: nattch %lu lpid==child %d\n", (unsigned long)ds.shm_nattch,
	       ds.shm_lpid == c);
	printf("rmid attached: %s\n", en(shmctl(id, IPC_RMID, NULL)));
	shmctl(id, IPC_STAT, &ds);
	printf("marked: dest %d key %d nattch %lu\n", !!(ds.shm_perm.mode & SHM_DEST),
	       ds.shm_perm.__key, (unsigned long)ds.shm_nattch);
	volatile int *again = shmat(id, NULL, 0);
	printf("attach after rmid: %s, sees %d\n", en((long)again), again[0]);
	shmdt((void *)again);
	shmdt(ro);
	printf("still there: %s\n", en(shmctl(id, IPC_STAT, &ds)));
	shmdt((void *)p);
	printf("gone after last dt: %s\n", en(shmctl(id, IPC_STAT, &ds)));
	ds.shm_perm.mode = 0644;
	printf("bad cmd: %s\n", en(shmctl(0, 99, &ds)));
	printf("negative id: %s\n", en(shmctl(-5, IPC_STAT, &ds)));
	/* another user: ipcperms against the mode bits, IPC_RMID for the owner only */
	int pub = shmget(IPC_PRIVATE, 4096, 0644);
	fflush(stdout);
	if (fork() == 0) {
		setgid(1000);
		setuid(1000);
		printf("user: ro attach %s, rw attach %s, stat %s, rmid %s\n",
		       en((long)shmat(pub, NULL, SHM_RDONLY)), en((long)shmat(pub, NULL, 0)),
		       en(shmctl(pub, IPC_STAT, &ds)), en(shmctl(pub, IPC_RMID, NULL)));
		fflush(stdout);
		_exit(0);
	}
	wait(NULL);
	shmctl(pub, IPC_RMID, NULL);
	int id2 = shmget(IPC_PRIVATE, 100, 0600);
	ds.shm_perm.uid = 0; ds.shm_perm.gid = 0; ds.shm_perm.mode = 0640;
	printf("set: %s\n", en(shmctl(id2, IPC_SET, &ds)));
	shmctl(id2, IPC_STAT, &ds);
	printf("mode now %o segsz %zu\n", ds.shm_perm.mode, (size_t)ds.shm_segsz);
	printf("lock: %s\n", en(shmctl(id2, SHM_LOCK, NULL)));
	shmctl(id2, IPC_STAT, &ds);
	printf("locked bit %d\n", !!(ds.shm_perm.mode & SHM_LOCKED));
	printf("efault: %s\n", en(shmctl(id2, IPC_STAT, (void *)8)));
	shmctl(id2, IPC_RMID, NULL);
	return 0;
}
