// Parses the payment URIs chains/payuri printed (one per line on stdin)
// with the ecosystem's own parsers and prints one JSON object per line:
// EIP-681 with eth-url-parser, Solana Pay with @solana/pay's parseURL,
// SEP-7 with @stellar/typescript-wallet-sdk's parseSep7Uri. A URI a parser
// rejects prints {"uri", "error"}. Run by parsers_test.go.
import { createRequire } from "node:module";
import { parseURL } from "@solana/pay";
import * as readline from "node:readline";

const require = createRequire(import.meta.url);
const { parse: parseEIP681 } = require("eth-url-parser");
const { parseSep7Uri, isValidSep7Uri } = require("@stellar/typescript-wallet-sdk");
// eth-url-parser prints big numbers with an exponent ("1.2345e+23"), read
// exactly by its own bignumber.js: written back as plain integers.
const BigNumber = createRequire(require.resolve("eth-url-parser"))("bignumber.js");
const plain = (v) => (v === undefined ? "" : new BigNumber(String(v)).toFixed());

function parse(uri) {
  if (uri.startsWith("ethereum:")) {
    const p = parseEIP681(uri);
    return {
      format: "eip681", target: p.target_address, chainId: String(p.chain_id ?? ""),
      function: p.function_name ?? "", value: plain(p.parameters?.value),
      address: p.parameters?.address ?? "", uint256: plain(p.parameters?.uint256),
    };
  }
  if (uri.startsWith("solana:")) {
    const p = parseURL(uri);
    return {
      format: "solanapay", recipient: String(p.recipient), amount: p.amount !== undefined ? String(p.amount) : "",
      splToken: p.splToken ? String(p.splToken) : "", reference: (p.reference ?? []).map(String).join(","),
      label: p.label ?? "", message: p.message ?? "", memo: p.memo ?? "",
    };
  }
  if (uri.startsWith("web+stellar:")) {
    const v = isValidSep7Uri(uri);
    if (!v.result) { throw new Error(v.reason); }
    const p = parseSep7Uri(uri);
    return {
      format: "sep7", operation: p.operationType, destination: p.destination, amount: p.amount ?? "",
      assetCode: p.assetCode ?? "", assetIssuer: p.assetIssuer ?? "", memo: p.memo ?? "", memoType: p.memoType ?? "",
    };
  }
  throw new Error("unknown scheme");
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line) { continue; }
  let out;
  try { out = { uri: line, ...parse(line) }; } catch (e) { out = { uri: line, error: String(e && e.message || e) }; }
  process.stdout.write(JSON.stringify(out) + "\n");
}
