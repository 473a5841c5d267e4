"""Annotation: grounding rows (element box + referring expression) from each observation."""

from datagen.annotate.grounding import grounding_rows, referring_expression

__all__ = ["grounding_rows", "referring_expression"]
