// The solana-bankrun side of chains/solana's differential test
// (bankrun_test.go, docs/chains-solana.md "The real runtime: bankrun").
//
// It runs the real Solana runtime in process (solana-bankrun: Agave's
// solana-program-test with the system, SPL token, memo and compute budget
// programs) and answers one JSON request per line on stdin with one JSON
// line on stdout, prefixed "@@ " (the runtime logs to the same streams):
//
//   {"op":"blockhash"}                  → {"blockhash": base58}
//   {"op":"exec", "tx": base64 wire transaction, "skipPreflight": bool,
//    "accounts": [{"address", "exists", "lamports" (decimal string),
//                  "owner", "data" (base64), "executable"}]}
//                                       → {"err": string|null, "logs": [...],
//                                          "post": [{"address","exists","lamports","owner","data"}]}
//
// exec first writes every listed account (the Go side reads them from
// Veil's devnet just before it sends the same transaction there), so both
// runtimes start from the same state; it then simulates the transaction as
// a node's preflight does and, only when that succeeds (or with
// skipPreflight), processes it, and reads the accounts back.
//
// solana-bankrun 0.4.0 does not load the associated token account program
// (its genesis has no account at ATokenGPvbdGVxr1b2hvZbsWGUgh3zFnnMJpsf9yMjdx,
// "Attempt to load a program that does not exist"), although its native
// module embeds the program's ELF (solana-program-test's
// spl_associated_token_account .so). The harness takes that ELF out of the
// installed native module and loads it at the program's address as a
// BPF loader 2 program, as solana-program-test does for its SPL programs.
import { start } from "solana-bankrun";
import { PublicKey, VersionedTransaction } from "@solana/web3.js";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";

const ATA_PROGRAM = new PublicKey("ATokenGPvbdGVxr1b2hvZbsWGUgh3zFnnMJpsf9yMjdx");
const BPF_LOADER_2 = new PublicKey("BPFLoader2111111111111111111111111111111111");
const SYSTEM = PublicKey.default;

// ataProgramELF finds the ELF of the associated token account program in
// the native module: a BPF/SBF ELF (e_machine 247 or 263) whose strings
// name the ATA processor and its CreateIdempotent instruction.
function ataProgramELF() {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("solana-bankrun-linux-x64-gnu/package.json");
  const bin = readFileSync(pkg.replace(/package\.json$/, "solana-bankrun.linux-x64-gnu.node"));
  const found = [];
  for (let i = bin.indexOf("\x7fELF", 1); i >= 0; i = bin.indexOf("\x7fELF", i + 1)) {
    if (i + 64 > bin.length || bin[i + 4] !== 2 || bin[i + 5] !== 1) continue; // 64-bit little endian
    const machine = bin.readUInt16LE(i + 18);
    if (machine !== 247 && machine !== 263) continue;
    const shoff = Number(bin.readBigUInt64LE(i + 0x28));
    const size = shoff + bin.readUInt16LE(i + 0x3a) * bin.readUInt16LE(i + 0x3c);
    const elf = bin.subarray(i, i + size);
    if (elf.includes("associated-token-account/program/src/processor.rs") && elf.includes("CreateIdempotent")) {
      found.push(elf);
    }
  }
  if (found.length !== 1) {
    throw new Error(`found ${found.length} associated token account program ELFs in ${pkg}'s native module, want 1`);
  }
  return found[0];
}

const ctx = await start([], [{
  address: ATA_PROGRAM,
  info: { lamports: 1_000_000_000, data: ataProgramELF(), owner: BPF_LOADER_2, executable: true },
}]);
const client = ctx.banksClient;

function out(v) {
  process.stdout.write("@@ " + JSON.stringify(v) + "\n");
}

async function read(address) {
  const a = await client.getAccount(new PublicKey(address));
  if (!a) return { address, exists: false, lamports: "0", owner: SYSTEM.toBase58(), data: "" };
  return { address, exists: true, lamports: String(a.lamports), owner: a.owner.toBase58(), data: Buffer.from(a.data).toString("base64") };
}

async function exec(req) {
  for (const a of req.accounts) {
    // A missing account is written as an empty system account with no
    // lamports: the runtime treats the two alike.
    ctx.setAccount(new PublicKey(a.address), {
      lamports: a.exists ? Number(BigInt(a.lamports)) : 0,
      data: Buffer.from(a.data || "", "base64"),
      owner: new PublicKey(a.exists ? a.owner : SYSTEM),
      executable: !!a.executable,
    });
  }
  const tx = VersionedTransaction.deserialize(Buffer.from(req.tx, "base64"));
  let res;
  if (!req.skipPreflight) {
    res = await client.simulateTransaction(tx);
    if (res.result !== null) {
      return { err: res.result, logs: res.meta ? res.meta.logMessages : [], post: await Promise.all(req.accounts.map((a) => read(a.address))) };
    }
  }
  res = await client.tryProcessTransaction(tx);
  return { err: res.result, logs: res.meta ? res.meta.logMessages : [], post: await Promise.all(req.accounts.map((a) => read(a.address))) };
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  let req;
  try {
    req = JSON.parse(line);
    if (req.op === "blockhash") {
      const [bh] = await client.getLatestBlockhash();
      out({ blockhash: bh });
    } else if (req.op === "exec") {
      out(await exec(req));
    } else {
      out({ error: `unknown op ${req.op}` });
    }
  } catch (e) {
    out({ error: String(e && e.stack || e) });
  }
}
