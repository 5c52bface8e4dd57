// Owner-wallet signers: EVM with viem (EIP-191 personal_sign), Stellar and
// Solana with ed25519 from @noble/curves. The encodings are the ones the
// server accepts and the Go client writes (chains/walletsig/sign.go).
import { ed25519 } from "@noble/curves/ed25519";
import { sha256 } from "@noble/hashes/sha256";
import { base32, base58, base64 } from "@scure/base";
import { privateKeyToAccount } from "viem/accounts";
import type { Hex } from "viem";

/** A wallet signature scheme. */
export type Scheme = "evm" | "stellar" | "solana";

/**
 * Signer is an owner wallet that signs Veil's create, export, policy and
 * approval messages. The constructors below cover EVM accounts (viem),
 * Stellar and Solana ed25519 keys; implement it to sign elsewhere (a
 * browser wallet, a hardware wallet).
 */
export interface Signer {
  readonly scheme: Scheme;
  /** The wallet address as it goes into the message and the request: EIP-55 (EVM), G… (Stellar), base58 (Solana). */
  readonly address: string;
  /** Signs the message text in the scheme's encoding. */
  sign(message: string): Promise<string>;
}

/** An EVM account that signs EIP-191 messages: viem's LocalAccount (privateKeyToAccount, mnemonicToAccount, …) or any such object. */
export interface EvmAccount {
  address: string;
  signMessage(args: { message: string }): Promise<Hex | string>;
}

/** evmSigner signs with a viem account (EIP-191 personal_sign: 0x + 130 hex digits, v 27/28). */
export function evmSigner(account: EvmAccount): Signer {
  return { scheme: "evm", address: account.address, sign: (message) => account.signMessage({ message }) };
}

/** evmSignerFromPrivateKey signs with a raw secp256k1 key (64 hex digits, 0x optional). */
export function evmSignerFromPrivateKey(key: string): Signer {
  const h = key.trim().replace(/^0x/, "");
  if (!/^[0-9a-fA-F]{64}$/.test(h)) throw new TypeError("veil: not an EVM private key: want 64 hex digits, 0x optional");
  return evmSigner(privateKeyToAccount(`0x${h}`));
}

// --- ed25519 ---

const te = new TextEncoder();

/** StrKey version bytes (SEP-23): account id G…, secret seed S…. */
const versionAccount = 6 << 3;
const versionSeed = 18 << 3;

function crc16xmodem(b: Uint8Array): number {
  let crc = 0;
  for (const byte of b) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function strkeyEncode(version: number, data: Uint8Array): string {
  const p = new Uint8Array(1 + data.length + 2);
  p[0] = version;
  p.set(data, 1);
  const crc = crc16xmodem(p.subarray(0, 1 + data.length));
  p[1 + data.length] = crc & 0xff;
  p[2 + data.length] = crc >> 8;
  return base32.encode(p);
}

function strkeyDecode(version: number, s: string): Uint8Array {
  let p: Uint8Array;
  try {
    p = base32.decode(s);
  } catch {
    throw new TypeError("veil: not a StrKey");
  }
  const n = p.length - 2;
  if (p.length !== 35 || p[0] !== version || crc16xmodem(p.subarray(0, n)) !== (p[n]! | (p[n + 1]! << 8))) {
    throw new TypeError("veil: not a StrKey of the expected kind, or its checksum is wrong");
  }
  return p.slice(1, n);
}

/** stellarAddress is the G… account of an ed25519 public key. */
export function stellarAddress(publicKey: Uint8Array): string {
  return strkeyEncode(versionAccount, publicKey);
}

/** solanaAddress is the base58 address of an ed25519 public key. */
export function solanaAddress(publicKey: Uint8Array): string {
  return base58.encode(publicKey);
}

const sep53Prefix = "Stellar Signed Message:\n";

/**
 * stellarSigner signs with a Stellar key: seed is the S… secret or the
 * 32-byte ed25519 seed. By default it signs the message's UTF-8 bytes;
 * with sep53 it signs the SEP-53 way (ed25519 over SHA-256("Stellar Signed
 * Message:\n" + message)), as Freighter and `stellar message sign` do. The
 * signature is standard base64; the server accepts both forms.
 */
export function stellarSigner(seed: string | Uint8Array, opts: { sep53?: boolean } = {}): Signer {
  const raw = typeof seed === "string" ? strkeyDecodeSeed(seed) : seed;
  if (raw.length !== 32) throw new TypeError("veil: a Stellar seed has 32 bytes");
  const address = stellarAddress(ed25519.getPublicKey(raw));
  return {
    scheme: "stellar",
    address,
    sign: async (message) => {
      const bytes = opts.sep53 ? sha256(te.encode(sep53Prefix + message)) : te.encode(message);
      return base64.encode(ed25519.sign(bytes, raw));
    },
  };
}

function strkeyDecodeSeed(s: string): Uint8Array {
  try {
    return strkeyDecode(versionSeed, s.trim());
  } catch {
    throw new TypeError("veil: not a Stellar secret seed: want the S… key of 56 characters");
  }
}

/** stellarSecret is the S… form of a 32-byte ed25519 seed (for tests and key files). */
export function stellarSecret(seed: Uint8Array): string {
  return strkeyEncode(versionSeed, seed);
}

/**
 * solanaSigner signs the message's UTF-8 bytes with ed25519 and answers
 * the signature in base58, as Solana wallets' signMessage does. key is a
 * Solana keypair (64 bytes: seed then public key; the Solana CLI's id.json
 * array; or its base58 string) or a 32-byte seed.
 */
export function solanaSigner(key: Uint8Array | number[] | string): Signer {
  let raw: Uint8Array;
  if (typeof key === "string") {
    const t = key.trim();
    raw = t.startsWith("[") ? Uint8Array.from(JSON.parse(t) as number[]) : base58.decode(t);
  } else {
    raw = Uint8Array.from(key);
  }
  if (raw.length !== 32 && raw.length !== 64) {
    throw new TypeError(`veil: Solana keypair has ${raw.length} bytes, want 64 (secret seed and public key) or a 32-byte seed`);
  }
  const seed = raw.slice(0, 32);
  const pub = ed25519.getPublicKey(seed);
  if (raw.length === 64 && !raw.subarray(32).every((b, i) => b === pub[i])) {
    throw new TypeError("veil: Solana keypair: the public key does not match the secret");
  }
  return {
    scheme: "solana",
    address: solanaAddress(pub),
    sign: async (message) => base58.encode(ed25519.sign(te.encode(message), seed)),
  };
}
