#!/usr/bin/env python3
"""Writes dialogues_history.jsonl: the held-out multi-turn set for history
questions, invoice lists and invoice cancelling (issue 33 item 4).

Written, with the tool arguments each question must map to, before the
planner could route any of these (never tuned on: a miss found here is
fixed for its class, and the phrasing moves to the planner's unit tests,
never edited here). Same format and runner as dialogues_dev.jsonl
(actors/agent dialogues_test.go, TestDialoguesHistory): "sent" is what
must have been paid by the end of the turn, "calls" the model's tool
calls that turn ("*" matches any value).

    python3 gen_history.py > dialogues_history.jsonl
"""
import json
import random

NAMES = ["bob", "carol", "dave", "erin"]
CHAINS = ["base", "solana", "polygon", "stellar", "ethereum"]

# (phrasing, payment_history arguments). {n} a name, {c} a chain, {k} a count.
HISTORY = [
    ("show my last {k} payments", {"limit": "{k}"}),
    ("list the last {k} payments I made", {"limit": "{k}"}),
    ("what were my last {k} transactions?", {"limit": "{k}"}),
    ("my {k} most recent payments please", {"limit": "{k}"}),
    ("what was my last payment", {"limit": 1}),
    ("what did I send most recently?", {"limit": 1}),
    ("show me the last payment", {"limit": 1}),
    ("whats the latest payment i made", {"limit": 1}),
    ("did the payment to {n} go through?", {"recipient": "{n}"}),
    ("has {n} been paid yet?", {"recipient": "{n}"}),
    ("did my transfer to {n} arrive?", {"recipient": "{n}"}),
    ("is the payment to {n} confirmed?", {"recipient": "{n}"}),
    ("what happened to the money I sent {n}?", {"recipient": "{n}"}),
    ("status of my payment to {n}", {"recipient": "{n}"}),
    ("did {n} get the money?", {"recipient": "{n}"}),
    ("how much have I paid {n}?", {"recipient": "{n}"}),
    ("what did I pay {n} last week?", {"recipient": "{n}", "since": "7d"}),
    ("how much did I send {n} this week", {"recipient": "{n}", "since": "*"}),
    ("payments to {n}", {"recipient": "{n}"}),
    ("show everything I sent to {n}", {"recipient": "{n}"}),
    ("what did I pay last week?", {"since": "7d"}),
    ("what did I spend in the last 7 days", {"since": "7d"}),
    ("payments from the past 24 hours", {"since": "24h"}),
    ("what did i send yesterday", {"since": "*", "until": "*"}),
    ("show today's payments", {"since": "*"}),
    ("what have I paid this month?", {"since": "*"}),
    ("how much did I send on {c}?", {"chain": "{c}"}),
    ("show my payments on {c}", {"chain": "{c}"}),
    ("how much usdc have I sent?", {"asset": "USDC"}),
    ("list my eth payments", {"asset": "ETH"}),
    ("any pending payments?", {"status": "open"}),
    ("is anything still on its way?", {"status": "open"}),
    ("do I have payments in flight", {"status": "open"}),
    ("which payments failed?", {"status": "failed"}),
    ("show failed transactions", {"status": "failed"}),
    ("were any payments refused?", {"status": "refused"}),
    ("show confirmed payments", {"status": "confirmed"}),
    ("show my payment history", {}),
    ("what have I paid so far?", {}),
    ("list my outgoing payments", {}),
    ("show me my transaction history", {}),
]

# (phrasing, check_invoices arguments). The arguments are {}: the frozen
# single-turn dev set (dev.jsonl: "which invoices are unpaid?",
# "are any invoices paid?") fixes check_invoices without a status for
# these questions, so the builtin planner lists them all and its answer
# says which are open; the status filter is for hosted models. (Labelled
# {"status": …} at first; corrected before any planner change.)
INVOICES = [
    ("which invoices are unpaid?", {}),
    ("any unpaid invoices?", {}),
    ("show my open invoices", {}),
    ("what invoices are still outstanding", {}),
    ("which of my invoices have been paid?", {}),
    ("list paid invoices", {}),
    ("show expired invoices", {}),
]

# Cancelling the invoice just created.
CANCEL_THAT = ["cancel that invoice", "actually, cancel it", "cancel the invoice", "delete that invoice",
               "void the invoice I just made", "scrap that invoice", "never mind, cancel the invoice"]
