"""The pages of ``handoffs serve``: static files shipped in the package, served so they stay inert.

Each page is read once, with the team's title in it (escaped), and served with headers that forbid
scripts from anywhere else, framing and sniffing: everything a page shows arrives over its socket or the
JSON API and is rendered as text, never as HTML.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

PAGES = {"/": "index.html", "/operator": "operator.html", "/sessions": "sessions.html"}
ASSETS = {
    "app.css": "text/css",
    "chat.js": "text/javascript",
    "operator.js": "text/javascript",
    "sessions.js": "text/javascript",
    "common.js": "text/javascript",
    "waiting.js": "text/javascript",
    "waitlist.js": "text/javascript",
}
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def static(name: str) -> bytes:
    """A file of the pages as shipped."""
    return (resources.files("handoffs_runtime.web") / "static" / name).read_bytes()


def _page(name: str, title: str) -> bytes:
    """A page with the team's title in it (escaped: a team file is not HTML)."""
    return static(name).replace(b"{{title}}", html.escape(title).encode())


def page_routes(title: str) -> list[BaseRoute]:
    """The routes of the pages (titled ``title``) and their assets."""
    assets = {name: static(name) for name in ASSETS}

    def page(body: bytes) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            return Response(body, media_type="text/html; charset=utf-8", headers=HEADERS)

        return handler

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return Response("not found", status_code=404, headers=HEADERS)
        return Response(assets[name], media_type=ASSETS[name], headers=HEADERS)

    pages = [Route(path, page(_page(name, title))) for path, name in PAGES.items()]
    return [*pages, Route("/static/{name}", asset)]
