"""call_service's retries, with a stand-in client: a dropped first answer is asked again, only when allowed."""

from __future__ import annotations

import threading

import pytest

from timor_ros.common import ServiceCallError, call_service


class _Future:
    def __init__(self) -> None:
        self._done: list = []
        self._value = None

    def add_done_callback(self, callback) -> None:
        self._done.append(callback)

    def finish(self, value) -> None:
        self._value = value
        for callback in self._done:
            callback(self)

    def result(self):
        return self._value

    def exception(self):
        return None


class _DroppingClient:
    """Answers every request after the first ``drops`` ones, which are never answered (a dropped response)."""

    srv_name = "/modules_db/get_parameters"

    def __init__(self, drops: int) -> None:
        self.drops = drops
        self.sent = 0
        self.removed = 0

    def service_is_ready(self) -> bool:
        return True

    def call_async(self, request):
        self.sent += 1
        future = _Future()
        if self.sent > self.drops:
            threading.Timer(0.01, future.finish, args=(f"answer to {request}",)).start()
        return future

    def remove_pending_request(self, future) -> None:
        self.removed += 1


def test_a_dropped_answer_is_asked_again_when_attempts_allow():
    client = _DroppingClient(drops=2)
    assert call_service(client, "q", 0.2, attempts=3) == "answer to q"
    assert (client.sent, client.removed) == (3, 2)


def test_one_attempt_by_default_and_the_error_says_how_many():
    client = _DroppingClient(drops=1)
    with pytest.raises(ServiceCallError, match=r"did not answer within 0.2 s$"):
        call_service(client, "q", 0.2)
    assert client.sent == 1
    client = _DroppingClient(drops=5)
    with pytest.raises(ServiceCallError, match=r"within 0.1 s \(3 tries\)"):
        call_service(client, "q", 0.1, attempts=3)
    assert (client.sent, client.removed) == (3, 3)
