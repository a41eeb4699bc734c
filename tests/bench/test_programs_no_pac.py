"""bench --only programs, arm64's --no-pac column (emukern/bench/programs.py), with the runs
replaced by fakes: the 4x target is judged on emukern --no-pac against qemu-user
pauth-impdef=on, the PAC-on medians stay unjudged beside it, and a --no-pac run that printed
other bytes than the PAC run stops the figure."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emukern.bench import programs
from emukern.bench.selfbench import Settings

# CPU seconds of the fakes: emukern with PAC, emukern --no-pac, qemu-user -cpu max, impdef
TIMES = {"pac": 1.0, "nopac": 0.3, "max": 0.8, "impdef": 0.1}


def _fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nopac_out: bytes = b"same\n") -> None:
    monkeypatch.setattr(programs, "guest_root", lambda arch: tmp_path)

    def emukern(root: Path, argv: list[str], outputs: Any = None, who: str = "emukern", **options: Any) -> float:
        pac = options.get("has_pac", True)
        if outputs is not None:
            outputs.setdefault(who, set()).add(programs._output_digest(root, argv, b"same\n" if pac else nopac_out))
        return TIMES["pac" if pac else "nopac"]

    def qemu(arch: str, root: Path, argv: list[str], qargs: list[str] | None = None) -> float:
        return TIMES["impdef" if qargs == programs.QEMU_IMPDEF_ARGS else "max"]
    monkeypatch.setattr(programs, "_emukern_cpu", emukern)
    monkeypatch.setattr(programs, "_qemu_cpu", qemu)


def test_target_is_judged_on_no_pac_against_impdef(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake(monkeypatch, tmp_path)
    figs = {f["key"]: f for f in programs.m_programs(Settings(reps=2, quick=True), ("arm64",))}
    one = figs["arm64.program.busybox_sh"]
    assert set(one["contenders"]) == {"emukern", "qemu-user", programs.QEMU_IMPDEF, programs.EMUKERN_NO_PAC}
    assert one["no_pac_same_output"] is True
    assert one["no_pac_vs_impdef"]["median"] == pytest.approx(3.0)
    # emukern / emukern --no-pac: what pointer authentication costs emukern
    assert one["contenders"][programs.EMUKERN_NO_PAC]["ratio"]["median"] == pytest.approx(1 / 0.3)
    fair = figs["arm64.programs_ratio_no_pac"]
    assert fair["subject"] == programs.EMUKERN_NO_PAC and fair["ratios"] == pytest.approx([3.0, 3.0])
    assert fair["target"]["value"] == 4.0 and fair["met"] is True
    impdef = figs["arm64.programs_ratio_impdef"]            # PAC on against impdef: shown, not judged
    assert impdef["ratios"] == pytest.approx([10.0, 10.0]) and impdef["target"] is None and impdef["met"] is None
    assert "programs_ratio_no_pac" in impdef["note"]


def test_no_pac_output_must_match(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake(monkeypatch, tmp_path, nopac_out=b"other\n")
    with pytest.raises(RuntimeError, match="--no-pac printed other bytes"):
        programs.m_programs(Settings(reps=1, quick=True), ("arm64",))


def test_output_digest_covers_the_file_written(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "o.txt").write_bytes(b"a\n")
    argv = ["/usr/bin/sort", "-o", "/tmp/o.txt", "/tmp/in.txt"]
    d1 = programs._output_digest(tmp_path, argv, b"")
    (tmp_path / "tmp" / "o.txt").write_bytes(b"b\n")
    assert programs._output_digest(tmp_path, argv, b"") != d1
    assert programs._output_digest(tmp_path, ["/bin/x"], b"") == programs._output_digest(tmp_path, ["/bin/y"], b"")
