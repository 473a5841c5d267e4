"""datagen: training data for computer-use agents, from real browsers at scale."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow.dataset

__version__ = "0.1.0"
# 1.1: steps.settle_ms and observation_stable, grounding.expression_kind, episode status
# left_scope, reject reasons for off-scope/error/blank pages, unstable boxes (added columns only)
# 1.2: steps.action_description and model_action_description; group_id and sample_index on
# steps and episodes; the episodes' relabel columns (relabeled_instruction, instruction_source,
# relabel_*); reject stage relabel, reason relabel_rejected (added columns only)
# 1.3: steps.needed; the episodes' verification columns (verification, verified_steps,
# verify_replays, verify_ms); reject stage verify, reasons not_reproduced and
# check_passes_at_start; steps.settle_timed_out, grounding.name_source; episodes.consent_action,
# reasons bot_wall and straggler (added columns only)
# 1.4: steps.path_screenshot, path_action_description and path_url (the minimal path,
# observed); grounding.accessible_name; the
# episodes' stop_note, verify_note, verify_network and verify_aborted; status failed_task
# (added columns only)
SCHEMA_VERSION = "1.4"


def read_committed(
    uri: str, table: str = "steps", endpoint_url: str | None = None
) -> pyarrow.dataset.Dataset:
    """The committed rows of a table of a datagen output (local folder or s3://), as a
    `pyarrow.dataset.Dataset`. Safe while a run is still writing. See docs/output.md."""
    from datagen.sink.read import read_committed as read

    return read(uri, table, endpoint_url)
