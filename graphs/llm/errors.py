"""The two ways a chat-model call can fail for good, so callers map them to one `error_type` each.

`ModelFailure` becomes `MODEL_FAILURE` and `ModelTimeout` becomes `TIMEOUT` (DESIGN.md §4). A reply that
arrived but could not be parsed is *not* an exception: the structured-output helper returns it as errors.
"""

from __future__ import annotations


class ModelFailure(Exception):
    """The provider could not give a usable answer (after our retries, or on an error not worth retrying).

    Attributes:
        reason: A short, secret-free description fit for a log line or the ERROR body's message.
        attempts: Provider requests the failed exchange made (set by `graphs.llm.ask.ask_model`;
            0 when unknown).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = 0


class ModelTimeout(ModelFailure):
    """The time budget (per-attempt timeout or the request deadline) ran out before the model answered."""
