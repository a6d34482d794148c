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


def test_the_checksums_file_and_the_readme_agree():
    """The README's table gives each file's size and SHA-256; `make check-data` reads the checksums file."""
    from shared_data import REPO, expected_sha256

    readme = (REPO / "README.md").read_text()
    want = expected_sha256()
    assert sorted(want) == ["KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-BLUE-2000-4.2-cln.swf.gz",
                            "theta-2022-week4-io-jobs.yaml"]
    for name, digest in want.items():
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}`"))
        assert f"`{digest}`" in row, row


def test_the_shared_files_present_are_the_ones_the_tests_expect():
    """Where a file is present, its SHA-256 and size are the README's (computed here, not read from a cache)."""
    import hashlib

    import pytest
    from shared_data import REPO, SHARED_DATA, expected_sha256

    readme = (REPO / "README.md").read_text()
    present = [n for n in expected_sha256() if (SHARED_DATA / n).is_file()]
    if not present:
        pytest.skip(f"no shared data in {SHARED_DATA}")
    for name in present:
        data = (SHARED_DATA / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == expected_sha256()[name], name
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}`"))
        assert f"| {len(data):,} |".replace(",", " ") in row, (name, len(data), row)


def test_a_shared_file_that_differs_fails_the_test_that_reads_it(monkeypatch, tmp_path):
    import pytest
    import shared_data

    (tmp_path / "KTH-SP2-1996-2.1-cln.swf.gz").write_bytes(b"another version")
    monkeypatch.setattr(shared_data, "SHARED_DATA", tmp_path)
    with pytest.raises(pytest.fail.Exception, match="not the c8c1a8db"):
        shared_data.shared_file("KTH-SP2-1996-2.1-cln.swf.gz")
    with pytest.raises(pytest.skip.Exception, match="README.md"):
        shared_data.shared_file("SDSC-BLUE-2000-4.2-cln.swf.gz")
