// An x402 client built only from the reference packages (@x402/fetch,
// @x402/evm): it GETs URL and pays the 402 with the key in PAYER_KEY, as
// any x402 client would. Prints one JSON line: {status, body, settlement}.
import { wrapFetchWithPaymentFromConfig, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm";
import { privateKeyToAccount } from "viem/accounts";

const url = process.env.URL;
const account = privateKeyToAccount(process.env.PAYER_KEY);
// The devnet token is not one of the reference's default assets: allow it
// by network and contract, capped at MAX_UNITS base units (the client's
// own spend control).
const fetchWithPayment = wrapFetchWithPaymentFromConfig(fetch, {
  schemes: [{ network: "eip155:*", client: new ExactEvmScheme(account) }],
  spendControls: {
    allowedAssets: [{ network: process.env.NETWORK, asset: process.env.TOKEN, maxAmountPerPayment: process.env.MAX_UNITS }],
  },
});
const res = await fetchWithPayment(url, { method: "GET" });
const header = res.headers.get("PAYMENT-RESPONSE");
const out = {
  status: res.status,
  body: await res.text(),
  settlement: header ? decodePaymentResponseHeader(header) : null,
};
console.log(JSON.stringify(out));
