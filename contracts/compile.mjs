// Compiles src/*.sol with solc-js (npm solc, pinned in package.json) and
// writes build/<Contract>.abi, .bin (creation code) and .bin-runtime, plus
// build/solc-version.txt. Run through gen.sh.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const solc = require("solc");

const here = path.dirname(new URL(import.meta.url).pathname);
const srcDir = path.join(here, "src");
const outDir = path.join(here, "build");

const sources = {};
for (const f of fs.readdirSync(srcDir).filter((f) => f.endsWith(".sol")).sort()) {
  sources[f] = { content: fs.readFileSync(path.join(srcDir, f), "utf8") };
}

const input = {
  language: "Solidity",
  sources,
  settings: {
    // cancun: supported by every chain Veil targets (Sepolia, Amoy, Base
    // Sepolia, Horizen testnet) and by the devnets.
    evmVersion: "cancun",
    optimizer: { enabled: true, runs: 200 },
    // No metadata hash: the bytecode depends on the sources and compiler only.
    metadata: { bytecodeHash: "none", appendCBOR: false },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
  },
};

const out = JSON.parse(solc.compile(JSON.stringify(input)));
let failed = false;
for (const e of out.errors ?? []) {
  console.error(e.formattedMessage);
  if (e.severity === "error") failed = true;
}
if (failed) process.exit(1);

fs.mkdirSync(outDir, { recursive: true });
for (const [file, contracts] of Object.entries(out.contracts)) {
  for (const [name, c] of Object.entries(contracts)) {
    if (!c.evm.bytecode.object) continue; // interfaces
    fs.writeFileSync(path.join(outDir, `${name}.abi`), JSON.stringify(c.abi, null, 2) + "\n");
    fs.writeFileSync(path.join(outDir, `${name}.bin`), c.evm.bytecode.object + "\n");
    fs.writeFileSync(path.join(outDir, `${name}.bin-runtime`), c.evm.deployedBytecode.object + "\n");
    console.log(`${file}: ${name}`);
  }
}
fs.writeFileSync(path.join(outDir, "solc-version.txt"), solc.version() + "\n");
