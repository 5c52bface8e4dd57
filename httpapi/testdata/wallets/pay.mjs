// A wallet built only from independent libraries: it reads the payment
// URI of a Veil pay page (URI) and pays it on the devnet from the key in
// KEY, as a wallet app would. Prints one JSON line: {txHash, ...}.
//
//   EIP-681   (ethereum:…)      eth-url-parser reads it, viem sends the
//                               value or calls the token's transfer.
//   Solana Pay (solana:…)       @solana/pay's parseURL and createTransfer
//                               build the transfer (the reference as a
//                               read-only key), @solana/kit signs and
//                               sends; then findReference and
//                               validateTransfer, as a merchant checks it.
//                               createTransfer needs the recipient's token
//                               account: for a token the wallet first
//                               creates it (CreateIdempotent), as wallet
//                               apps do for a new recipient.
//   SEP-7     (web+stellar:…)   the Stellar wallet SDK parses it, the
//                               Stellar SDK pays: createAccount when the
//                               destination does not exist, else payment.
//
// RPC is the node's URL (Horizon's for Stellar); PASSPHRASE the Stellar
// node's network passphrase, which the URI's network_passphrase must name.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const uri = process.env.URI;
const rpcURL = process.env.RPC;
const key = process.env.KEY;

async function payEVM() {
  const { parse } = require("eth-url-parser");
  const BigNumber = createRequire(require.resolve("eth-url-parser"))("bignumber.js");
  const { createWalletClient, createPublicClient, http, defineChain, erc20Abi } = await import("viem");
  const { privateKeyToAccount } = await import("viem/accounts");
  const p = parse(uri);
  const id = Number(p.chain_id);
  const chain = defineChain({ id, name: "devnet", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [rpcURL] } } });
  const account = privateKeyToAccount(key);
  const wallet = createWalletClient({ account, chain, transport: http(rpcURL) });
  const client = createPublicClient({ chain, transport: http(rpcURL) });
  const big = (v) => BigInt(new BigNumber(String(v)).toFixed());
  let hash;
  if (p.function_name === "transfer") {
    hash = await wallet.writeContract({ address: p.target_address, abi: erc20Abi, functionName: "transfer", args: [p.parameters.address, big(p.parameters.uint256)] });
  } else {
    hash = await wallet.sendTransaction({ to: p.target_address, value: big(p.parameters.value) });
  }
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 100 });
  return { txHash: hash, status: receipt.status };
}

async function paySolana() {
  const kit = await import("@solana/kit");
  const pay = await import("@solana/pay");
  const { getCreateAssociatedTokenIdempotentInstructionAsync } = await import("@solana-program/token");
  const rpc = kit.createSolanaRpc(rpcURL);
  const signer = await kit.createKeyPairSignerFromBytes(kit.getBase58Encoder().encode(key));
  const fields = pay.parseURL(uri);
  const send = async (ixs) => {
    const { value: bh } = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
    const msg = kit.pipe(
      kit.createTransactionMessage({ version: "legacy" }),
      (m) => kit.setTransactionMessageFeePayerSigner(signer, m),
      (m) => kit.setTransactionMessageLifetimeUsingBlockhash(bh, m),
      (m) => kit.appendTransactionMessageInstructions(ixs, m),
    );
    const tx = await kit.signTransactionMessageWithSigners(msg);
    const sig = kit.getSignatureFromTransaction(tx);
    await rpc.sendTransaction(kit.getBase64EncodedWireTransaction(tx), { encoding: "base64", preflightCommitment: "confirmed" }).send();
    for (let i = 0; i < 600; i++) {
      const { value: [st] } = await rpc.getSignatureStatuses([sig]).send();
      if (st && st.err) { throw new Error(`transaction ${sig} failed: ${JSON.stringify(st.err, (_, v) => typeof v === "bigint" ? String(v) : v)}`); }
      if (st && (st.confirmationStatus === "confirmed" || st.confirmationStatus === "finalized")) { return sig; }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`transaction ${sig} not confirmed`);
  };
  let refused = "";
  if (fields.splToken) {
    try {
      await pay.createTransfer(rpc, signer, fields);
    } catch (e) {
      refused = String(e && e.message || e);
    }
    const ix = await getCreateAssociatedTokenIdempotentInstructionAsync({ payer: signer, owner: fields.recipient, mint: fields.splToken });
    await send([ix]);
  }
  const ixs = await pay.createTransfer(rpc, signer, fields);
  const sig = await send(ixs);
  const found = await pay.findReference(rpc, fields.reference[0], { commitment: "confirmed" });
  await pay.validateTransfer(rpc, sig, fields, { commitment: "confirmed" });
  return { txHash: sig, found: found.signature, validated: true, refusedBeforeTokenAccount: refused, reference: String(fields.reference[0]) };
}

async function payStellar() {
  const { parseSep7Uri, isValidSep7Uri } = require("@stellar/typescript-wallet-sdk");
  const sdk = await import("@stellar/stellar-sdk");
  const v = isValidSep7Uri(uri);
  if (!v.result) { throw new Error(v.reason); }
  const p = parseSep7Uri(uri);
  const server = new sdk.Horizon.Server(rpcURL, { allowHttp: true });
  const kp = sdk.Keypair.fromSecret(key);
  const source = await server.loadAccount(kp.publicKey());
  let exists = true;
  try {
    await server.loadAccount(p.destination);
  } catch (e) {
    if (!(e instanceof sdk.NotFoundError)) { throw e; }
    exists = false;
  }
  const asset = p.assetCode ? new sdk.Asset(p.assetCode, p.assetIssuer) : sdk.Asset.native();
  let op;
  if (exists) {
    op = sdk.Operation.payment({ destination: p.destination, asset, amount: p.amount });
  } else if (asset.isNative()) {
    op = sdk.Operation.createAccount({ destination: p.destination, startingBalance: p.amount });
  } else {
    throw new Error(`destination ${p.destination} does not exist and cannot receive ${p.assetCode}`);
  }
  // The network comes from the URI (SEP-7's network_passphrase, the
  // public network when absent), as a wallet takes it; PASSPHRASE is the
  // node's, which it must match.
  const networkPassphrase = p.networkPassphrase;
  if (process.env.PASSPHRASE && networkPassphrase !== process.env.PASSPHRASE) {
    throw new Error(`the URI names network ${JSON.stringify(networkPassphrase)}, the node runs ${JSON.stringify(process.env.PASSPHRASE)}`);
  }
  const tx = new sdk.TransactionBuilder(source, { fee: sdk.BASE_FEE, networkPassphrase })
    .addOperation(op).setTimeout(60).build();
  tx.sign(kp);
  const res = await server.submitTransaction(tx);
  return { txHash: res.hash, operation: exists ? "payment" : "createAccount", networkPassphrase };
}

let out;
try {
  if (uri.startsWith("ethereum:")) { out = await payEVM(); }
  else if (uri.startsWith("solana:")) { out = await paySolana(); }
  else if (uri.startsWith("web+stellar:")) { out = await payStellar(); }
  else { throw new Error("unknown URI scheme"); }
} catch (e) {
  const detail = e && e.response && e.response.data ? JSON.stringify(e.response.data) : "";
  console.error(String(e && e.stack || e), detail);
  process.exit(1);
}
console.log(JSON.stringify(out));
