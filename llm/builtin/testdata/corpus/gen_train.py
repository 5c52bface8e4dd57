#!/usr/bin/env python3
"""Writes train.jsonl: the builtin planner's training corpus.

Phrasings are written by hand below; the script varies names, amounts,
assets and chains over them (seeded, so the output is stable). dev.jsonl and
zero.jsonl are written by hand separately and never generated: the planner
is not tuned on them (docs/models.md).

    python3 gen_train.py > train.jsonl
"""
import json
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the corpus
from to_jsonl import lines, parse  # noqa: E402 (after the line above)

rng = random.Random(17)

NAMES = ["bob", "carol", "dave", "erin", "frank", "gina", "hank", "ivan", "jules", "kira", "liam", "maya",
         "nora", "omar", "priya", "quinn", "rosa", "tess", "vera", "wes", "xena", "yuki", "zane", "sam"]
ADDR = ["0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
        "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB", "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb"]
STELLAR = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
CHAINS = ["base", "ethereum", "polygon", "stellar", "solana", "horizen"]
WORDS = [("five", "5"), ("ten", "10"), ("twenty", "20"), ("two and a half", "2.5"), ("a hundred", "100"),
         ("fifty", "50"), ("three", "3"), ("twelve", "12"), ("forty-five", "45"), ("fifteen", "15"),
         ("one hundred and twenty", "120"), ("thirty", "30"), ("seven", "7"), ("eighty", "80")]
AMOUNTS = ["5", "10", "0.5", "2", "25", "100", "1.25", "3", "7", "12", "0.01", "40", "250", "1,000", "0.75", "15"]
ASSETS = [("usdc", "USDC"), ("USDC", "USDC"), ("eth", "ETH"), ("ETH", "ETH"), ("xlm", "XLM"), ("sol", "SOL"),
          ("zen", "ZEN"), ("pol", "POL"), ("Usdc", "USDC")]

out = []


def add(text, *calls):
    out.append({"text": text, "calls": [{"tool": t, "args": a} for t, a in calls]})


def val(a):
    return a.replace(",", "")


def pick(xs):
    return rng.choice(xs)


# send_payment: amount, asset, recipient in many word orders and styles.
SEND = [
    "send {a} {s} to {n}", "pay {n} {a} {s}", "transfer {a} {s} to {n}", "please send {a} {s} to {n}",
    "could you pay {n} {a} {s}?", "can you send {a} {s} to {n} please", "pls send {a} {s} to {n}",
    "shoot {a} {s} over to {n}", "shoot {n} {a} {s}", "move {a} {s} from my wallet to {n}",
    "{n} should get {a} {s} from me", "I owe {n} {a} {s}, settle it", "tip {n} {a} {s}", "give {n} {a} {s}",
    "wire {a} {s} to {n}", "yo send {a} {s} to {n} 🙏", "i want to send {a} {s} to {n}",
    "I'd like to pay {n} {a} {s}", "I need you to transfer {a} {s} to {n}", "go ahead and pay {n} {a} {s}",
    "kindly remit {a} {s} to {n}", "hey, send {n} {a} {s}", "send {a}{s} to {n}", "pay {a} {s} to {n} pls",
    "would you send {n} {a} {s}?", "Send {a} {s} to {n}.", "ok send {a} {s} to {n} now",
    "snd {a} {s} to {n}", "transfer {n} {a} {s} thx", "send over {a} {s} to {n}", "reimburse {n} {a} {s}",
    "pay back {n} {a} {s}", "just send {n} {a} {s}", "can u pay {n} {a} {s}", "please pay {n} {a} {s} 🙂",
]
for tpl in SEND:
    for _ in range(3):
        n, a, (sw, sym) = pick(NAMES), pick(AMOUNTS), pick(ASSETS)
        if tpl == "send {a}{s} to {n}":
            sw = sw.lower()
        add(tpl.format(n=n, a=a, s=sw), ("send_payment", {"recipient": n, "amount": val(a), "asset": sym}))
# dollars, bucks, $ and amounts in words
for tpl in ["send {n} ${a}", "pay {n} {a} bucks", "send {a} dollars to {n}", "give {n} ${a} pls", "pay ${a} to {n}",
            "shoot {n} {a} bucks", "send {a} usd to {n}", "{n} should get ${a} from me"]:
    for _ in range(3):
        n, a = pick(NAMES), pick(["5", "10", "20", "3.50", "100", "7", "45"])
        add(tpl.format(n=n, a=a), ("send_payment", {"recipient": n, "amount": a, "asset": "USDC"}))
for tpl in ["send {w} usdc to {n}", "pay {n} {w} bucks", "shoot {w} usdc over to {n}", "give {n} {w} dollars",
            "transfer {w} USDC to {n} please", "can you pay {n} {w} usdc?"]:
    for _ in range(3):
        n, (w, v) = pick(NAMES), pick(WORDS)
        add(tpl.format(n=n, w=w), ("send_payment", {"recipient": n, "amount": v, "asset": "USDC"}))
# no asset: the tool's default
for tpl in ["pay {n} {a}", "send {n} {a}", "shoot {a} over to {n}", "move {a} from my wallet to {n}", "I owe {n} {a}, settle it",
            "I owe {n} {a}. pay it please"]:
    for _ in range(2):
        n, a = pick(NAMES), pick(["5", "10", "3", "20", "0.5"])
        add(tpl.format(n=n, a=a), ("send_payment", {"recipient": n, "amount": a}))
# with a chain
for tpl in ["send {a} {s} to {n} on {c}", "pay {n} {a} {s} on {c}", "on {c}, send {a} {s} to {n}",
            "transfer {a} {s} to {n} via {c}", "send {n} {a} {s} over {c}"]:
    for _ in range(3):
        n, a, (sw, sym), c = pick(NAMES), pick(AMOUNTS), pick(ASSETS[:4]), pick(CHAINS)
        add(tpl.format(n=n, a=a, s=sw, c=c), ("send_payment", {"recipient": n, "amount": val(a), "asset": sym, "chain": c}))
# upper case: the name is read in lower case
for _ in range(4):
    n, a = pick(NAMES), pick(AMOUNTS)
    add(f"SEND {a} USDC TO {n.upper()}", ("send_payment", {"recipient": n, "amount": val(a), "asset": "USDC"}))

# pay_agent: a .veil name or "agent X"
for tpl in ["pay {n}.veil {a} {s}", "send {a} {s} to {n}.veil", "send {a} {s} to agent {n}", "could you pay {n}.veil {a} {s}?",
            "tip {n}.veil {a} {s}", "transfer {a} {s} to the agent {n}"]:
    for _ in range(4):
        n, a, (sw, sym) = pick(NAMES), pick(AMOUNTS), pick(ASSETS)
        name = n + ".veil" if ".veil" in tpl else n
        add(tpl.format(n=n, a=a, s=sw), ("pay_agent", {"agent_name": name, "amount": val(a), "asset": sym}))

# two payments in one message
for _ in range(12):
    n1, n2 = rng.sample(NAMES, 2)
    a1, a2 = pick(["5", "3", "10"]), pick(["2", "7", "1.5"])
    tpl = pick(["send {a1} usdc to {n1} and {a2} to {n2}", "pay {n1} {a1} usdc, then pay {n2} {a2} usdc",
                "send {a1} USDC to {n1} & {a2} USDC to {n2}"])
    add(tpl.format(n1=n1, n2=n2, a1=a1, a2=a2), ("send_payment", {"recipient": n1, "amount": a1, "asset": "USDC"}),
        ("send_payment", {"recipient": n2, "amount": a2, "asset": "USDC"}))

# schedule_payment: every interval form
INTERVALS = [
    ("every week", "weekly"), ("weekly", "weekly"), ("each week", "weekly"), ("once a week", "weekly"),
    ("every day", "daily"), ("daily", "daily"), ("each morning", "daily"), ("every month", "monthly"),
    ("monthly", "monthly"), ("every friday", "friday"), ("on fridays", "friday"), ("every monday", "monday"),
    ("each tuesday", "tuesday"), ("every sunday", "sunday"), ("every 6 hours", "every-6-hours"),
    ("every six hours", "every-6-hours"), ("every 12 hours", "every-12-hours"), ("twice a day", "every-12-hours"),
    ("every hour", "hourly"), ("hourly", "hourly"), ("every 3 hours", "every-3-hours"), ("on wednesdays", "wednesday"),
    ("every 24 hours", "daily"), ("every 8 hours", "every-8-hours"),
]
for tpl in ["send {a} {s} to {n} {i}", "pay {n} {a} {s} {i}", "{i} send {a} {s} to {n}", "schedule {a} {s} to {n} {i}",
            "set up a payment of {a} {s} to {n} {i}", "please pay {n} {a} {s} {i}"]:
    for iv, canon in INTERVALS:
        if rng.random() < 0.45:
            continue
        n, a, (sw, sym) = pick(NAMES), pick(AMOUNTS), pick(ASSETS)
        add(tpl.format(n=n, a=a, s=sw, i=iv), ("schedule_payment", {"recipient": n, "amount": val(a), "asset": sym, "interval": canon}))
