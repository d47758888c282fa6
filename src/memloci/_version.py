"""The package version (layer: models; imports nothing): one place for
``memloci.__version__`` and the messages that name it."""

__version__ = "0.2.0"
