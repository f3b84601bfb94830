"""HEAD answered as the GET of the same path, without its body (RFC 9110 §9.3.2).

Every general-purpose server must answer HEAD wherever it answers GET, and monitors and load balancers
probe with it; Litestar routes a HEAD only to handlers declared for it, so `HEAD /health` was a 405. This
middleware, outside routing, hands the app a GET and passes on its status and headers (`Content-Length`
included, as the GET's) with an empty body. The access line still says HEAD (the request context reads the
caller's scope). A 405's `Allow` names HEAD beside GET (`allow_with_head`, applied where 405s are answered,
`librarian_svc.errors`), and so does an OPTIONS answer (here); other requests pass through untouched.

An OPTIONS answer's `Allow` is also rebuilt from the app's final routes: Litestar 2's own OPTIONS handler
lists only the methods of the first handler registered on a path (`OPTIONS /playbooks/{dataset}` said
`GET` without `PUT`; litestar-org/litestar#4169, fixed in Litestar 3), while its 405 lists them all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

from litestar.routes import BaseRoute, HTTPRoute
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send


def allow_with_head(allow: str) -> str:
    """An `Allow` header's methods with HEAD added wherever GET is listed (this middleware answers it there)."""
    methods = [m.strip() for m in allow.split(",") if m.strip()]
    if "GET" in methods and "HEAD" not in methods:
        return ", ".join(sorted([*methods, "HEAD"]))
    return allow


def _with_head(allow: bytes) -> bytes:
    return allow_with_head(allow.decode("latin-1")).encode("latin-1")


def methods_by_path(routes: Iterable[BaseRoute]) -> dict[str, bytes]:
    """Each HTTP path template (`/playbooks/{dataset}`) with its `Allow`: its handlers' methods, HEAD beside GET."""
    found: dict[str, set[str]] = {}
    for route in routes:
        if isinstance(route, HTTPRoute):
            found.setdefault(route.path_format, set()).update(route.methods)
    return {path: _with_head(", ".join(sorted(methods)).encode("latin-1")) for path, methods in found.items()}


def _listing_head(send: Send, scope: Scope, allowed: Mapping[str, bytes]) -> Send:
    """`send` with an OPTIONS answer's `Allow` naming every method of the routed path, and HEAD beside GET."""

    async def send_allow(message: Message) -> None:
        if message["type"] == "http.response.start":
            routed = allowed.get(cast(dict[str, str], scope).get("path_template", ""))
            message["headers"] = [
                (name, (routed or _with_head(value)) if name.lower() == b"allow" else value)
                for name, value in message.get("headers", [])
            ]
        await send(message)

    return send_allow


def answer_head_as_get(app: ASGIApp, allowed: Mapping[str, bytes] | None = None) -> ASGIApp:
    """Wrap `app` so that HEAD is served by its GET handlers, without the body, and OPTIONS lists HEAD.

    Args:
        app: The app's ASGI handler.
        allowed: `methods_by_path` of the app's routes, for OPTIONS answers (none: Litestar's `Allow` is kept).
    """
    by_path = allowed or {}

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        method = cast(HTTPScope, scope)["method"] if scope["type"] == "http" else ""  # type: ignore[comparison-overlap]
        if method == "OPTIONS":
            await app(scope, receive, _listing_head(send, scope, by_path))
            return
        if method != "HEAD":
            await app(scope, receive, send)
            return

        async def send_head(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # a streamed body's chunks are dropped; its last message ends the response
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        # A copy: the server keeps its own scope saying HEAD (uvicorn then writes no body either).
        await app(cast(HTTPScope, {**scope, "method": "GET"}), receive, send_head)

    return wrapped