for _ in range(6):
    n, a = pick(NAMES), pick(["5", "10", "20"])
    add(f"send {a} usdc to {n} every week until 2027-06-30",
        ("schedule_payment", {"recipient": n, "amount": a, "asset": "USDC", "interval": "weekly", "end_date": "2027-06-30"}))

# manage_schedule: by id and by description
for verb, action in [("pause", "pause"), ("resume", "resume"), ("cancel", "cancel"), ("stop", "cancel"), ("suspend", "pause"),
                     ("unpause", "resume"), ("delete", "cancel"), ("put on hold", "pause")]:
    sid = pick(["3f2a9c01", "a1b2c3d4", "9e8d7c6b", "0c0ffee1"])
    if verb == "put on hold":
        add(f"put schedule {sid} on hold", ("manage_schedule", {"schedule_id": sid, "action": action}))
    else:
        add(f"{verb} schedule {sid}", ("manage_schedule", {"schedule_id": sid, "action": action}))
        n, (iw, canon) = pick(NAMES), pick([("weekly", "weekly"), ("monthly", "monthly"), ("daily", "daily")])
        add(f"{verb} the {iw} payment to {n}", ("manage_schedule", {"action": action, "recipient": n, "interval": canon}))
        a = pick(["5", "10", "20"])
        add(f"{verb} the {iw} {a} USDC payment to {n}",
            ("manage_schedule", {"action": action, "recipient": n, "amount": a, "asset": "USDC", "interval": canon}))
for n in rng.sample(NAMES, 5):
    add(f"stop paying {n}", ("manage_schedule", {"action": "cancel", "recipient": n}))
    add(f"put the daily payment to {n} on hold", ("manage_schedule", {"action": "pause", "recipient": n, "interval": "daily"}))
    add(f"resume {n}'s schedule", ("manage_schedule", {"action": "resume", "recipient": n}))

# list_schedules
for t in ["list my schedules", "show my recurring payments", "what schedules do I have", "what are my subscriptions",
          "any scheduled payments?", "show schedules", "my recurring payments pls", "list all my standing orders and schedules",
          "which recurring payments are active?", "schedules?"]:
    add(t, ("list_schedules", {}))

# get_balance
for t in ["what's my balance", "balance", "how much USDC do I have", "what's in my wallet", "check my balance",
          "how much money do I have", "show me my holdings", "whats my bal", "how much do I have left",
          "what do I own", "what do I hold right now", "my balance please", "balance?", "how rich am i lol",
          "am i broke?", "portfolio", "how much crypto do I have", "what have I got in my wallet", "show my funds"]:
    add(t, ("get_balance", {}))
for c in CHAINS:
    add(pick(["what's my balance on {c}", "what do I own on {c}", "balance on {c}", "how much do I have on {c}?",
              "check my {c} balance", "whats in my wallet on {c}"]).format(c=c), ("get_balance", {"chain": c}))
add("balance on all chains", ("get_balance", {"chain": "all"}))
add("show my balances everywhere", ("get_balance", {"chain": "all"}))
add("what's my balance on stellar and solana", ("get_balance", {"chain": "stellar"}), ("get_balance", {"chain": "solana"}))

# scan_payments
for t in ["scan for payments", "any new payments?", "did anyone pay me", "check for incoming payments", "has anyone sent me money?",
          "scan", "rescan please", "look for new deposits", "any incoming?", "did I receive anything", "check if bob paid me",
          "have I been paid yet"]:
    add(t, ("scan_payments", {}))
for c in ["stellar", "solana", "polygon", "ethereum"]:
    add(f"scan for payments on {c}", ("scan_payments", {"chain": c}))

