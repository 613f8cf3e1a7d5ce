"""Fake model endpoint for the runner harness (Python 3 stdlib only).

    fake_llm.py HOST PORT LOGFILE

Answers "ok" to
  * OpenAI   POST /v1/chat/completions            (streamed with "stream": true, or not)
             GET  /v1/models                      (one model, fake-model)
  * Gemini   POST /v1beta/models/M:generateContent
             POST /v1beta/models/M:streamGenerateContent?alt=sse
             POST /v1beta/models/M:countTokens
and appends one JSON line per request to LOGFILE:
  {"path": ..., "api": "openai"|"gemini"|"other", "model": ..., "tools": [names]}
where tools are `tools[].function.name` (OpenAI) or `tools[].functionDeclarations[].name`
(Gemini): the tool list exactly as the model receives it.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()


def openai_tool_names(req):
    names = []
    for t in req.get("tools") or []:
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if fn.get("name"):
                names.append(fn["name"])
    for f in req.get("functions") or []:  # legacy function calling
        if isinstance(f, dict) and f.get("name"):
            names.append(f["name"])
    return names


def gemini_tool_names(req):
    names = []
    for t in req.get("tools") or []:
        if not isinstance(t, dict):
            continue
        for key in ("functionDeclarations", "function_declarations"):
            for d in t.get(key) or []:
                if isinstance(d, dict) and d.get("name"):
                    names.append(d["name"])
    return names


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    logfile = None

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def _log(self, entry):
        with LOCK, open(self.logfile, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def _json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _sse(self, events, done=False):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for e in events:
            self.wfile.write(b"data: " + json.dumps(e).encode() + b"\n\n")
            self.wfile.flush()
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        path = self.path.split("?")[0]
        self._log({"t": round(time.time(), 3), "http": "GET", "path": path, "api": "other", "tools": []})
        if path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "created": 0, "owned_by": "harness",
                 "context_length": 128000}]})
        if "/v1beta/models" in path:
            return self._json(200, {"name": "models/gemini-2.5-flash", "inputTokenLimit": 1048576,
                                    "outputTokenLimit": 65536})
        return self._json(404, {"error": "not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            req = json.loads(raw) if raw else {}
        except ValueError:
            req = {}
        path = self.path.split("?")[0]
        now = round(time.time(), 3)
        if path.endswith("/chat/completions"):
            self._log({"t": now, "http": "POST", "path": path, "api": "openai",
                       "model": req.get("model"), "stream": bool(req.get("stream")),
                       "tools": openai_tool_names(req)})
            return self._openai(req)
        if "/models/" in path and ":" in path:
            verb = path.rsplit(":", 1)[1]
            self._log({"t": now, "http": "POST", "path": path, "api": "gemini",
                       "model": path.split("/models/")[1].split(":")[0],
                       "tools": gemini_tool_names(req)})
            if verb == "countTokens":
                return self._json(200, {"totalTokens": 1})
            return self._gemini(stream=verb == "streamGenerateContent")
        self._log({"t": now, "http": "POST", "path": path, "api": "other", "tools": []})
        return self._json(404, {"error": {"message": "fake_llm: unknown path " + path}})

    def _openai(self, req):
        model = req.get("model") or "fake-model"
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if not req.get("stream"):
            return self._json(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok"}}],
                "usage": usage})
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}
        events = [
            dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                 "finish_reason": None}]),
            dict(base, choices=[{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]),
            dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
        ]
        if (req.get("stream_options") or {}).get("include_usage"):
            events.append(dict(base, choices=[], usage=usage))
        return self._sse(events, done=True)

    def _gemini(self, stream):
        resp = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                                  "totalTokenCount": 2},
                "modelVersion": "gemini-2.5-flash"}
        if stream:
            return self._sse([resp])
        return self._json(200, resp)


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: fake_llm.py HOST PORT LOGFILE")
    Handler.logfile = argv[2]
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer((argv[0], int(argv[1])), Handler).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
