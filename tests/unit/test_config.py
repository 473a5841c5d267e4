from pathlib import Path

import pytest

from datagen.config import load_pipeline, parse_pipeline
from datagen.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return path


def test_demo_pipeline_loads() -> None:
    config = load_pipeline(Path(__file__).parents[2] / "pipelines" / "demo.yaml")
    assert config.policy.type == "explore"
    assert Path(config.output.uri).is_absolute()


def test_unknown_key_names_path_and_suggests(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "sources: [{type: sites}]\noutput: {uri: o}\nbrowser:\n  viewport: {width: 800, heigth: 600}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_pipeline(path)
    text = str(info.value)
    assert "browser.viewport.heigth: unknown key" in text
    assert "did you mean 'height'" in text
    assert info.value.path == "browser.viewport.heigth"


def test_union_member_keys_are_suggested_without_the_tag(tmp_path: Path) -> None:
    path = write(tmp_path, "sources: [{type: jsonl, pth: x.jsonl}]\noutput: {uri: o}\n")
    with pytest.raises(ConfigError) as info:
        load_pipeline(path)
    text = str(info.value)
    assert "sources[0].pth: unknown key" in text and "did you mean 'path'" in text
    assert "sources[0].path: required key is missing" in text


def test_wrong_type_and_unknown_policy(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "sources: [{type: sites}]\noutput: {uri: o}\nrun: {max_steps: many}\npolicy: {type: magic}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_pipeline(path)
    text = str(info.value)
    assert "run.max_steps" in text and "'many'" in text
    assert "policy: unknown type 'magic'" in text and "'explore'" in text


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, "sources:\n  - type: sites\n output: [\n")
    with pytest.raises(ConfigError, match=r"not valid YAML at line \d+"):
        load_pipeline(path)


def test_missing_file_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_pipeline(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_pipeline(write(tmp_path, "- a\n- b\n"))


def test_output_override_and_remote_output_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "sources: [{type: sites}]\noutput: {uri: s3://bucket/x}\n")
    with pytest.raises(ConfigError, match="only local folders"):
        load_pipeline(path)
    config = load_pipeline(path, output=str(tmp_path / "local"))
    assert config.output.uri == str(tmp_path / "local")


def test_output_hash_ignores_where_and_who() -> None:
    base = {"sources": [{"type": "sites"}], "output": {"uri": "/a"}}
    one = parse_pipeline(base)
    two = parse_pipeline({**base, "output": {"uri": "/b"}, "cluster": {"workers": 7}})
    three = parse_pipeline({**base, "run": {"seed": 1}})
    assert one.output_hash() == two.output_hash() != three.output_hash()