# invoices
for memo in ["the logo work", "consulting", "website hosting", "march rent", "design review", "the dinner last night"]:
    a = pick(["25", "100", "40", "12.5"])
    add(f"create an invoice for {a} USDC for {memo}", ("create_invoice", {"amount": a, "asset": "USDC", "memo": memo}))
    add(f'invoice {a} usdc memo "{memo}"', ("create_invoice", {"amount": a, "asset": "USDC", "memo": memo}))
    add(f"request {a} USDC for {memo}", ("create_invoice", {"amount": a, "asset": "USDC", "memo": memo}))
for t in ["show my invoices", "any unpaid invoices", "has my invoice been paid?", "list invoices", "check my invoices",
          "which invoices are still open", "invoices?", "are my invoices paid"]:
    add(t, ("check_invoices", {}))

# names
for n in rng.sample(NAMES, 12):
    tpl = pick(["who is {n}.veil", "look up {n}", "what's the meta address of {n}?", "what is {n}'s address",
                "resolve {n}", "what's {n}'s meta-address", "find {n}.veil", "give me the address of {n}",
                "what's the stealth address for {n}", "is {n}.veil registered?"])
    # A name is looked up as written: "bob" or "bob.veil".
    add(tpl.format(n=n), ("resolve_name", {"name": n + (".veil" if ".veil" in tpl else "")}))
for t in ["register my name", "put my name on chain", "register", "publish my name", "get my name on the blockchain",
          "claim my name", "put my name onchain pls"]:
    add(t, ("register_name", {}))
for c in ["polygon", "base", "stellar"]:
    add(f"register my name on {c}", ("register_name", {"chain": c}))
for t in ["who am i", "what's my address", "give me my receiving address", "show my meta-address", "what's my deposit address",
          "my address?", "what is my stealth meta address", "where can people pay me? what's my address", "show my agent info",
          "what's my public address", "whoami"]:
    add(t, ("get_agent_info", {}))

# withdrawals
for to in ADDR + [STELLAR]:
    add(pick(["withdraw everything to {t}", "cash out all my funds to {t}", "sweep to {t}", "move everything to {t}",
              "cash out to {t}", "withdraw all to {t} please", "empty my wallet to {t}", "send everything to {t}"]).format(t=to),
        ("withdraw_all", {"to": to}))
    add(pick(["cash me out to {t}", "withdraw all my money to {t}", "pull out everything to {t}", "take out all my funds to {t}"]).format(t=to),
        ("withdraw_all", {"to": to}))
add("withdraw 5 USDC from 0x1111111111111111111111111111111111111111 to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    ("withdraw", {"from": "0x1111111111111111111111111111111111111111", "to": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "amount": "5"}))
add("withdraw from 0x1111111111111111111111111111111111111111 to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    ("withdraw", {"from": "0x1111111111111111111111111111111111111111", "to": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}))

# privacy, faucet, memory
for t in ["privacy check", "how private am I?", "run a privacy check", "am i anonymous?", "is my wallet traceable"]:
    add(t, ("privacy_check", {}))
for t in ["fund my wallet", "get me some test tokens", "top up my wallet", "use the faucet", "i need testnet funds"]:
    add(t, ("fund_wallet", {}))
for c in ["base", "polygon", "solana"]:
    add(f"fund my wallet on {c}", ("fund_wallet", {"chain": c}))
for content, typ in [("I prefer USDC", "preference"), ("my landlord is carol.veil", "contact"), ("always ask before paying more than 50 USDC", "instruction"),
                     ("I run a design studio", "fact"), ("bob is my brother", "contact")]:
    add(f"remember that {content}", ("save_memory", {"content": content, "type": typ}))

# no tool: small talk, help, missing information, notifications, not understood
for t in ["hi", "hello!", "hey there", "thanks", "thank you so much", "help", "what can you do?", "gm",
          "any notifications?", "do I have new notifications", "will I get notified when bob pays me?", "check my inbox",
          "blah blah", "asdfgh", "what's the weather like", "tell me a joke", "send USDC to bob", "send 5 USDC",
          "pay bob", "pause the schedule", "who is", "withdraw 5 usdc", "send 5 usdc to bob every 2 weeks",
          "send 5 usdc to bob yearly", "pay everyone 5 usdc", "send all my usdc to bob", "ok", "cool",
          "create an invoice", "remember"]:
    add(t)

# Hand-written items (train_hand.txt): among them failures found on dev.
for line in lines("train_hand.txt"):
    text, calls = parse(line)
    add(text, *calls)

for it in out:
    print(json.dumps(it, ensure_ascii=False))
