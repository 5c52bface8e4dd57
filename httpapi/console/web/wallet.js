// The owner's browser wallet, through the EIP-1193 provider a wallet
// extension injects as window.ethereum. The console builds the exact
// messages of docs/signatures.md (chains/walletsig) and asks the wallet to
// sign them (personal_sign, EIP-191); owners of Stellar or Solana wallets
// sign the same text in their wallet and paste the signature.

export function hasWallet() { return !!window.ethereum && typeof window.ethereum.request === "function"; }

// connect asks the wallet for its account and answers the address.
export async function connect() {
  if (!hasWallet()) throw new Error("No browser wallet found: install one, or sign the message elsewhere and paste the signature.");
  const accounts = await window.ethereum.request({ method: "eth_requestAccounts" });
  if (!accounts || !accounts[0]) throw new Error("The wallet gave no account.");
  return accounts[0];
}

function hexUTF8(s) {
  return "0x" + Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, "0")).join("");
}

// sign asks the wallet to sign message (EIP-191 personal_sign) as address.
export async function sign(message, address) {
  if (!hasWallet()) throw new Error("No browser wallet found: paste a signature instead.");
  return window.ethereum.request({ method: "personal_sign", params: [hexUTF8(message), address] });
}

// issuedAt is now in the messages' format: UTC, whole seconds, "Z".
export function issuedAt(d = new Date()) { return d.toISOString().replace(/\.\d+Z$/, "Z"); }

export function createMessage(name, chain, wallet, at = issuedAt()) {
  return `Veil wants you to create agent ${name}.veil on ${chain}.\nWallet: ${wallet}\nIssued At: ${at}`;
}

export function approvalMessage(approvalID, agentID, wallet, deny, at = issuedAt()) {
  return `Veil wants you to ${deny ? "deny" : "approve"} payment ${approvalID} of agent ${agentID}.\nWallet: ${wallet}\nIssued At: ${at}`;
}
