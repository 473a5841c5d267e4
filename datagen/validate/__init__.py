"""Validation: small pure rules; each returns a reject reason, or None when the record passes."""

from datagen.validate.rules import check_grounding, check_step

__all__ = ["check_grounding", "check_step"]