# Cancelling by what it asks for: (phrasing, arguments).
CANCEL_BY = [
    ("cancel the invoice for {a} usdc", {"amount": "{a}", "asset": "USDC"}),
    ("please void my {a} usdc invoice", {"amount": "{a}", "asset": "USDC"}),
    ("cancel the {m} invoice", {"memo": "{m}"}),
    ("cancel invoice {id}", {"invoice_id": "{id}"}),
]
MEMOS = ["hosting", "logo", "consulting", "design"]
FOLLOW_NAME = ["what about {m}?", "and {m}?", "how about to {m}"]
FOLLOW_CHAIN = ["and on {c}?", "what about {c}?"]
AFTER = ["thanks", "yes", "ok", "great, thank you", "go ahead"]


def fill(v, **kw):
    if isinstance(v, str):
        s = v.format(**kw)
        return int(s) if v == "{k}" else s
    return v


def args_of(tmpl, **kw):
    return {k: fill(v, **kw) for k, v in tmpl.items()}


def main():
    rng = random.Random(34)
    pick = rng.choice
    out, seen = [], set()

    def paid(n, a):
        return {"user": "send %s usdc to %s" % (a, n), "sent": [{"to": n, "amount": a, "asset": "USDC"}]}

    def history():
        n = pick(NAMES); m = pick([x for x in NAMES if x != n])
        text, tmpl = pick(HISTORY)
        kw = dict(n=n, c=pick(CHAINS), k=pick([2, 3, 5, 10]))
        a = pick(["3", "5", "12"])
        turns = [paid(n, a), {"user": text.format(**kw), "sent": [], "calls": [{"tool": "payment_history", "args": args_of(tmpl, **kw)}]}]
        r = rng.random()
        if r < 0.3:
            turns.append({"user": pick(AFTER), "sent": []})
        elif r < 0.45 and "recipient" in tmpl:
            follow = args_of(tmpl, **kw)
            follow["recipient"] = m
            turns.append({"user": pick(FOLLOW_NAME).format(m=m), "sent": [], "calls": [{"tool": "payment_history", "args": follow}]})
        elif r < 0.55 and "recipient" not in tmpl and "chain" not in tmpl and "limit" not in tmpl:
            c = pick(CHAINS)
            follow = args_of(tmpl, **kw)
            follow["chain"] = c
            turns.append({"user": pick(FOLLOW_CHAIN).format(c=c), "sent": [], "calls": [{"tool": "payment_history", "args": follow}]})
        return "history", turns

    def invoices():
        text, tmpl = pick(INVOICES)
        a = pick(["5", "20", "40"])
        return "invoice_status", [
            {"user": "create an invoice for %s usdc for %s" % (a, pick(MEMOS)), "sent": []},
            {"user": text, "sent": [], "calls": [{"tool": "check_invoices", "args": tmpl}]},
            {"user": pick(AFTER), "sent": []}]

    def cancel_that():
        a = pick(["5", "20", "40"])
        return "cancel_that_invoice", [
            {"user": "create an invoice for %s usdc for %s" % (a, pick(MEMOS)), "sent": []},
            {"user": pick(CANCEL_THAT), "sent": [], "calls": [{"tool": "cancel_invoice", "args": {"invoice_id": "*"}}]},
            {"user": pick(AFTER), "sent": []}]

    def cancel_by():
        a = pick(["5", "20", "40"]); memo = pick(MEMOS)
        text, tmpl = pick(CANCEL_BY)
        kw = dict(a=a, m=memo, id=pick(["3f2a9c1e", "8b0d4e77-1c2a"]))
        return "cancel_invoice_by", [
            {"user": "create an invoice for %s usdc for %s" % (a, memo), "sent": []},
            {"user": text.format(**kw), "sent": [], "calls": [{"tool": "cancel_invoice", "args": args_of(tmpl, **kw)}]}]

    gens = [history, history, history, invoices, cancel_that, cancel_by]
    i = 0
    while len(out) < 120 and i < 100000:
        cls, turns = gens[i % len(gens)]()
        i += 1
        key = json.dumps(turns, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        out.append({"class": cls, "turns": turns})
    for d in out:
        print(json.dumps(d))


if __name__ == "__main__":
    main()
