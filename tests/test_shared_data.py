"""Where iolab looks for ../shared/data: the environment, beside a checkout, or up from the working
directory (an installed wheel run from a checkout, as `make test-wheel` does)."""

from __future__ import annotations

from iolab import shared_data as sd


def test_environment_wins(monkeypatch, tmp_path):
    monkeypatch.setenv(sd.ENV, str(tmp_path / "elsewhere"))
    assert sd.shared_data_dir() == tmp_path / "elsewhere"  # named even if it does not exist


def test_found_up_from_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(sd.ENV, raising=False)
    monkeypatch.setattr(sd, "__file__", str(tmp_path / "site-packages" / "iolab" / "shared_data.py"))
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "repo" / "tests").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "repo" / "tests")
    assert sd.shared_data_dir() == tmp_path / "shared" / "data"
    assert sd.shared_data_file("KTH.swf") == tmp_path / "shared" / "data" / "KTH.swf"


def test_nothing_found_names_the_place_beside_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv(sd.ENV, raising=False)
    monkeypatch.setattr(sd, "__file__", str(tmp_path / "a" / "iolab" / "shared_data.py"))
    monkeypatch.chdir(tmp_path)
    if any(p.is_dir() for p in sd.candidates()[1:]):  # a shared/ up from tmp (not on CI machines)
        return
    assert sd.shared_data_dir() == tmp_path / "shared" / "data"
