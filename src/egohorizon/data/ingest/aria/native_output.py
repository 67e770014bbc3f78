"""projectaria-tools' own console output, sent to the debug log.

The library's C++ code prints to file descriptors 1 and 2 and has no log-level setting, so a call into it
runs inside ``native_output_to_log``: what it printed goes to the debug log (``egohorizon -v``), never
into the JSON a command prints.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator

log = logging.getLogger(__name__)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.contextmanager
def native_output_to_log(what: str) -> Iterator[None]:
    """Sends what projectaria-tools' C++ code prints while inside (coloured VRS INFO lines, "Loaded
    #EyeGazes: 4" on stdout, "Failed to parse eye gaze vergence file" when its first of two readers
    declines a Gen1 file) to this module's debug log: shown with ``egohorizon -v``, never mixed into
    the JSON a command prints. The library has no log-level setting, so its file descriptors 1 and 2
    are pointed at a temporary file for the call; our own checks report what matters."""
    try:
        saved = (os.dup(1), os.dup(2))
    except OSError:  # no descriptors to redirect (an embedding without stdout)
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:  # also when the library raises: what it printed explains why
            with contextlib.suppress(Exception):  # C stdio buffers what it prints to a non-terminal
                ctypes.CDLL(None).fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            for line in _ANSI.sub("", sink.read().decode("utf-8", errors="replace")).splitlines():
                if line.strip():
                    log.debug("projectaria-tools (%s): %s", what, line.strip())


