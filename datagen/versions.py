"""The package's version and the output schema's: the ground floor, importing nothing.

Every module that writes a version into a row, a marker or a manifest imports them from here,
never from the package root (`datagen/__init__.py` imports the sink lazily for
`read_committed`: an import of the root from inside the package would close a circle,
tests/unit/test_architecture.py).
"""

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
# 1.5: episodes.verify_requests (every request of the replays, by fate, kind, method and host);
# steps.needed null for steps a reduced verification never decided (added columns only)
# 1.6: the tasks table (synthesised tasks, issue 43); SuccessCheck's element kind (added only)
# 1.7: tasks.fail_json, fail_episodes and writes (a synthesised task's fail check and the
# writes its demonstration sent) (added columns only)
# 1.8: episodes.final_state_json and acted_json, tasks.demo_element (what run-wide
# specificity reads); tasks.dropped_at transient (added columns only)
SCHEMA_VERSION = "1.8"
