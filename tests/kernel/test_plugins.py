"""Policy plug-ins (emukern.kernel.plugins): a user's own switch value or kernel-function override,
from the API, from pytest and from the CLI's --plugin, shown in info, the summary and --json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.errors import ConfigError
from emukern.kernel import plugins
from emukern.kernel.plugin_examples import sve_drop_after_n as example

DATA = Path(__file__).resolve().parent / "data"
GUEST = DATA / "sve_then_syscalls.S"
EXAMPLE = "emukern.kernel.plugin_examples.sve_drop_after_n"


@pytest.fixture(autouse=True)
def clean_registry():
    """Leave the process-wide registry as found (plug-in files stay registered once imported)."""
    saved = (dict(plugins._VARIANTS), dict(plugins._OVERRIDES), dict(plugins._LOADED))
    yield
    for live, old in zip((plugins._VARIANTS, plugins._OVERRIDES, plugins._LOADED), saved):
        live.clear()
        live.update(old)


def _sve_run(policy: str, n: int, **opts):
    m = Machine(arch="arm64", policies={"arm64-sve": policy}, **opts)
    r = m.load(GUEST, [str(n)]).run()
    assert r.exit_status == 0, r.message
    return r, m.kernel.sve_stats


def test_example_variant_drops_tif_sve_after_n_syscalls(monkeypatch):
    monkeypatch.setattr(example, "SYSCALLS", 16)
    # legacy on a task that never blocks: TIF_SVE is never dropped, every syscall flushes
    r, st = _sve_run("legacy", 40)
    assert r.traps["sve-access"] == 1 and st["flush_syscall"] == 41 and st["drop_tif_sve_syscall"] == 0
    # the variant: 16 flushes, dropped at the 17th syscall, no flush for the next 23, the second
    # SVE instruction traps again and the exit_group syscall flushes once more
    r, st = _sve_run("drop-after-n", 40)
    assert r.traps["sve-access"] == 2
    assert st["flush_syscall"] == 16 + 1 and st["drop_tif_sve_syscall"] == 1
    assert r.policies["arm64-sve"] == "drop-after-n"
    assert r.plugins == [{"kind": "variant", "policy": "arm64-sve", "value": "drop-after-n", "base": "legacy",
                          "overrides": ["fpsimd_syscall_enter"], "what": example.VARIANT.what,
                          "origin": EXAMPLE}]


def test_example_variant_below_n_behaves_like_its_base(monkeypatch):
    monkeypatch.setattr(example, "SYSCALLS", 100)
    a, sa = _sve_run("legacy", 30)
    b, sb = _sve_run("drop-after-n", 30)
    assert (a.cycles, a.traps, dict(sa)) == (b.cycles, b.traps, dict(sb))


def test_override_from_pytest_delegates_and_is_reported():
    calls = []

    def restore(k, cpu, task):
        calls.append(task.tid)
        return plugins.builtin("riscv_v_vstate_restore")(k, cpu, task)

    base = Machine().load(DATA / "policy_rv.S").run()
    with plugins.registered(plugins.override("riscv_v_vstate_restore", restore, what="count restores")):
        r = Machine().load(DATA / "policy_rv.S").run()
    assert calls == [1, 1, 1]            # two getppid and the first-use trap return to user
    assert (r.cycles, r.stdout, r.exit_status) == (base.cycles, base.stdout, base.exit_status)
    assert r.plugins == [{"kind": "override", "function": "riscv_v_vstate_restore", "what": "count restores",
                          "origin": __name__}]
    assert Machine().load(DATA / "policy_rv.S").run().plugins == []      # unregistered again


def test_machines_snapshot_the_registry():
    m = Machine().load(DATA / "policy_rv.S")
    seen = []
    with plugins.registered(plugins.override("riscv_v_vstate_save", lambda *a: seen.append(a) or "x")):
        r = m.run()
    assert r.plugins == [] and seen == []


PLUGIN_FILE = '''
from emukern.kernel.plugins import builtin, register_variant

def do_el0_undef(k, cpu, task, trap):
    trap.detail = "my-plugin saw it"
    return builtin("do_el0_undef")(k, cpu, task, trap)

register_variant("arm64-mrs", "mine", base="hook-list", what="hook-list, noted",
                 overrides={"do_el0_undef": do_el0_undef})
'''


def test_cli_plugin_file_info_summary_and_json(tmp_path, capsys):
    from emukern.cli import main
    f = tmp_path / "my_policy.py"
    f.write_text(PLUGIN_FILE)
    out_json = tmp_path / "r.json"
    rc = main(["run", "--plugin", str(f), "--policy", "arm64-mrs=mine", "--json", str(out_json),
               str(DATA / "policy_arm64.S")])
    err = capsys.readouterr().err
    assert rc == 0
    assert "plug-in" in err and "arm64-mrs=mine from my_policy.py (base hook-list" in " ".join(err.split())
    d = json.loads(out_json.read_text())
    assert d["policies"]["arm64-mrs"] == "mine"
    assert d["plugins"][0]["origin"] == "my_policy.py" and d["plugins"][0]["overrides"] == ["do_el0_undef"]
    assert d["locks"][0]["lock"] == "undef_lock" and d["locks"][0]["acquisitions"] == 3   # base hook-list
    rc = main(["info", "policies", "--plugin", str(f)])
    out = capsys.readouterr().out
    assert rc == 0 and "mine" in out and "plug-in from my_policy.py" in " ".join(out.split())


@pytest.mark.parametrize("call,msg", [
    (lambda: plugins.override("no_such_fn", print), "not a kernel function"),
    (lambda: plugins.override("do_el0_undef", 3), "not callable"),
    (lambda: plugins.register_variant("arm64-sve", "legacy", base="legacy", what=""), "built-in value"),
    (lambda: plugins.register_variant("arm64-sve", "x", base="nope", what=""), "base 'nope'"),
    (lambda: plugins.register_variant("nope", "x", base="legacy", what=""), "unknown policy"),
    (lambda: plugins.register_variant("arm64-sve", "a=b", base="legacy", what=""), "bad variant name"),
    (lambda: plugins.load_plugin("/no/such/plugin.py"), "no such file"),
    (lambda: plugins.load_plugin("no_such_module_xyz"), "no such file or module"),
])
def test_bad_plugins_are_clear_errors(call, msg):
    with pytest.raises(ConfigError, match=msg):
        call()


def test_plugin_file_that_raises_is_a_config_error(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match="importing it failed: RuntimeError: boom"):
        plugins.load_plugin(str(f))


def test_boot_time_only_variant_refuses_a_run_time_switch():
    v = plugins.register_variant("riscv-discard", "frozen", base="eager", what="t", runtime=False)
    with plugins.registered(v):
        m = Machine(policies={"riscv-discard": "frozen"}).load(DATA / "policy_rv.S")
        pol = m.kernel.policies
        assert m.kernel.policy("riscv-discard") == "eager"
        with pytest.raises(ConfigError, match="boot-time only"):
            pol.set("riscv-discard", "deferred")
        assert pol["riscv-discard"] == "frozen"


def test_every_replaceable_function_is_decorated():
    import importlib
    for name, (mod, _what) in plugins.KERNEL_FUNCTIONS.items():
        fn = getattr(importlib.import_module(mod), name)
        assert fn.builtin is plugins.builtin(name), name


def test_no_dispatch_cost_until_a_plugin_is_registered():
    """A fresh process runs the built-in functions directly; the first registration installs the
    dispatchers (so the common case, no plug-ins, pays nothing on the hot path)."""
    import subprocess
    import sys
    code = ("from emukern.kernel.arch.riscv import vector as V\n"
            "from emukern.kernel.arch.arm64 import fpsimd as F\n"
            "from emukern.kernel import plugins\n"
            "assert V.riscv_v_vstate_restore is V.riscv_v_vstate_restore.builtin\n"
            "assert F.fpsimd_syscall_enter is F.fpsimd_syscall_enter.builtin\n"
            "import emukern.kernel.plugin_examples.sve_drop_after_n\n"
            "assert V.riscv_v_vstate_restore is not V.riscv_v_vstate_restore.builtin\n"
            "assert F.fpsimd_syscall_enter.builtin is plugins.builtin('fpsimd_syscall_enter')\n"
            "print('ok')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr
