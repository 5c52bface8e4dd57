#!/usr/bin/env python3
"""Converts dev.txt or zero.txt (hand-written) to JSON lines."""
import json
import sys

for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line.strip() or line.startswith("#"):
        continue
    if sys.argv[1].endswith("zero.txt"):
        why, text = line.split(" :: ", 1)
        print(json.dumps({"text": text.replace("\\n", "\n"), "calls": [], "why": why}, ensure_ascii=False))
        continue
    text, _, rhs = line.rpartition(" => ")
    calls = []
    if rhs.strip() != "-":
        for part in rhs.split(" | "):
            tool, _, args = part.strip().partition(" ")
            calls.append({"tool": tool, "args": json.loads(args)})
    print(json.dumps({"text": text.replace("\\n", "\n"), "calls": calls}, ensure_ascii=False))
