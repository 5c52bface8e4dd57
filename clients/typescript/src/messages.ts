// The texts an owner wallet signs (docs/signatures.md; the server parses
// them in chains/walletsig/message.go). Each is three lines joined by "\n",
// no trailing newline; Issued At is RFC 3339 in UTC to the second, and the
// server accepts it for 10 minutes (1 minute of clock skew ahead), once.

/** The agent name suffix: alice is alice.veil. */
export const nameSuffix = ".veil";

/** issuedAt writes t as the messages do: 2026-01-15T12:00:00Z. */
export function issuedAt(t: Date): string {
  return t.toISOString().replace(/\.\d+Z$/, "Z");
}

/** createMessage is the text signed to create agent name (without .veil) on chain. */
export function createMessage(name: string, chain: string, wallet: string, at: Date): string {
  return `Veil wants you to create agent ${name}${nameSuffix} on ${chain}.\nWallet: ${wallet}\nIssued At: ${issuedAt(at)}`;
}

/** exportMessage is the text signed to export the private key of agent agentId. */
export function exportMessage(agentId: string, wallet: string, at: Date): string {
  return `Veil wants you to export the private key of agent ${agentId}.\nWallet: ${wallet}\nIssued At: ${issuedAt(at)}`;
}

/**
 * policyMessage is the text signed to set the spending policy whose
 * canonical hash is policyHash; the server's POST /agent/:id/policy/preview
 * answers the hash and this message, so clients need not hash themselves.
 */
export function policyMessage(policyHash: string, agentId: string, wallet: string, at: Date): string {
  return `Veil wants you to set spending policy ${policyHash} for agent ${agentId}.\nWallet: ${wallet}\nIssued At: ${issuedAt(at)}`;
}

/** approvalMessage is the text signed to approve (or, with deny, deny) held payment approvalId of agent agentId. */
export function approvalMessage(approvalId: string, agentId: string, wallet: string, deny: boolean, at: Date): string {
  const verb = deny ? "deny" : "approve";
  return `Veil wants you to ${verb} payment ${approvalId} of agent ${agentId}.\nWallet: ${wallet}\nIssued At: ${issuedAt(at)}`;
}
