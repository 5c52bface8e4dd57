// The request and response types that Wraith's TypeScript SDK publishes
// for its agent client (GitHub wraith-protocol/sdk, src/agent/types.ts,
// MIT), transcribed as declarations: the compatibility test builds its
// requests from them and checks Veil's answers against them. Only the
// types are taken, not the SDK's code (docs/compat-wraith.md).

export enum Chain {
  Horizen = "horizen",
  Ethereum = "ethereum",
  Polygon = "polygon",
  Base = "base",
  Stellar = "stellar",
  Solana = "solana",
  All = "all",
}

export interface WraithConfig {
  apiKey: string;
  baseUrl?: string;
  ai?: { provider: "gemini" | "openai" | "claude"; apiKey: string };
}

export interface AgentConfig {
  name: string;
  chain: Chain | Chain[];
  wallet: string;
  signature: string;
  message?: string;
}

export interface AgentInfo {
  id: string;
  name: string;
  chains: Chain[];
  addresses: Record<Chain, string>;
  metaAddresses: Record<Chain, string>;
}

export interface ChatResponse {
  response: string;
  toolCalls?: ToolCall[];
  conversationId: string;
}

export interface ToolCall {
  name: string;
  status: string;
  detail?: string;
}

export interface Balance {
  native: string;
  tokens: Record<string, string>;
}

export interface Payment {
  stealthAddress: string;
  balance: string;
  ephemeralPubKey: string;
}

export interface Notification {
  id: number;
  type: string;
  title: string;
  body: string;
  read: boolean;
  createdAt: string;
}

export interface Conversation {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
}
