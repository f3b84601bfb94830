"""Agent state between calls: sealed into an opaque signed token for the client, opened on the way back."""

from librarian_svc.state.token import StateCodec, TokenContents

__all__ = ["StateCodec", "TokenContents"]
