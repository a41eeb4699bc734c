"""Network namespaces as AF_UNIX sees them (emukern/kernel/net/net_namespace.py), with
guest_asm/c/netns_unix.c on both arches: unshare(CLONE_NEWNET) gives a new /proc/self/ns/net
inode and an empty abstract name table (the outer listener's name is ECONNREFUSED there and
may be bound again), a socket made before the unshare still connects in the old namespace, a
listener carried out by SCM_RIGHTS through a socketpair of the old namespace still serves
its own, and /proc/net/protocols counts each namespace's stream sockets (back to 0 once
they are closed).  Not compared with a real kernel yet (qemu-user's unshare needs a root
host)."""
from __future__ import annotations

import pytest

from emukern.api import Machine

EXPECTED = """\
init net:[4026531840]
listener a bound, stream sockets 2
unshare(CLONE_NEWNET) = 0
new  net:[4026532096]
stream sockets in the new namespace 0
connect from the new namespace = -111
connect of a socket made before = 0
same name bound again here: yes, stream sockets 2
sendmsg = 1
recvmsg = 1
connect in the new namespace = 0
the received listener accepts it: yes
stream sockets left in the new namespace 0
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_abstract_names_and_socket_counts_are_per_network_namespace(cguest, arch):
    r = Machine(arch=arch).load(cguest("netns_unix", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
