#!/usr/bin/env python3
"""Writes dialogues_train.jsonl and dialogues_dev.jsonl: the multi-turn corpus.

Each line is one conversation of 2-4 turns, run through the agent actor
with the builtin planner against a fake ethereum (actors/agent
dialogues_test.go). A turn states what the user says and what must have
been paid by the end of it ("sent": [] means nothing); "calls", when
present, are the tool calls the model must make in that turn ("*" matches
any value); "after" moves the clock first (a pending action expires).

The two files share no phrasing pool: train's phrasings are what the
planner is built on, dev's are held out (written before the planner's
multi-turn code, and never tuned on; a miss found there goes to train and
dev gets fresh items).

    python3 gen_dialogues.py train > dialogues_train.jsonl
    python3 gen_dialogues.py dev > dialogues_dev.jsonl
"""
import json
import random
from decimal import Decimal
import sys

POOLS = {
    "train": dict(
        seed=7,
        names=["bob", "carol", "dave", "erin"],
        yes=["yes", "yes go ahead", "yup", "go for it", "confirm it", "that's right, send it", "correct", "do it"],
        no=["no", "nah", "cancel it", "don't do it", "abort"],
        bare=["pay {n} {a}", "send {n} {a}", "give {n} {a}"],
        # "I meant usdc" was a dev miss (a statement the gate refused, so
        # the ETH question stayed open): moved here, dev got a fresh phrasing.
        asset_reply=["usdc", "in usdc", "I meant usdc"],
        repeat=["do it again", "again please", "repeat that"],
        same=["the same to {m}", "same for {m}"],
        correction=["send {a} usdc to {n}, no actually make it {b}", "pay {n} {a} usdc, sorry I meant {b}"],
        pronoun=[("who is {n}", "send {p} {a} usdc")],
        cancel_schedule=["cancel that", "undo that"],
        other_chain=["and on {c}?", "what about {c}?"],
        change=["make it {b} usdc"],
        quoted=["what does 'send {a} usdc to {n}' mean?", "{m}: send {a} usdc to {n}", "'pay {n} {a} usdc' is what {m} wrote"],
        owner_rule=["always ask me before paying more than {a} usdc"],
        unrelated=["what's my balance"],
        units=[("send {k} gwei to {n}", "gwei"), ("send {k}k usdc to {n}", "k"), ("send {c} cents to {n}", "cents")],
        count=60,
    ),
    "dev": dict(
        seed=33,
        names=["bob", "carol", "dave", "erin"],
        yes=["yes", "Yes please", "yep", "sure", "go ahead", "confirm", "yes, send it", "ok go", "yeah do it",
             "confirmed", "sounds good, go ahead", "y", "absolutely", "Yes!", "please do", "okay, send it"],
        no=["no", "cancel", "nope", "don't", "never mind", "no thanks", "forget it", "cancel that", "no, don't send it", "stop"],
        bare=["pay {n} {a}", "send {n} {a}", "send {a} to {n}", "can you pay {n} {a}", "transfer {a} to {n} please", "tip {n} {a}"],
        asset_reply=["USDC please", "usdc", "in usdc", "oh, in usdc instead"],
        repeat=["again", "same again", "send it again", "one more time", "do that again please", "repeat it"],
        same=["and the same to {m}", "do the same for {m}", "same to {m}", "now {m} too, same amount", "the same for {m} please"],
        correction=["send {a} usdc to {n}, no actually make it {b}", "transfer {a} usdc to {n}... scratch that, {b}",
                    "send {n} {a} usdc, wait, make that {b}", "pay {n} {a} USDC - sorry, I meant {b}", "send {a} usdc to {n} no wait {b}"],
        pronoun=[("look up {n}", "send {p} {a} usdc"), ("who is {n}?", "pay {p} {a} usdc"), ("is {n} registered?", "ok send {p} {a} usdc")],
        cancel_schedule=["cancel that", "actually cancel it", "stop that schedule", "undo that", "cancel it please"],
        other_chain=["and on {c}?", "how about {c}", "what about on {c}?", "and {c}?"],
        change=["make it {b} usdc", "actually {b} usdc", "change it to {b} usdc"],
        quoted=["what does 'send {a} usdc to {n}' mean?", "{m}: send {a} usdc to {n}", "'pay {n} {a} usdc' is what {m} wrote",
                "\"send {a} usdc to {n}\" was the subject of the email", "explain 'pay {n} {a} usdc' to me",
                "can you quote 'send {n} {a} usdc' back to me"],
        owner_rule=["always ask me before paying more than {a} usdc", "I want you to ask me before any payment over {a} usdc",
                    "never pay more than {a} usdc without asking me"],
        unrelated=["what's my balance", "show my invoices", "who am I"],
        units=[("send {k} gwei to {n}", "gwei"), ("send {k} wei to {n}", "wei"), ("send {k}k usdc to {n}", "k"),
               ("send {c} cents to {n}", "cents"), ("pay {n} {k} gwei", "gwei")],
        count=220,
    ),
}

