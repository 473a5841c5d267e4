"""datagen: training data for computer-use agents, from real browsers at scale."""

__version__ = "0.1.0"
SCHEMA_VERSION = "1.0"
