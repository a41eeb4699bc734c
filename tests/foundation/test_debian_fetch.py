"""emukern.debian: the private apt configuration (parsing the system's sources; no network here)."""
from pathlib import Path

import pytest

from emukern.debian import AptFetcher, FetchError, system_debian_mirror


def _etc(tmp_path: Path, files: dict[str, str]) -> Path:
    etc = tmp_path / "etc-apt"
    (etc / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (etc / name).write_text(text)
    return etc


def test_mirror_from_deb822_skips_security(tmp_path, monkeypatch):
    monkeypatch.delenv("EMUKERN_DEBIAN_MIRROR", raising=False)
    etc = _etc(tmp_path, {"sources.list.d/debian.sources":
                          "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
                          "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian/\n"
                          "Suites: bookworm bookworm-updates\nComponents: main\n"})
    assert system_debian_mirror(etc) == "http://mirror.example/debian"


def test_mirror_from_one_line_format(tmp_path, monkeypatch):
    monkeypatch.delenv("EMUKERN_DEBIAN_MIRROR", raising=False)
    etc = _etc(tmp_path, {"sources.list": "# comment\ndeb [arch=amd64] http://m.example/debian bookworm main\n"})
    assert system_debian_mirror(etc) == "http://m.example/debian"


def test_no_mirror_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("EMUKERN_DEBIAN_MIRROR", raising=False)
    with pytest.raises(FetchError, match="no Debian archive") as e:
        system_debian_mirror(_etc(tmp_path, {}))
    assert "EMUKERN_DEBIAN_MIRROR" in str(e.value)


def test_env_mirror_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("EMUKERN_DEBIAN_MIRROR", "http://env.example/debian/")
    assert system_debian_mirror(_etc(tmp_path, {})) == "http://env.example/debian"


def test_private_config_never_names_system_dirs(tmp_path):
    f = AptFetcher("trixie", "riscv64", cache=tmp_path, mirror="http://m.example/debian")
    f._write_config()
    opts = " ".join(f._options())
    assert "/etc/apt" not in opts and "/var/lib/apt" not in opts
    assert str(tmp_path) in opts
    assert (f.root / "sources.list").read_text().startswith("deb [arch=riscv64")


def test_unknown_release(tmp_path):
    with pytest.raises(FetchError, match="unknown Debian release"):
        AptFetcher("hamm", "arm64", cache=tmp_path)