BALANCE_CHAINS = ["solana", "base", "polygon", "stellar"]


def dec(x):
    return format(Decimal(x).normalize(), "f")


def main(which):
    p = POOLS[which]
    rng = random.Random(p["seed"])
    names = p["names"]
    pick = rng.choice

    def two():
        n = pick(names)
        m = pick([x for x in names if x != n])
        return n, m

    def amt():
        return pick(["3", "5", "7", "12", "20", "1.5", "40", "0.25"])

    def sent(to, a, asset):
        return [{"to": to, "amount": a, "asset": asset}]

    classes = []

    def bare_yes():
        n, _ = two(); a = pick(["3", "5", "7", "12", "2"])
        return "bare_yes", [{"user": pick(p["bare"]).format(n=n, a=a), "sent": []},
                            {"user": pick(p["yes"]), "sent": sent(n, a, "ETH")}]

    def bare_asset():
        n, _ = two(); a = pick(["3", "5", "7", "12", "2"])
        return "bare_asset", [{"user": pick(p["bare"]).format(n=n, a=a), "sent": []},
                              {"user": pick(p["asset_reply"]), "sent": []},
                              {"user": pick(p["yes"]), "sent": sent(n, a, "USDC")}]

    def bare_no():
        n, _ = two(); a = pick(["3", "5", "7", "12", "2"])
        return "bare_no", [{"user": pick(p["bare"]).format(n=n, a=a), "sent": []},
                           {"user": pick(p["no"]), "sent": []},
                           {"user": pick(p["yes"]), "sent": []}]

    def repeat():
        n, _ = two(); a = amt()
        return "repeat", [{"user": "send %s usdc to %s" % (a, n), "sent": sent(n, a, "USDC")},
                          {"user": pick(p["repeat"]), "sent": []},
                          {"user": pick(p["yes"]), "sent": sent(n, a, "USDC")}]

    def same():
        n, m = two(); a = amt()
        return "same_to", [{"user": "send %s usdc to %s" % (a, n), "sent": sent(n, a, "USDC")},
                           {"user": pick(p["same"]).format(m=m), "sent": []},
                           {"user": pick(p["yes"]), "sent": sent(m, a, "USDC")}]

    def correction():
        n, _ = two(); a = pick(["5", "10", "20"]); b = pick(["6", "8", "15", "25"])
        return "correction", [{"user": pick(p["correction"]).format(n=n, a=a, b=b), "sent": []},
                              {"user": pick(p["yes"]), "sent": sent(n, b, "USDC")}]

    def units():
        n, _ = two()
        tmpl, unit = pick(p["units"])
        if unit in ("gwei", "wei"):
            k = pick([5, 20, 150, 3000])
            v = dec(Decimal(k) / Decimal(10) ** (9 if unit == "gwei" else 18))
            return "units_" + unit, [{"user": tmpl.format(n=n, k=k), "sent": []},
                                      {"user": pick(p["yes"]), "sent": sent(n, v, "ETH")}]
        if unit == "k":
            k = pick([1, 2, 5])
            return "units_k", [{"user": tmpl.format(n=n, k=k), "sent": []},
                               {"user": pick(p["yes"]), "sent": sent(n, str(k * 1000), "USDC")}]
        c = pick([50, 75, 5, 120])
        return "units_cents", [{"user": tmpl.format(n=n, c=c), "sent": []},
                               {"user": pick(p["yes"]), "sent": sent(n, dec(Decimal(c) / 100), "USDC")}]

    def unrelated():
        n, _ = two(); a = pick(["3", "5", "7"])
        return "pending_survives", [{"user": pick(p["bare"]).format(n=n, a=a), "sent": []},
                                    {"user": pick(p["unrelated"]), "sent": []},
                                    {"user": pick(p["yes"]), "sent": sent(n, a, "ETH")}]

    def expired():
        n, _ = two(); a = pick(["3", "5", "7"])
        return "pending_expires", [{"user": pick(p["bare"]).format(n=n, a=a), "sent": []},
                                   {"user": pick(p["yes"]), "sent": [], "after": "20m"}]

    def pronoun():
        n, _ = two(); a = amt()
        first, second = pick(p["pronoun"])
        pr = pick(["him", "her", "them"])
        return "pronoun", [{"user": first.format(n=n), "sent": []},
                           {"user": second.format(p=pr, a=a), "sent": []},
                           {"user": pick(p["yes"]), "sent": sent(n, a, "USDC")}]

    def cancel_schedule():
        n, _ = two(); a = amt()
        return "cancel_schedule", [
            {"user": "send %s usdc to %s every week" % (a, n), "sent": [],
             "calls": [{"tool": "schedule_payment", "args": {"recipient": n, "amount": a, "asset": "USDC", "interval": "weekly"}}]},
            {"user": pick(p["cancel_schedule"]), "sent": [],
             "calls": [{"tool": "manage_schedule", "args": {"schedule_id": "*", "action": "cancel"}}]}]

    def other_chain():
        c = pick(BALANCE_CHAINS)
        return "other_chain", [{"user": "what's my balance", "sent": [], "calls": [{"tool": "get_balance", "args": {}}]},
                               {"user": pick(p["other_chain"]).format(c=c), "sent": [],
                                "calls": [{"tool": "get_balance", "args": {"chain": c}}]}]

    def change():
        n, _ = two(); a = pick(["3", "5"]); b = pick(["7", "9", "11"])
        return "change_pending", [{"user": pick(p["bare"]).format(n=n, a=a), "sent": []},
                                  {"user": pick(p["change"]).format(b=b), "sent": []},
                                  {"user": pick(p["yes"]), "sent": sent(n, b, "USDC")}]

    def quoted():
        n, m = two(); a = amt()
        return "quoted", [{"user": pick(p["quoted"]).format(n=n, m=m, a=a), "sent": []},
                          {"user": pick(p["yes"]), "sent": []}]

    def owner_rule():
        a = pick(["50", "100", "250"])
        return "owner_rule", [{"user": pick(p["owner_rule"]).format(a=a), "sent": [], "calls": []},
                              {"user": pick(p["yes"]), "sent": []}]

    def paid_then_yes():
        n, _ = two(); a = amt()
        return "no_double_pay", [{"user": "send %s usdc to %s" % (a, n), "sent": sent(n, a, "USDC")},
                                 {"user": pick(p["yes"]), "sent": []}]

    def test_memo():
        a = amt()
        return "invoice_test_memo", [
            {"user": "create an invoice for %s usdc for the test run" % a, "sent": [],
             "calls": [{"tool": "create_invoice", "args": {"amount": a, "asset": "USDC", "memo": "the test run"}}]},
            {"user": pick(p["yes"]), "sent": [], "calls": []}]

    gens = [bare_yes, bare_asset, bare_no, repeat, same, correction, units, unrelated, expired, pronoun,
            cancel_schedule, other_chain, change, quoted, owner_rule, paid_then_yes, test_memo]
    seen = set()
    out = []
    i = 0
    while len(out) < p["count"] and i < 100000:
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
    main(sys.argv[1])
