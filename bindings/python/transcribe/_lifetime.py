"""Lifetimes of C handles that other threads may be using when close() comes.

A C handle freed while a call on another thread still reads it is a
use-after-free (a crash at best). Two rules keep that from happening:

- ``CallGate``: close() waits for the calls in progress and refuses new ones
  (Model and Stream: their calls are bounded by one library call each).
- ``SharedHandle``: the handle is reference-counted; close() only marks it,
  and the last user frees it (VadModel: one VAD model is lent to runs of
  any number of models, and a run's lease may outlive the call that took it
  while an exception's traceback keeps the call's locals, so waiting for
  the users could wait for ever).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

from ._errors import InvalidArgumentError


class CallGate:
    """Counts the calls in progress on an object; close() waits for them."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._cv = threading.Condition()
        self._calls = 0
        self._closing = False

    @contextmanager
    def call(self) -> Iterator[None]:
        with self._cv:
            if self._closing:
                raise InvalidArgumentError(f"the {self._what} is closed")
            self._calls += 1
        try:
            yield
        finally:
            with self._cv:
                self._calls -= 1
                self._cv.notify_all()

    def close(self) -> None:
        """Refuses new calls, then waits for those in progress to end."""
        with self._cv:
            self._closing = True
            while self._calls:
                self._cv.wait()


class SharedHandle:
    """A C handle freed by the last of its owner and its leases."""

    def __init__(self, what: str, free: Callable[[int], None]) -> None:
        self._what = what
        self._free = free
        self._lock = threading.Lock()
        self._handle: Optional[int] = None
        self._leases = 0
        self._closed = False

    def set(self, handle: int) -> None:
        self._handle = handle

    @property
    def alive(self) -> bool:
        return bool(self._handle) and not self._closed

    def acquire(self) -> int:
        with self._lock:
            if self._closed or not self._handle:
                raise InvalidArgumentError(f"the {self._what} is closed")
            self._leases += 1
            return self._handle

    def release(self) -> None:
        with self._lock:
            self._leases -= 1
            last = self._closed and self._leases == 0
        if last:
            self._release_handle()

    def close(self) -> None:
        """No new leases; the handle is freed now or when the last lease ends."""
        with self._lock:
            self._closed = True
            last = self._leases == 0
        if last:
            self._release_handle()

    def _release_handle(self) -> None:
        with self._lock:
            h, self._handle = self._handle, None
        if h:
            self._free(h)

    def lease(self) -> "Lease":
        return Lease(self)


class Lease:
    """One use of a SharedHandle: ``handle`` stays valid until release()
    (or until the lease is collected: a run's parameters keep it)."""

    def __init__(self, shared: SharedHandle) -> None:
        self._shared: Optional[SharedHandle] = None
        self.handle = shared.acquire()
        self._shared = shared

    def release(self) -> None:
        s, self._shared = self._shared, None
        if s is not None:
            s.release()

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()
