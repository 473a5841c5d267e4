"""A pipeline file's byte budget: aliases of a long string (the string "billion laughs": a
220 KB file expanding to 2 GB) and one overlong value are refused before anything is written
out (the process's peak memory barely moves), naming the key; ordinary files with aliases are
untouched."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from datagen.config import load_pipeline
from datagen.config.load import MAX_DOCUMENT_BYTES, MAX_STRING_BYTES
from datagen.errors import ConfigError

HEAD = "name: t\nsources: [{type: sites}]\noutput: {uri: out}\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


@pytest.mark.timeout(120)  # a watchdog, not a measure: written out, it would take minutes
def test_a_string_bomb_is_refused_before_it_is_written_out(tmp_path: Path) -> None:
    text = 'x-big: &s "' + "x" * 100_000 + '"\nx-refs:\n' + "  - *s\n" * 20_000
    path = write(tmp_path, text)
    assert path.stat().st_size < 300_000  # 2 GB once written out
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 4 * MAX_DOCUMENT_BYTES / 2**20  # never the 2 GB it expands to
    assert caught.value.path.startswith("x-refs[")
    assert f"more than {MAX_DOCUMENT_BYTES:,} bytes" in str(caught.value)


def test_a_bomb_nested_in_mappings_names_the_inner_key(tmp_path: Path) -> None:
    text = 'x-s: &s "' + "y" * 60_000 + '"\nx-m: &m {a: *s, b: *s, c: *s, d: *s}\n'
    text += "x-outer:\n" + "".join(f"  k{i}: *m\n" for i in range(40))
    with pytest.raises(ConfigError) as caught:
        load_pipeline(write(tmp_path, text))
    assert caught.value.path.startswith("x-outer.k")


def test_one_overlong_value_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, 'x-long: "' + "z" * (MAX_STRING_BYTES + 1) + '"\n')
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path)
    assert caught.value.path == "x-long" and "more than" in str(caught.value)


def test_ordinary_aliases_still_load(tmp_path: Path) -> None:
    text = "cluster: {workers: &n 3, sessions_per_worker: *n}\n"
    assert load_pipeline(write(tmp_path, text)).cluster.sessions_per_worker == 3
