"""The errors a user can cause, one class per kind: every command turns each of them into one
line, `error: ...` (annotated.base.cli), whose message names the file or setting, what was
expected and found, and the fix. Anything else that goes wrong is a bug and keeps its
traceback."""


class ConfigError(ValueError):
    """A setting that is unknown or out of its allowed range."""


class DataError(ValueError):
    """A file the user gave that cannot be used as it is: the message names it and the fix."""


class DownloadError(DataError):
    """A download that could not be made: its server unreachable, or the file not there."""


class CheckpointError(ValueError):
    """A checkpoint file that is missing, damaged, unreadable, or of another format version."""


class DeviceError(ValueError):
    """A device this machine does not have (e.g. --device cuda without a GPU)."""


class Diverged(RuntimeError):
    """The training loss is not finite, or far above a uniform guess or the run's recent
    losses: stop, do not update."""


class RunDirError(OSError):
    """A run folder that cannot be used: locked by another trainer, or not writable."""


#: What a command reports in one line (OSError: a file that cannot be read or written).
USER_ERRORS = (ConfigError, DataError, CheckpointError, DeviceError, Diverged, OSError)
