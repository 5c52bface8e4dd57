// Checks Veil's ed25519 DKSAP vectors (dksap-ed25519-vectors.json, written by
// go test ./chains/stealth/edstealth -run TestDKSAPVectors -update) with an
// independent implementation of the construction in docs/stealth.md, built on
// @noble/curves (x25519, ed25519) and @noble/hashes (sha256). Writes
// dksap-ed25519-checked.json, which TestDKSAPVectorsCheckedByNoble reads.
//
//   cd chains/stealth/testdata && npm ci && node check-dksap-vectors.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { ed25519, x25519 } from '@noble/curves/ed25519';
import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, hexToBytes, concatBytes, utf8ToBytes } from '@noble/hashes/utils';

const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const leToBig = (b) => BigInt('0x' + (bytesToHex(Uint8Array.from(b).reverse()) || '0'));
const bigToLe32 = (n) => hexToBytes(n.toString(16).padStart(64, '0')).reverse();
const version = (p) => JSON.parse(readFileSync(new URL(`./node_modules/${p}/package.json`, import.meta.url))).version;

const file = JSON.parse(readFileSync(new URL('./dksap-ed25519-vectors.json', import.meta.url)));
const [domTag, domScalar] = file.domains;
const results = [];
let bad = 0;
for (const v of file.vectors) {
  const checks = {};
  const spendSeed = hexToBytes(v.spendSeed);
  checks.spendPubIsRFC8032 = bytesToHex(ed25519.getPublicKey(spendSeed)) === v.spendPub;
  checks.viewPub = bytesToHex(x25519.getPublicKey(hexToBytes(v.viewSeed))) === v.viewPub;
  checks.ephemeralPub = bytesToHex(x25519.getPublicKey(hexToBytes(v.ephemeralPriv))) === v.ephemeralPub;
  const S = x25519.getSharedSecret(hexToBytes(v.ephemeralPriv), hexToBytes(v.viewPub));
  const S2 = x25519.getSharedSecret(hexToBytes(v.viewSeed), hexToBytes(v.ephemeralPub));
  checks.sharedSecret = bytesToHex(S) === v.sharedSecret && bytesToHex(S2) === v.sharedSecret;
  checks.viewTag = bytesToHex(sha256(concatBytes(utf8ToBytes(domTag), S)).slice(0, 1)) === v.viewTag;
  const h0 = sha256(concatBytes(utf8ToBytes(domScalar), Uint8Array.of(0), S));
  const h1 = sha256(concatBytes(utf8ToBytes(domScalar), Uint8Array.of(1), S));
  const h = leToBig(concatBytes(h0, h1)) % L;
  checks.h = bytesToHex(bigToLe32(h)) === v.h;
  const P = ed25519.ExtendedPoint.fromHex(v.spendPub).add(ed25519.ExtendedPoint.BASE.multiply(h));
  checks.oneTimePub = P.toHex() === v.oneTimePub;
  const k = leToBig(hexToBytes(v.spendScalar));
  const p = (k + h) % L;
  checks.oneTimeScalar = bytesToHex(bigToLe32(p)) === v.oneTimeScalar &&
    ed25519.ExtendedPoint.BASE.multiply(p).toHex() === v.oneTimePub;
  checks.payload = v.payload === v.viewTag + v.ephemeralPub;
  checks.signatureVerifies = ed25519.verify(hexToBytes(v.signature), utf8ToBytes(v.message), hexToBytes(v.oneTimePub));
  const otherS = x25519.getSharedSecret(hexToBytes(v.otherViewSeed), hexToBytes(v.ephemeralPub));
  const otherTag = bytesToHex(sha256(concatBytes(utf8ToBytes(domTag), otherS)).slice(0, 1));
  checks.otherViewKeyDoesNotFind = !v.foundByOtherViewKey; // tag may collide (1/256); the key must not
  const ok = Object.values(checks).every(Boolean);
  if (!ok) bad++;
  results.push({ oneTimePub: v.oneTimePub, ok, checks, otherViewKeyTagCollides: otherTag === v.viewTag });
}
const out = {
  description: "Veil's DKSAP ed25519 vectors recomputed by an independent implementation of docs/stealth.md",
  source: `npm @noble/curves@${version('@noble/curves')} + @noble/hashes@${version('@noble/hashes')}; checker: chains/stealth/testdata/check-dksap-vectors.mjs`,
  results,
};
writeFileSync(new URL('./dksap-ed25519-checked.json', import.meta.url), JSON.stringify(out, null, 2) + '\n');
console.log(`checked ${results.length} DKSAP vectors: ${results.length - bad} ok, ${bad} failed`);
if (bad) process.exit(1);
