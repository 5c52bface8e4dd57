#!/usr/bin/env python3
"""Independent check of Veil webhook signatures (docs/webhooks.md), written
against the documentation with Python's standard library only.

Reads JSON lines {"secret", "signature", "body"} on stdin (body as sent,
base64) and prints one line per input: "ok <event id>" or "bad <reason>".
"""
import base64
import hashlib
import hmac
import json
import sys


def check(secret: str, header: str, body: bytes) -> str:
    parts = dict(p.split("=", 1) for p in header.split(","))
    if set(parts) != {"t", "v1"}:
        return "bad header " + header
    signed = parts["t"].encode() + b"." + body
    want = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, parts["v1"]):
        return "bad signature"
    event = json.loads(body)
    if sorted(event) != ["agentId", "createdAt", "data", "id", "type"]:
        return "bad body keys %s" % sorted(event)
    return "ok " + event["id"]


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    req = json.loads(line)
    print(check(req["secret"], req["signature"], base64.b64decode(req["body"])), flush=True)
