"""Security headers on every answer: ``nosniff`` everywhere, and a Content-Security-Policy on the web page.

The page at ``/ui`` renders memories other people wrote; it builds every element with
``textContent`` and ``setAttribute`` (no ``innerHTML``), and ``default-src 'self'`` is the
second wall: were a text ever to become markup, no inline script, no script from elsewhere and
no request to another origin would run. ``nosniff`` stops a browser from reading a JSON answer
that carries a user's text as HTML. Plain ASGI, so streamed answers (MCP) pass through unbuffered.
"""

from __future__ import annotations

from serving.limits import ASGIApp, Message, Receive, Scope, Send

CSP = b"default-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
PAGE = "/ui"


class SecurityHeaders:
    def __init__(self, app: ASGIApp, page: str = PAGE):
        self.app, self.page = app, page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        on_page = path == self.page or path.startswith(self.page + "/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() not in (b"x-content-type-options", b"content-security-policy")]
                headers.append((b"x-content-type-options", b"nosniff"))
                if on_page:
                    headers.append((b"content-security-policy", CSP))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
