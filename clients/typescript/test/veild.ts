// A real veild for the tests: the binary scripts/test.mjs built (VEIL_BIN),
// started on 127.0.0.1:0 with the embedded devnets (their ports chosen by
// the kernel too), on a fresh data directory. The address comes from its
// "veild serving" log line and the API key from its bootstrap output, so no
// port is ever picked by the test.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

export interface Veild {
  url: string;
  key: string;
  stop(): Promise<void>;
  /** Everything veild logged so far (for failure messages). */
  logs(): string;
}

const servingRE = /msg="veild serving" addr=(\S+)/;
const keyRE = /veil_live_[A-Za-z0-9_-]{43}/;

export async function startVeild(extra: string[] = []): Promise<Veild> {
  const bin = process.env.VEIL_BIN;
  if (!bin) throw new Error("VEIL_BIN is not set: run the tests with `npm test` (scripts/test.mjs builds veild)");
  const data = mkdtempSync(join(tmpdir(), "veil-ts-data-"));
  const args = ["serve", "--addr", "127.0.0.1:0", "--devnet-base-port", "0", "--metrics-addr", "127.0.0.1:0", "--shutdown-grace", "5s", ...extra];
  const child: ChildProcess = spawn(bin, args, { env: { ...process.env, VEIL_DATA: data }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let log = "";
  let addr = "";
  let key = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    // Generous: the machine may be loaded; nothing here waits for time to pass.
    const timer = setTimeout(() => reject(new Error(`veild did not start in 180 s; stderr:\n${log}`)), 180_000);
    const done = () => {
      if (addr && key) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      const m = keyRE.exec(out);
      if (m) key = m[0];
      done();
    });
    createInterface({ input: child.stderr! }).on("line", (line) => {
      log += line + "\n";
      const m = servingRE.exec(line);
      if (m) addr = m[1]!;
      done();
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`veild exited (${code}) before serving; stderr:\n${log}`));
    });
  });
  return {
    url: "http://" + addr,
    key,
    logs: () => log,
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(data, { recursive: true, force: true });
    },
  };
}
