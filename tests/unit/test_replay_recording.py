"""Replay verification's pure parts: the recording read back, the `live` key, the task's
`fail` check in its dump, and the lines `datagen plan` and the run summary print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datagen.capacity.command import verification_effect
from datagen.errors import ConfigError
from datagen.observe.summary import verification_line
from datagen.pipeline.recording import Recording, is_live, same_body
from datagen.records import SuccessCheck, TaskSpec
from tests.helpers import make_config


def _entry(method: str, url: str, status: int, cookie: str = "", **extra: object) -> object:
    headers = [{"name": "Cookie", "value": cookie}] if cookie else []
    response: dict[str, object] = {
        "status": status,
        "headers": extra.get("headers", []),
        "content": {"text": extra.get("text", "")},
    }
    request: dict[str, object] = {"method": method, "url": url, "headers": headers}
    if "body" in extra:
        request["postData"] = {"text": extra["body"]}
    return {"request": request, "response": response}


def test_a_recording_splits_safe_requests_from_the_state_changing_ones(tmp_path: Path) -> None:
    set_cart = [{"name": "Set-Cookie", "value": "cart=widget; Path=/"}]
    entries = [
        _entry("GET", "http://shop/", 200, text="empty"),
        _entry("POST", "http://shop/cart", 303, body="item=widget", headers=set_cart),
        _entry("GET", "http://shop/", 200, cookie="cart=widget; _ga=1", text="1 widget"),
        _entry("POST", "http://shop/buy", 200, cookie="cart=widget; _ga=1", text="placed"),
        _entry("GET", "http://shop/aborted", 0),  # no response: left out
    ]
    har = tmp_path / "traffic.har"
    har.write_text(json.dumps({"log": {"entries": entries}}))
    recording = Recording.load(har)

    assert [e.state for e in recording.safe[("GET", "http://shop/")]] == [0, 1]
    assert [(e.method, e.url, e.body) for e in recording.writes] == [
        ("POST", "http://shop/cart", b"item=widget"),
        ("POST", "http://shop/buy", b""),
    ]
    assert ("GET", "http://shop/aborted") not in recording.safe
    # the site's own cookies are the state a POST is matched on; an analytics cookie is not
    assert recording.site_cookies == {"cart"}
    assert recording.state("cart=widget; _ga=2") == recording.state(recording.writes[1].cookie)
    assert recording.state("") != recording.state(recording.writes[1].cookie)
    assert Recording.load(tmp_path / "missing.har").writes == []


def test_live_hosts_match_by_name_or_name_and_port() -> None:
    live = frozenset({"shop.example.com", "127.0.0.1:8080"})
    assert is_live("https://shop.example.com/buy", live)
    assert is_live("http://shop.example.com:8443/", live)
    assert is_live("http://127.0.0.1:8080/x", live)
    assert not is_live("http://127.0.0.1:9090/x", live)
    assert not is_live("https://example.com/", live)


@pytest.mark.parametrize("host", ["https://shop.example.com", "shop.example.com/buy", ""])
def test_a_live_entry_that_is_no_host_is_refused_with_the_fix(tmp_path: Path, host: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_config(tmp_path, annotation={"verify": {"live": [host]}})
    assert "annotation.verify.live" in str(caught.value) and "fix:" in str(caught.value)


def test_a_task_without_fail_dumps_as_before() -> None:
    """The run id hashes every task's dump: one without `fail` must keep its old run id."""
    task = TaskSpec(id="t", start_url="http://x/", instruction="Do it.")
    assert "fail" not in task.model_dump()
    failing = task.model_copy(update={"fail": SuccessCheck(text_present="Wrong.")})
    assert failing.model_dump()["fail"]["text_present"] == "Wrong."


def test_plan_and_summary_say_what_verification_does(tmp_path: Path) -> None:
    line = verification_effect(make_config(tmp_path))
    assert "recorded traffic" in line and "never a form post" in line and "live" not in line
    live = make_config(tmp_path, annotation={"verify": {"live": ["shop.example.com"]}})
    assert "shop.example.com" in verification_effect(live)
    off = make_config(tmp_path, annotation={"verify": None})
    assert verification_effect(off).startswith("verification: off")

    assert verification_line(100.0, 20.0, 0, {}) == ""
    summary = verification_line(100.0, 20.0, 7, {"GET example.com": 3})
    assert summary.startswith("verification: 20.0% of session time (20.0 of 100.0 s), 7")
    assert "GET example.com 3" in summary
    # episodes of one action are verified by the episode itself: counted, with no replay
    mixed = verification_line(100.0, 20.0, 7, {}, verified=10)
    assert "7 replays for 10 verified episodes (0.7 each)" in mixed
    assert "0 replays for 2 verified episodes" in verification_line(100.0, 0.0, 0, {}, verified=2)
    assert "1 replay for 1 verified episode (1.0 each)" in verification_line(
        9.0, 1.0, 1, {}, verified=1
    )


def test_volatile_values_match_and_other_values_do_not(tmp_path: Path) -> None:
    entries = [
        _entry("GET", "http://shop/w?_=1732800000000", 200, text="ok"),
        _entry("GET", "http://shop/slow.js?r=0.6180339887", 200, text="// js"),
        _entry("GET", "http://shop/item?id=7", 200, text="seven"),
    ]
    har = tmp_path / "traffic.har"
    har.write_text(json.dumps({"log": {"entries": entries}}))
    recording = Recording.load(har)
    # a cache-buster or a clock differs between the episode and its replay: the recording
    assert recording.similar("GET", "http://shop/w?_=1732800099999")
    assert recording.similar("GET", "http://shop/slow.js?r=0.1234567")
    # another item, another path, another key: a GET the episode never made
    assert not recording.similar("GET", "http://shop/item?id=8")
    assert not recording.similar("GET", "http://shop/x?_=1732800099999")
    assert not recording.similar("GET", "http://shop/w?t=1732800099999&extra=1")
    assert same_body(b"item=widget&ts=1732800000000", b"item=widget&ts=1732800012345")
    assert not same_body(b"item=widget", b"item=gadget")
