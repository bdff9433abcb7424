"""``hiersum serve`` whose inference worker holds a request until the test lets it go, so that a serving test
orders "decoding" against its other requests by events instead of by a decode long enough on an idle machine:
``python -m tests.helpers.gated_serve serve checkpoint=... ...`` with ``$HIERSUM_TEST_GATES`` a folder. A
request whose record id starts with ``gated-`` (:data:`tests.helpers.serving.GATED`) waits, before it is decoded,
until the file of its id exists in that folder (:func:`tests.helpers.serving.open_gate`), and marks the one it holds
(:func:`tests.helpers.serving.held_in_the_worker`); the others are decoded at once.

The hook replaces :meth:`hiersum.serving.api.Responder.answer` when this module is imported: in the server's main
process, in the HTTP processes LitServe forks from it, and in each inference worker it spawns (a spawned process
imports the parent's ``-m`` module as ``__mp_main__`` first), so no production code carries a test knob."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hiersum.serving.api import Responder
from tests.helpers.serving import GATED, GATES_VARIABLE, HELD_SUFFIX

_answer = Responder.answer


def _gated_answer(self: Responder, requests: list) -> list:
    gates = Path(os.environ[GATES_VARIABLE])
    for request in requests:
        if request.example.id.startswith(GATED):
            (gates / f"{request.example.id}{HELD_SUFFIX}").touch()  # which one the worker holds: the test reads it
        while request.example.id.startswith(GATED) and not (gates / request.example.id).exists():
            time.sleep(0.01)  # a wait on the test's event (the file), not on the clock
    return _answer(self, requests)


Responder.answer = _gated_answer  # type: ignore[method-assign]

if __name__ == "__main__":
    from hiersum.cli.main import main

    main()
