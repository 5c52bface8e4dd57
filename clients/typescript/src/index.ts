// Veil's TypeScript client: see docs/typescript.md.
export * from "./client.js";
export * from "./errors.js";
export * from "./messages.js";
export * from "./signers.js";
export type * from "./types.js";
export type { paths, components, operations } from "./openapi.js";
