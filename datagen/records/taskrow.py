"""The `tasks` table's row: a synthesised task (issue 43), kept or dropped by its proof.

pipeline/synthesis.py ─► TaskRow ─► sink (Parquet `tasks`) ─► export (tasks, sft, rl)
"""

from __future__ import annotations

from pydantic import Field

from datagen.records.rows import RowBase

# the proof's steps, in order: what each drops (`dropped_at`); then the words', the budget's
PROOF_STEPS = (
    "volatile",
    "holds_at_start",
    "not_after_demo",
    "not_again",
    "transient",
    "not_specific",
)
DROPS = (*PROOF_STEPS, "no_words", "over_limit")


class TaskRow(RowBase):
    """A task synthesised from a verified episode's effect (issue 43), kept or dropped by its
    proof; `task_id` and `episode_id` are the episode's it came from (its provenance)."""

    synth_id: str = Field(
        description="the first 16 hex of sha256(start_url, effect key): one id per (start "
        "URL, effect), whatever episode found it"
    )
    site: str
    start_url: str = Field(description="the source task's start URL, as its task list gave it")
    effect_kind: str = Field(
        description="state | value | url | count | appeared | text | disappeared: what changed"
    )
    effect: str = Field(description="what it changed, e.g. state:checkbox:Buy milk:checked")
    instruction: str = Field("", description="the task in a person's words (empty: none)")
    check_json: str = Field(description="the check (SuccessCheck) as JSON; never model-written")
    actions_json: str = Field(
        description="the demonstration: its actions as JSON, in the scripted policy's format"
    )
    demo_steps: list[int] = Field(description="the episode's step indices it replays, in order")
    demo_descriptions: list[str] = Field(description="each demonstration step in words")
    kept: bool = Field(description="the proof held and words were written: a task")
    dropped_at: str | None = Field(
        None,
        description="the proof step that dropped it: volatile | holds_at_start | "
        "not_after_demo | not_again | transient | not_specific | no_words | over_limit "
        "(not_specific: within its shard here; export and the run summary also drop those an "
        "episode of another shard disproves: sink/synthesised.py)",
    )
    proof_replays: int = Field(0, description="sealed replays it was proven on (true after each)")
    false_on_start: int = Field(
        0, description="observations of the start state it was false on (live and recorded)"
    )
    false_on_episodes: list[str] = Field(
        default_factory=list,
        description="episode ids, same start, that did not act as it did, on whose final "
        "recorded observation it was false",
    )
    fail_json: str | None = Field(
        None,
        description="the task's `fail` check (SuccessCheck JSON): a failure message another "
        "episode from the same start met acting on the demonstration's last element without "
        "the effect, never shown on the start or the demonstration's states (schema 1.7)",
    )
    fail_episodes: list[str] = Field(
        default_factory=list,
        description="episode ids whose final recorded observation showed the fail check's "
        "message (schema 1.7)",
    )
    demo_element: list[str] = Field(
        default_factory=list,
        description="[role, name] of the element the demonstration's last step acted on "
        "(empty: none found): episodes that acted on it are no evidence against the task "
        "(schema 1.8)",
    )
    writes: list[str] = Field(
        default_factory=list,
        description="the state-changing requests the demonstration sent, in order, from the "
        "episode's recording: `<step> <METHOD> <path>` (schema 1.7)",
    )
    synth_instruction: str | None = Field(
        None,
        description="our words (annotate/tasks.py) where the relabel role's replaced them in "
        "`instruction`; null: `instruction` is ours (schema 1.8)",
    )
    reword_output: str | None = Field(
        None, description="the relabel role's raw answer when asked to reword (schema 1.8)"
    )
    reword_accepted: bool | None = Field(
        None,
        description="its words kept every quoted name the check decides, and replaced ours; "
        "null: not asked (schema 1.8)",
    )
    reword_model: str | None = Field(None, description="served model name of the relabel role")
    reword_standin: bool | None = Field(
        None, description="true: the reworded words came from datagen's stand-in"
    )
