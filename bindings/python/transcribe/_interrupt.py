"""Ctrl-C during a library call.

Python runs a pending signal's handler at the first bytecode the main thread
executes after the C code that was running when the signal came; during a
run that is the entry of the abort callback, *before* its ``try``. The
default handler's KeyboardInterrupt then escapes the ctypes callback
("Exception ignored on calling ctypes callback"), the run goes on or
returns AbortedError, and the interrupt is lost. So for the length of a
call on the main thread the default SIGINT handler is swapped for one that
only records the signal: the callback sees it and stops the run, and the
call raises KeyboardInterrupt when it ends (also when the run ended before
the callback could see it). A handler the program installed is left alone.
"""

from __future__ import annotations

import signal
import threading
from typing import Any, Optional


class SigintDeferral:
    """Records SIGINT during a with-block; raises KeyboardInterrupt at its end."""

    def __init__(self) -> None:
        self.pending = False
        self._prev: Any = None
        self._installed = False

    def _record(self, signum: int, frame: Optional[Any]) -> None:
        self.pending = True

    def __enter__(self) -> "SigintDeferral":
        self.pending = False
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._prev = signal.signal(signal.SIGINT, self._record)
            self._installed = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            self._installed = False
            signal.signal(signal.SIGINT, self._prev)
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt
