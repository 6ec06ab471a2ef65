"""Errors that end a run with a clear last console line and a meaningful exit code."""


class EngineError(Exception):
    """A failure of the run; its message becomes the last console line."""

    exit_code = 1


class OptionsError(EngineError):
    """The options given to the run are invalid."""

    exit_code = 2


class InputError(EngineError):
    """The input data cannot be processed (too few images, unreadable files, no overlap...)."""

    exit_code = 3
