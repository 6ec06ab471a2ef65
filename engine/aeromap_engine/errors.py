"""Errors that end a run with a clear last console line and a meaningful exit code."""

import signal


class EngineError(Exception):
    """A failure of the run; its message becomes the last console line."""

    exit_code = 1


class OptionsError(EngineError):
    """The options given to the run are invalid."""

    exit_code = 2


class InputError(EngineError):
    """The input data cannot be processed (too few images, unreadable files, no overlap...)."""

    exit_code = 3


class ProcessKilled(EngineError):
    """A process of the run ended by a signal. The exit code is the shell's for that signal: a SIGKILL, most often
    the kernel's out-of-memory killer, ends the run with 137, as if the engine itself had been killed."""

    def __init__(self, what: str, signum: int) -> None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        cause = " (most likely the system ran out of memory)" if signum == signal.SIGKILL else ""
        super().__init__(f"{what} was stopped by signal {name}{cause}")
        self.exit_code = 128 + signum


class WorkerKilled(EngineError):
    """A worker process of a parallel step ended without a result: the kernel kills no other way, and it kills
    for memory. Its exit code is the out-of-memory killer's, as the node reports lack of memory by it."""

    exit_code = 128 + signal.SIGKILL

    def __init__(self, what: str) -> None:
        super().__init__(f"A worker process of {what} was killed, most likely because the system ran out of memory: "
                         "run with fewer parallel processes (max-concurrency) or on a machine with more memory")
