// An x402 resource server built only from the reference packages:
// @x402/express's paymentMiddleware over an x402ResourceServer whose
// facilitator is a local x402Facilitator with @x402/evm's exact scheme,
// settling with FACILITATOR_KEY on the Veil EVM devnet at RPC_URL. GET
// /weather costs AMOUNT base units of TOKEN, paid to PAY_TO. Prints
// {"port": n} once listening on 127.0.0.1 (port 0: the system's choice).
import express from "express";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { registerExactEvmScheme } from "@x402/evm/exact/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { x402Facilitator } from "@x402/core/facilitator";
import { createWalletClient, defineChain, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const env = process.env;
const network = `eip155:${env.CHAIN_ID}`;
const chain = defineChain({
  id: Number(env.CHAIN_ID),
  name: "veil-devnet",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [env.RPC_URL] } },
});
const account = privateKeyToAccount(env.FACILITATOR_KEY);
const wallet = createWalletClient({ account, chain, transport: http(env.RPC_URL) }).extend(publicActions);
const signer = toFacilitatorEvmSigner({ ...wallet, address: account.address }, { confirmationTimeoutMs: 60_000 });

const facilitator = new x402Facilitator();
registerExactEvmScheme(facilitator, { signer, networks: network });

// The resource server talks to the facilitator in process (the
// FacilitatorClient interface), instead of over HTTP.
const local = {
  verify: (payload, requirements) => facilitator.verify(payload, requirements),
  settle: (payload, requirements) => facilitator.settle(payload, requirements),
  getSupported: async () => facilitator.getSupported(),
};
const resourceServer = new x402ResourceServer(local).register(network, new ExactEvmScheme());

const app = express();
app.use(
  paymentMiddleware(
    {
      "GET /weather": {
        accepts: {
          scheme: "exact",
          network,
          payTo: env.PAY_TO,
          price: { amount: env.AMOUNT, asset: env.TOKEN, extra: { name: env.TOKEN_NAME, version: env.TOKEN_VERSION } },
          maxTimeoutSeconds: 120,
        },
        description: "Weather report",
        mimeType: "application/json",
      },
    },
    resourceServer,
  ),
);
app.get("/weather", (req, res) => res.json({ report: "sunny", temperature: 21 }));

const srv = app.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: srv.address().port }));
});
