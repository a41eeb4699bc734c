"""POSIX message queues (kernel/syscalls/mqueue.py): guest_asm/c/mqueue_probe.c against what
qemu-user printed (qemu forwards mq_* to the host kernel), and on emukern alone what qemu-user
or the host's capabilities decide: names the kernel's lookup refuses, RLIMIT_MSGQUEUE, the
limits a CAP_SYS_RESOURCE task may pass, mq_notify with a signal."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
EXPECTED = (Path(__file__).parent / "sysv_ipc_expected" / "mqueue_probe.txt").read_text()


@pytest.mark.parametrize("cpus", [1, 2])
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_mqueue_probe_matches_linux(cguest, arch, cpus):
    r = Machine(arch=arch, cpus=cpus).load(cguest("mqueue_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_qemu_user_agrees(cguest, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    q = subprocess.run([QEMU[arch], str(cguest("mqueue_probe", arch))], capture_output=True, timeout=60)
    assert q.returncode == 0 and q.stdout.decode() == EXPECTED


EMUKERN_ONLY = r'''
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
static volatile int got_sig, got_code, got_val;
static void on_sig(int s, siginfo_t *si, void *uc) { (void)uc; got_sig = s; got_code = si->si_code; got_val = si->si_value.sival_int; }
int main(void)
{
	char name[32];
	printf("slash: %d\n", syscall(SYS_mq_open, "a/b", O_RDWR | O_CREAT, 0600, NULL) == -1 ? errno : 0);
	printf("dot: %d\n", syscall(SYS_mq_open, "..", O_RDWR | O_CREAT, 0600, NULL) == -1 ? errno : 0);
	printf("empty: %d\n", syscall(SYS_mq_open, "", O_RDWR | O_CREAT, 0600, NULL) == -1 ? errno : 0);
	struct mq_attr a = { 0, 200, 1000, 0 };
	mqd_t big = mq_open("/big", O_RDWR | O_CREAT, 0600, &a);     /* root: past the soft limits */
	printf("root past msg_max: %d\n", big == -1 ? errno : 0);
	mq_unlink("/big");
	a.mq_maxmsg = 10; a.mq_msgsize = 8192;
	int i, err = 0;
	for (i = 0; i < 20 && !err; i++) {
		snprintf(name, sizeof(name), "/q%d", i);
		if (mq_open(name, O_RDWR | O_CREAT, 0600, &a) == -1)
			err = errno;
	}
	printf("RLIMIT_MSGQUEUE: queue %d fails with %d\n", i, err);
	mqd_t q = mq_open("/q0", O_RDWR | O_NONBLOCK);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	sev.sigev_value.sival_int = 77;
	printf("notify: %d\n", mq_notify(q, &sev));
	printf("notify again: %d\n", mq_notify(q, &sev) == -1 ? errno : 0);
	mq_send(q, "n", 1, 0);
	printf("signal %d SI_MESGQ %d value %d\n", got_sig == SIGUSR1, got_code == SI_MESGQ, got_val);
	got_sig = 0;
	mq_send(q, "n", 1, 0);
	printf("one-shot: %d\n", got_sig);
	sev.sigev_notify = 99;
	printf("bad notify: %d\n", mq_notify(q, &sev) == -1 ? errno : 0);
	return 0;
}
'''


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_what_qemu_user_cannot_show(cguest, arch, tmp_path):
    src = tmp_path / "mq_only.c"
    src.write_text(EMUKERN_ONLY)
    r = Machine(arch=arch).load(cguest(src, arch), []).run()
    # lookup_one_len: EACCES for '/' and '..'; getname: ENOENT for ""; root holds
    # CAP_SYS_RESOURCE (only the hard limits apply); (10, 8192) queues are charged 82880 bytes
    # each against RLIMIT_MSGQUEUE's 819200: the tenth fails with EMFILE
    assert r.stdout.decode() == ("slash: 13\ndot: 13\nempty: 2\nroot past msg_max: 0\n"
                                 "RLIMIT_MSGQUEUE: queue 10 fails with 24\nnotify: 0\nnotify again: 16\n"
                                 "signal 1 SI_MESGQ 1 value 77\none-shot: 0\nbad notify: 22\n"), r.stdout
