"""The engine's one subscription: listeners of its events (engine.api's Event classes).

Events are delivered on the thread where the change happened (the writer
thread for jobs, the calling thread for a build or a delete), one listener
after the other. A listener's exception is logged and never reaches the
engine: announcing a change must not undo or fail it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from engine.api import Event

log = logging.getLogger("ctx.events")

Listener = Callable[[Event], None]


class Announcer:
    """Who listens, and the delivery of each event to all of them."""

    def __init__(self) -> None:
        self._listeners: tuple[Listener, ...] = ()
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Deliver every event to ``listener``; returns a function that unsubscribes."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = tuple(f for f in self._listeners if f is not listener)
        return unsubscribe

    @property
    def listened(self) -> bool:
        """Whether anyone listens (an event nobody hears need not be made)."""
        return bool(self._listeners)

    def emit(self, event: Event) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed on a %s event", event.kind)
