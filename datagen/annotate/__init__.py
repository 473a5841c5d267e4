"""Annotation: grounding rows (element box + referring expression) from each observation;
each step's action in words (`describe.py`); an ended episode's hindsight relabel
(`relabel.py`)."""

from datagen.annotate.grounding import grounding_rows, referring_expression

__all__ = ["grounding_rows", "referring_expression"]
