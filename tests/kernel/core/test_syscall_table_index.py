"""The syscall table's rows for modules not imported yet (syscalls/table.py, _handler_index):
the cached index names the module each handler comes from, and a row resolves on its first call
to the handler the eager build would have bound."""
from __future__ import annotations

import functools

from emukern.api import Machine
from emukern.kernel.syscalls import table


def test_the_index_is_what_importing_every_module_finds(tmp_path, monkeypatch):
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path))
    eager = {attr: fn.__module__ for attr, fn in table.syscall_handlers().items()}
    assert table._handler_index() == eager            # computed and kept
    assert list((tmp_path / "syscall-index").glob("*.json"))
    assert table._handler_index() == eager            # read back


def test_rows_resolve_to_the_eager_handlers(tmp_path, monkeypatch, guest_asm):
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path))
    m = Machine(arch="riscv64")
    m.load(guest_asm / "riscv" / "hello.S")
    r = m.run()
    assert r.exit_status == 0 and r.stdout.startswith(b"Hello")
    k = m._loaded()
    handlers = table.syscall_handlers()
    for mod in k.arch.SYSCALL_MODULES:
        handlers.update(table._sys_functions(mod))
    want = {nr for nr, name in table.SYSCALL_NAMES.items() if "sys_" + name in handlers}
    assert set(k._dispatch) == want
    # write and exit_group ran: their rows hold the bound handler now
    for nr, row in k._dispatch.items():
        if row[0] in ("write", "exit_group"):
            assert isinstance(row[1], functools.partial) and row[1].func is handlers["sys_" + row[0]]
