// The official TypeScript SDK client against a Veil agent's MCP endpoint:
// initialize, list tools, get_balance, pay another agent. Run by
// httpapi's TestMCPTypeScriptClient, which checks what it prints (one JSON
// object on stdout).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { VEIL_MCP_URL, VEIL_API_KEY, VEIL_PAY_TO } = process.env;
const transport = new StreamableHTTPClientTransport(new URL(VEIL_MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${VEIL_API_KEY}` } },
});
const client = new Client({ name: "veil-ts-interop", version: "1.0.0" });
await client.connect(transport);

const text = (res) => res.content.map((c) => c.text).join("");
const out = { server: client.getServerVersion()?.name };
const { tools } = await client.listTools();
out.tools = tools.map((t) => t.name).sort();
out.payAgentSchema = tools.find((t) => t.name === "pay_agent")?.inputSchema;
const bal = await client.callTool({ name: "get_balance", arguments: {} });
out.balance = { isError: bal.isError ?? false, result: JSON.parse(text(bal)) };
const pay = await client.callTool({
  name: "pay_agent",
  arguments: { agent_name: VEIL_PAY_TO, amount: "0.001", asset: "ETH" },
  _meta: { idempotencyKey: "ts-interop-1" },
});
out.pay = { isError: pay.isError ?? false, result: JSON.parse(text(pay)) };
const { resources } = await client.listResources();
out.resources = resources.map((r) => r.uri).sort();
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
