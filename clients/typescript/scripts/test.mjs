// `npm test` after tsc: builds veild once with `go build` into a temporary
// directory (unless VEIL_BIN names one), then runs every compiled node:test
// file; each file starts its own veild from that binary (test/veild.ts).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL("..", import.meta.url));
const repo = join(here, "..", "..");
let dir;
if (!process.env.VEIL_BIN) {
  dir = mkdtempSync(join(tmpdir(), "veil-ts-"));
  process.env.VEIL_BIN = join(dir, "veild");
  const b = spawnSync("go", ["build", "-o", process.env.VEIL_BIN, "./cmd/veild"], { cwd: repo, stdio: "inherit" });
  if (b.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    console.error("go build ./cmd/veild failed");
    process.exit(1);
  }
}
const files = ["test", "compat"].flatMap((d) =>
  readdirSync(join(here, "dist", d)).filter((f) => f.endsWith(".test.js")).map((f) => join("dist", d, f)),
);
const r = spawnSync(process.execPath, ["--test", "--test-concurrency=2", ...files], { cwd: here, stdio: "inherit" });
if (dir) rmSync(dir, { recursive: true, force: true });
process.exit(r.status ?? 1);
