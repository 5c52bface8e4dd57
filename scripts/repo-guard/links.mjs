// links.mjs: every relative link in README.md and docs/*.md resolves: the
// file (or folder) exists, and a #fragment names a heading (or an explicit
// <a id/name>) of the target Markdown file, by GitHub's anchor rules.
// Links inside code (fenced blocks, `inline`) are not links. Plain node,
// no packages: `node scripts/repo-guard/links.mjs` from the repository root.
import { readFileSync, existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const root = process.cwd();
const files = ["README.md", ...readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => join("docs", f))];

// stripCode blanks fenced blocks and inline code, keeping line numbers.
function stripCode(text) {
  let inFence = false;
  let fence = "";
  return text.split("\n").map((line) => {
    const m = line.match(/^\s*(```+|~~~+)/);
    if (m) {
      if (!inFence) { inFence = true; fence = m[1][0]; return ""; }
      if (m[1][0] === fence) { inFence = false; return ""; }
    }
    if (inFence) return "";
    return line.replace(/(`+)[^`]*?\1/g, "");
  });
}

// slug is GitHub's heading anchor: lower case, markup and punctuation
// dropped (letters, digits, spaces, - and _ kept), spaces to hyphens.
function slug(heading) {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

const anchorCache = new Map();
function anchors(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const set = new Set();
  const seen = new Map();
  let inFence = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) { inFence = !inFence; continue; }
    if (inFence) continue;
    const h = line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
    if (h) {
      const base = slug(h[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      set.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const a of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) set.add(a[1]);
  }
  anchorCache.set(file, set);
  return set;
}

const bad = [];
for (const file of files) {
  const lines = stripCode(readFileSync(file, "utf8"));
  lines.forEach((line, i) => {
    // [text](target "title") and [text]: target reference definitions.
    const targets = [...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
    const def = line.match(/^\s*\[[^\]]+\]:\s*(\S+)/);
    if (def) targets.push(def[1]);
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:, ...
      const [path, frag] = target.split("#", 2);
      const dest = path === "" ? file : normalize(join(dirname(file), decodeURIComponent(path)));
      const where = `${file}:${i + 1}: ${target}`;
      if (relative(root, join(root, dest)).startsWith("..")) { bad.push(`${where}: points outside the repository`); continue; }
      if (!existsSync(dest)) { bad.push(`${where}: ${dest} does not exist`); continue; }
      if (frag !== undefined && frag !== "") {
        if (!dest.endsWith(".md") || statSync(dest).isDirectory()) continue;
        if (!anchors(dest).has(decodeURIComponent(frag).toLowerCase())) bad.push(`${where}: ${dest} has no heading #${frag}`);
      }
    }
  });
}
if (bad.length) {
  console.error(`links: ${bad.length} broken relative link(s):\n` + bad.join("\n"));
  process.exit(1);
}
console.log(`links: every relative link of ${files.length} Markdown files resolves`);
