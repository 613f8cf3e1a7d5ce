"""Tiny Streamable HTTP MCP server for the runner harness (mcp==2.3.0).

    mcp_server.py HOST PORT LOGFILE [--token SECRET] [--bare]

Serves at http://HOST:PORT/mcp the tools alpha, beta and gamma, one resource and one prompt
(so runners that turn resources/prompts into utility tools show them unless filtered).
Every HTTP request is logged to LOGFILE as one JSON line: the JSON-RPC method(s), the
User-Agent and whether the Authorization header matched. With --token, a request without
`Authorization: Bearer SECRET` is refused with 401 (and logged with "auth": "missing"/"bad").
With --bare, the server has the three tools only and advertises no resources/prompts
capability.
Runs with the cached venv: $CLAWC_RUNNER_CACHE/bin/mcp-python mcp_server.py ...
"""

import json
import sys
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

server = MCPServer("loop")


@server.tool()
def alpha(text: str = "") -> str:
    """Alpha: echo the text."""
    return "alpha:" + text


@server.tool()
def beta(text: str = "") -> str:
    """Beta: echo the text."""
    return "beta:" + text


@server.tool()
def gamma(text: str = "") -> str:
    """Gamma: must never be visible to an agent that was granted alpha and beta only."""
    return "gamma:" + text


def status() -> str:
    """Loop status resource."""
    return "ok"


def greet(name: str = "world") -> str:
    """Greeting prompt."""
    return f"Say hello to {name}."


def add_resource_and_prompt():
    server.resource("loop://status")(status)
    server.prompt()(greet)


def logging_app(app, logfile, token):
    """ASGI wrapper: log JSON-RPC methods and enforce the bearer token."""

    def log(entry):
        with open(logfile, "a") as f:
            f.write(json.dumps(entry) + "\n")

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        body = b""
        more = True
        while more:
            msg = await receive()
            body += msg.get("body", b"")
            more = msg.get("more_body", False)
        methods = []
        try:
            data = json.loads(body) if body else None
            for m in data if isinstance(data, list) else [data]:
                if isinstance(m, dict):
                    methods.append(m.get("method") or ("result" if "result" in m else "?"))
        except ValueError:
            pass
        auth = headers.get("authorization")
        auth_state = "none-required"
        if token is not None:
            auth_state = "ok" if auth == "Bearer " + token else ("missing" if auth is None else "bad")
        log({"t": round(time.time(), 3), "http": scope["method"], "path": scope["path"],
             "methods": methods, "ua": headers.get("user-agent", ""), "auth": auth_state,
             "auth_header": auth})
        if token is not None and auth_state != "ok":
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
            return

        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return wrapped


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: mcp_server.py HOST PORT LOGFILE [--token SECRET]")
    host, port, logfile = argv[0], int(argv[1]), argv[2]
    token = argv[argv.index("--token") + 1] if "--token" in argv else None
    if "--bare" not in argv:
        add_resource_and_prompt()
    else:
        # MCPServer registers resource/prompt handlers, and so advertises those capabilities,
        # even with none defined: drop the handlers so the server offers tools only.
        handlers = server._lowlevel_server._request_handlers
        for m in [m for m in handlers if m.startswith(("resources/", "prompts/"))]:
            del handlers[m]
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        # The runners reach us as http://<test address>:PORT; no Host-header allow-list.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    uvicorn.run(logging_app(app, logfile, token), host=host, port=port, log_level="warning",
                lifespan="on")


if __name__ == "__main__":
    main(sys.argv[1:])
