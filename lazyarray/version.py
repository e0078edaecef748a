"""The package's version (kept apart so that the runtime's cache keys and debug reports can
name it without importing the package)."""

__version__ = "0.1.0"
