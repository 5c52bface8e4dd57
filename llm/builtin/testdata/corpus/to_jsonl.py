#!/usr/bin/env python3
"""Converts dev.txt or zero.txt (hand-written) to JSON lines.

    python3 to_jsonl.py dev.txt > dev.jsonl

gen_train.py reads train_hand.txt, written in the same format, with lines
and parse below.
"""
import json
import sys


def lines(path):
    """Yields the items of a hand-written file: its lines but blank ones and # comments."""
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        yield line


def parse(line):
    """Splits "text => tool {args} | tool {args}" ("-" for no call) into text and its (tool, args) calls."""
    text, _, rhs = line.rpartition(" => ")
    calls = []
    if rhs.strip() != "-":
        for part in rhs.split(" | "):
            tool, _, args = part.strip().partition(" ")
            calls.append((tool, json.loads(args)))
    return text, calls


def main(path):
    for line in lines(path):
        if path.endswith("zero.txt"):
            why, text = line.split(" :: ", 1)
            print(json.dumps({"text": text.replace("\\n", "\n"), "calls": [], "why": why}, ensure_ascii=False))
            continue
        text, calls = parse(line)
        print(json.dumps({"text": text.replace("\\n", "\n"), "calls": [{"tool": t, "args": a} for t, a in calls]},
                         ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1])
