"""A reflector's stop: whenever it comes, the watch thread ends at once, even when the stop's
interrupt came while the watch was still being opened and so found nothing to break."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import cast

from occ.drivers.compute.kubernetes import cache, client, watched, watching


class _Stream:
    """A watch response that sends nothing until it is shut down or closed."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def stream(self, amount: int | None, decode_content: bool) -> Iterator[bytes]:
        self.closed.wait(30)
        yield from ()

    def shutdown(self) -> None:
        self.closed.set()

    def close(self) -> None:
        self.closed.set()

    def release_conn(self) -> None:
        pass


class _SlowToOpen:
    """An API with nothing to list whose watch opens only when the test lets it."""

    def __init__(self) -> None:
        self.opening = threading.Event()
        self.may_open = threading.Event()
        self.response = _Stream()

    def list_page(self, *arguments: object, **options: object) -> client.Page:
        return client.Page([], "1", None)

    def watch(self, *arguments: object, **options: object) -> _Stream:
        self.opening.set()
        self.may_open.wait(10)
        return self.response


def test_a_stop_while_the_watch_opens_ends_the_thread_at_once() -> None:
    api = _SlowToOpen()
    kind = watched.KINDS[0]
    stop = threading.Event()
    reflector = watching.Reflector(
        cast(client.KubernetesApi, api), kind, cache.ObjectCache([kind.kind]), stop
    )
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    try:
        assert api.opening.wait(10)
        stop.set()
        reflector.interrupt()  # the watch is not open yet: nothing to break
        api.may_open.set()

        thread.join(timeout=5)

        assert not thread.is_alive()
        assert api.response.closed.is_set()  # the late response was closed, not left open
    finally:
        api.may_open.set()
        api.response.close()
