// src/openapi.ts must be what openapi-typescript makes of
// httpapi/openapi.json today: a change of the document without
// `npm run generate` fails here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

test("src/openapi.ts is generated from httpapi/openapi.json and up to date", () => {
  const cwd = fileURLToPath(new URL("../..", import.meta.url));
  const r = spawnSync(process.execPath, ["scripts/generate.mjs", "--check"], { cwd, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
});
