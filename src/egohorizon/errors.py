"""Errors a person can act on: raised by library code, printed (without a traceback) by the CLI."""


class EgohorizonError(Exception):
    """A problem with the user's input or setup; the message says what to fix."""


class ConfigError(EgohorizonError):
    """A configuration that cannot work (missing file, wrong combination of options)."""


class DataError(EgohorizonError):
    """Input data that is malformed, corrupt or missing; the message names the file and field."""
