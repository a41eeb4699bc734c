"""System V IPC <-> Linux's ipc/: the namespace's id tables and permissions (util.py), shared
memory segments (shm.py), semaphore sets (sem.py) and message queues (msg.py).  The syscalls
that reach them are kernel/syscalls/ipc_{shm,sem,msg}.py.  This package sits beside mm/ and
fs/: it imports nothing of the signal or syscall layers, so the exit path may call into it."""
