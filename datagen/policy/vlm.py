"""The model policy: Surfer-H-style roles on a vLLM server.

    Observation ─► policy role (NavStep: thought, note, action)
                ─► localizer role for clicks (element description → point), optional
                ─► translate.to_action (the answer as an action in screenshot px)
                ─► judge role when the policy answers, optional
                ─► Decision(action, target element, ModelTrace)

Model failures never crash an episode: unparseable output, points off the image and engine
errors become `PolicyFailure`s, which the pipeline records as reject reasons.
"""

from __future__ import annotations

import json
from typing import Any

from datagen.config import RoleName, VlmPolicyConfig
from datagen.engine.client import ChatResult, EngineError
from datagen.engine.profiles import (
    PROFILES,
    ModelOutputError,
    NavClick,
    NavStep,
    Point,
    SentImage,
    Strict,
    Verdict,
    encode_screenshot,
)
from datagen.engine.roles import Engines
from datagen.policy.translate import OffScreen, Screen, to_action
from datagen.records import (
    Action,
    Click,
    Decision,
    Done,
    Element,
    ModelTrace,
    Observation,
    RejectReason,
    TaskSpec,
)


class PolicyFailure(Exception):
    """A step the policy could not produce; becomes a reject row with `reason`."""

    def __init__(self, reason: RejectReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class VlmPolicy:
    """One episode of the model policy; keeps the note, previous actions and recent images."""

    name = "vlm"

    def __init__(self, config: VlmPolicyConfig, engines: Engines) -> None:
        self.config = config
        self.engines = engines
        self.profile = PROFILES[config.profile]
        self.images: list[SentImage | None] = []
        self.note = ""
        self.previous: list[str] = []

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision:
        """One step: ask the roles, return the action; PolicyFailure when there is none."""
        image = encode_screenshot(
            obs.screenshot,
            obs.image_format,
            obs.image_width,
            obs.image_height,
            self.config.image_max_width,
        )
        self._remember(image)
        calls: list[tuple[RoleName, ChatResult]] = []
        messages = self.profile.navigation_messages(
            task.instruction, len(self.previous), self.note, self.previous, self.images
        )
        step: NavStep = await self._ask(
            "policy", messages, self.profile.navigation_schema(image), NavStep, calls
        )
        action = await self._action(step, obs, image, calls)
        judged = None
        if isinstance(action, Done) and self.engines.has("judge"):
            verdict: Verdict = await self._ask(
                "judge",
                self.profile.judge_messages(task.instruction, action.answer, image),
                Verdict.model_json_schema(),
                Verdict,
                calls,
            )
            judged = verdict.model_dump_json()
        self.note = step.note
        self.previous.append(json.dumps(step.action.model_dump(exclude={"x", "y"})))
        target = _element_at(obs, action.x, action.y) if isinstance(action, Click) else None
        return Decision(
            action=action,
            target=target,
            note=step.thought,
            trace=self._trace(step, calls, image, judged),
        )

    def strayed(self, reason: str, url: str) -> None:
        """The last action led off the task (out of scope, an error or a blank page) and the
        pipeline brought the page back: the history the model sees next says so."""
        if self.previous:
            self.previous[-1] += f" -> {reason} {url[:200]}; the page was brought back"

    def _remember(self, image: SentImage) -> None:
        """Keep the last `history_images` screenshots; older ones become placeholders."""
        self.images.append(image)
        keep = self.config.history_images
        for index in range(max(0, len(self.images) - keep)):
            self.images[index] = None

    async def _action(
        self,
        step: NavStep,
        obs: Observation,
        image: SentImage,
        calls: list[tuple[RoleName, ChatResult]],
    ) -> Action:
        """The step's answer as an action; a click's point comes from the localizer if any."""
        answer = step.action
        if isinstance(answer, NavClick) and self.engines.has("localizer"):
            point: Point = await self._ask(
                "localizer",
                self.profile.localization_messages(image, answer.element),
                self.profile.point_schema(image),
                Point,
                calls,
            )
            answer = answer.model_copy(update={"x": point.x, "y": point.y})
        try:
            return to_action(answer, Screen(self.profile, image, obs.image_width, obs.image_height))
        except OffScreen as exc:
            raise PolicyFailure(RejectReason.MODEL_OFF_SCREEN, str(exc)) from None

    async def _ask(
        self,
        role: RoleName,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        model: type[Strict],
        calls: list[tuple[RoleName, ChatResult]],
    ) -> Any:
        try:
            parsed, result = await self.engines.ask(role, messages, schema, model)
        except ModelOutputError as exc:
            raise PolicyFailure(RejectReason.MODEL_PARSE_ERROR, f"{role}: {exc}") from None
        except EngineError as exc:  # its reason: engine_rejected, _unavailable or _error
            raise PolicyFailure(RejectReason(exc.reason), f"{role}: {exc}") from None
        calls.append((role, result))
        return parsed

    def _trace(
        self,
        step: NavStep,
        calls: list[tuple[RoleName, ChatResult]],
        image: SentImage,
        judged: str | None,
    ) -> ModelTrace:
        by_role = dict(calls)
        policy_role = self.engines.roles["policy"]
        return ModelTrace(
            model=policy_role.model,
            standin=policy_role.standin,
            prompt_profile=self.profile.name,
            prompt_version=self.profile.version,
            roles="+".join(role for role, _ in calls),
            raw_output=by_role["policy"].content,
            localizer_output=by_role["localizer"].content if "localizer" in by_role else None,
            judge_output=judged,
            thought=step.thought,
            note=step.note,
            action_description=step.action.element if isinstance(step.action, NavClick) else None,
            prompt_tokens=sum(r.prompt_tokens for _, r in calls),
            completion_tokens=sum(r.completion_tokens for _, r in calls),
            latency_ms=round(sum(r.latency_ms for _, r in calls), 2),
            attempts=sum(r.attempts for _, r in calls),
            sent_width=image.width,
            sent_height=image.height,
        )


def _element_at(obs: Observation, x_px: float, y_px: float) -> Element | None:
    """The smallest element whose box holds the point: what the click lands on, per the DOM."""
    x, y = x_px / obs.device_scale_factor, y_px / obs.device_scale_factor
    inside = [
        e
        for e in obs.elements
        if e.box.x <= x <= e.box.x + e.box.width and e.box.y <= y <= e.box.y + e.box.height
    ]
    return min(inside, key=lambda e: e.box.width * e.box.height, default=None)
