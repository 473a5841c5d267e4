import asyncio

from datagen.config import ExplorePolicyConfig
from datagen.policy import Policy, make_policy
from datagen.records import Click, Decision, Element, Key, Observation, TaskSpec, TypeText
from tests.helpers import observation as make_observation

TASK = TaskSpec(id="t", start_url="http://127.0.0.1/", instruction="x")


def element(index: int, role: str = "button", hit: bool = True, **kw: object) -> Element:
    return Element.model_validate(
        {
            "index": index,
            "tag": "button",
            "role": role,
            "name": f"e{index}",
            "selector": f"#e{index}",
            "box": {"x": 10 * index, "y": 20, "width": 8, "height": 6},
            "hit": hit,
            **kw,
        }
    )


def observation(elements: list[Element], scale: float = 1.0) -> Observation:
    return make_observation(elements, scale=scale, url="http://127.0.0.1/page")


def decide_all(policy: Policy, obs: Observation, n: int) -> list[Decision]:
    return [asyncio.run(policy.decide(obs, TASK)) for _ in range(n)]


def test_covers_every_reachable_element_before_repeating() -> None:
    elements = [element(i) for i in range(5)] + [element(9, hit=False)]
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=1)
    picks = [d.target.index for d in decide_all(policy, observation(elements), 5)]
    assert sorted(picks) == [0, 1, 2, 3, 4]  # each once, never the occluded one


def test_clicks_box_centre_in_screenshot_pixels() -> None:
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    decision = asyncio.run(policy.decide(observation([element(3)], scale=2.0), TASK))
    assert decision.action == Click(x=(30 + 4) * 2, y=(20 + 3) * 2)


def test_types_a_plausible_value_after_focusing_a_field() -> None:
    field = element(1, role="textbox", tag="input", input_type="email", editable=True)
    config = ExplorePolicyConfig(type="explore", type_probability=1.0, submit_probability=1.0)
    policy = make_policy(config, TASK, seed=0)
    actions = [d.action for d in decide_all(policy, observation([field]), 3)]
    assert isinstance(actions[0], Click)
    assert isinstance(actions[1], TypeText) and "@" in actions[1].text
    assert actions[2] == Key(combo="Enter")


def test_same_seed_same_walk_other_seed_other_walk() -> None:
    elements = [element(i) for i in range(12)]

    def walk(seed: int) -> list[int]:
        policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=seed)
        return [d.target.index for d in decide_all(policy, observation(elements), 6)]

    assert walk(5) == walk(5)
    assert walk(5) != walk(6)


def test_scrolls_when_nothing_is_reachable() -> None:
    kinds = set()
    for seed in range(20):
        policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=seed)
        decision = asyncio.run(policy.decide(observation([element(0, hit=False)]), TASK))
        assert decision.target is None
        kinds.add(decision.action.type)
    assert kinds == {"scroll", "back"}  # mostly scrolls, sometimes goes back
