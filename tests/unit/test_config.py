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


def test_output_uri_schemes(tmp_path: Path) -> None:
    path = write(tmp_path, "sources: [{type: sites}]\noutput: {uri: 'gs://bucket/x'}\n")
    with pytest.raises(ConfigError, match="looks like a gs: URI"):
        load_pipeline(path)
    config = load_pipeline(path, output=str(tmp_path / "local"))
    assert config.output.uri == str(tmp_path / "local")
    assert load_pipeline(path, output="s3://bucket/runs/a").output.uri == "s3://bucket/runs/a"
    with pytest.raises(ConfigError, match="has no bucket"):
        load_pipeline(path, output="s3:///x")


def test_output_hash_ignores_where_and_who() -> None:
    base = {"sources": [{"type": "sites"}], "output": {"uri": "/a"}}
    one = parse_pipeline(base)
    two = parse_pipeline({**base, "output": {"uri": "/b"}, "cluster": {"workers": 7}})
    three = parse_pipeline({**base, "run": {"seed": 1}})
    assert one.output_hash() == two.output_hash() != three.output_hash()


def test_output_override_replaces_a_plain_string_output(tmp_path: Path) -> None:
    path = write(tmp_path, "sources: [{type: sites}]\noutput: out\n")
    assert load_pipeline(path, output=str(tmp_path / "x")).output.uri == str(tmp_path / "x")


def test_base_dir_is_not_a_user_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="base_dir is set by datagen"):
        load_pipeline(write(tmp_path, "sources: [{type: sites}]\noutput: {uri: o}\nbase_dir: /x\n"))


def test_screenshot_sizes_must_be_whole_pixels(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "sources: [{type: sites}]\noutput: {uri: o}\nbrowser: {viewport: {width: 1366, height: 768}, device_scale_factor: 1.25}\n",
    )
    with pytest.raises(ConfigError, match=r"1707\.5 is not a whole number"):
        load_pipeline(path)


def test_engine_url_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "sources: [{type: sites}]\noutput: {uri: o}\npolicy: {type: vlm}\nengine: {url: '${DG_TEST_URL}', api_key: '${DG_TEST_KEY:-}'}\n"
    path = write(tmp_path, text)
    monkeypatch.delenv("DG_TEST_URL", raising=False)
    with pytest.raises(ConfigError, match="DG_TEST_URL is not set") as info:
        load_pipeline(path)
    assert info.value.path == "engine.url"
    monkeypatch.setenv("DG_TEST_URL", "http://127.0.0.1:9999")
    config = load_pipeline(path)
    assert config.engine.url == "http://127.0.0.1:9999" and config.engine.api_key is None
    monkeypatch.setenv("DG_TEST_KEY", "sekrit")
    config = load_pipeline(path)
    assert (
        "sekrit" not in config.model_dump_json()
        and config.engine.api_key.get_secret_value() == "sekrit"
    )
    # where the engine is does not change the run's identity
    monkeypatch.setenv("DG_TEST_URL", "http://127.0.0.1:1")
    assert load_pipeline(path).output_hash() == config.output_hash()


def test_page_memory_ceiling_has_a_default_and_bounds(tmp_path: Path) -> None:
    plain = "sources: [{type: sites}]\noutput: {uri: o}\n"
    assert load_pipeline(write(tmp_path, plain)).browser.page_memory_mb == 2048
    with pytest.raises(ConfigError) as info:
        load_pipeline(write(tmp_path, plain + "browser: {page_memory_mb: 64}\n"))
    assert "browser.page_memory_mb" in str(info.value) and "256" in str(info.value)
