"""Pure engine pieces: token accounting, prompt profiles, answer generation, output parsing."""

import io
import json
import random

import pytest
from PIL import Image

from datagen.engine.profiles import (
    IMAGE_PLACEHOLDER,
    PROFILES,
    ModelOutputError,
    NavStep,
    SentImage,
    encode_screenshot,
    parse_output,
)
from datagen.engine.sim.answers import instance
from datagen.engine.tokens import image_tokens, text_tokens

# reference/engine-spec.md §1.3: image tokens per screenshot (without the 2 wrapper tokens)
TABLE = {
    (1280, 720): (256, 768, 768, 768),
    (1280, 800): (256, 768, 1792, 1792),
    (1366, 768): (256, 768, 768, 2304),
    (1920, 1080): (256, 768, 768, 2304),
    (1024, 768): (256, 1280, 1792, 3328),
    (800, 600): (256, 256, 1792, 3328),
    (1204, 1204): (256, 1280, 1280, 2560),
}


@pytest.mark.parametrize(("size", "expected"), TABLE.items())
def test_nemotron_tiling_matches_the_spec_table(
    size: tuple[int, int], expected: tuple[int, ...]
) -> None:
    assert tuple(image_tokens(*size, tiles) - 2 for tiles in (1, 4, 6, 12)) == expected


def test_text_tokens() -> None:
    assert text_tokens("") == 0 and text_tokens("abcd") == 1 and text_tokens("abcde") == 2


def img(w: int = 1280, h: int = 800) -> SentImage:
    return SentImage("data:image/jpeg;base64,", w, h)


def test_norm1000_and_pixel_profiles_map_to_screenshot_pixels() -> None:
    norm, absolute = PROFILES["holo2_norm1000"], PROFILES["holo15_abs"]
    assert norm.to_pixels(500, 250, img(), 2560, 1600) == (1280, 400)  # screenshot at 2x
    assert norm.to_pixels(1000, 1000, img(), 1280, 800) == (1279, 799)  # clamped inside
    assert norm.to_pixels(1001, 10, img(), 1280, 800) is None
    assert absolute.to_pixels(640, 400, img(640, 400), 1280, 800) is None  # pixels are 0..639
    assert absolute.to_pixels(320, 200, img(640, 400), 1280, 800) == (640, 400)
    assert absolute.to_pixels(700, 10, img(640, 400), 1280, 800) is None


def test_schema_bounds_follow_the_profile() -> None:
    schema = PROFILES["holo2_norm1000"].navigation_schema(img())
    click = schema["$defs"]["NavClick"]["properties"]
    assert click["x"]["maximum"] == 1000 and click["y"]["minimum"] == 0
    point = PROFILES["holo15_abs"].point_schema(img(640, 400))
    assert point["properties"]["x"]["maximum"] == 639 and point["properties"]["y"]["maximum"] == 399


def test_navigation_messages_bound_the_history() -> None:
    profile = PROFILES["holo2_norm1000"]
    messages = profile.navigation_messages(
        "Buy milk", 3, "n", ["a", "b"], [None, None, img(), img()]
    )
    parts = messages[1]["content"]
    assert json.loads(parts[0]["text"])["task"] == "Buy milk"
    assert [p["type"] for p in parts[1:]] == ["text", "text", "image_url", "image_url"]
    assert parts[1]["text"] == IMAGE_PLACEHOLDER
    assert "<output_format>" in messages[0]["content"] and "0 to 1000" in messages[0]["content"]


def test_screenshots_are_resized_on_the_worker() -> None:
    out = io.BytesIO()
    Image.new("RGB", (2560, 1600), "white").save(out, "PNG")
    sent = encode_screenshot(out.getvalue(), "png", 2560, 1600, max_width=1280)
    assert (sent.width, sent.height) == (1280, 800) and sent.data_url.startswith(
        "data:image/jpeg;base64,"
    )
    same = encode_screenshot(out.getvalue(), "png", 2560, 1600, max_width=4000)
    assert (same.width, same.data_url[:21]) == (2560, "data:image/png;base64")


def test_stand_in_answers_are_schema_valid_and_parse() -> None:
    schema = PROFILES["holo2_norm1000"].navigation_schema(img())
    kinds = set()
    for seed in range(60):
        value = instance(schema, random.Random(seed), click_bias=0.5, fixed_point=None)
        step = parse_output(json.dumps(value), NavStep)
        kinds.add(step.action.type)
        if step.action.type == "click":
            assert 0 <= step.action.x <= 1000 and 0 <= step.action.y <= 1000
    assert {"click", "answer", "scroll"} <= kinds


def test_parse_errors_say_what_is_wrong() -> None:
    with pytest.raises(ModelOutputError, match="Invalid JSON"):
        parse_output('{"thought": "t"', NavStep)
    with pytest.raises(ModelOutputError, match="action"):
        parse_output('{"thought": "t", "note": ""}', NavStep)
    with pytest.raises(ModelOutputError, match=r"action\.click\.x"):
        parse_output(
            '{"thought": "t", "note": "", "action": {"type": "click", "element": "e", "x": "far", "y": 1}}',
            NavStep,
        )


def test_stand_in_is_calibrated_to_holotron_on_one_h100() -> None:
    """100 sequences decoding give ≈ 8,900 output tokens/s (the published Holotron-12B figure)."""
    from datagen.config import SimConfig
    from datagen.engine.sim.engine import saturated_rate

    tokens_per_s = saturated_rate(SimConfig(max_num_seqs=100), 1, 1000, requests=600) * 1000
    assert 8_700 < tokens_per_s < 9_100
    # image-heavy prompts make prefill dominate: far fewer requests per second
    assert saturated_rate(SimConfig(max_num_seqs=100), 2800, 45, requests=600) < 10
