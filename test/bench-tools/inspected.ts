// A node process with its inspector on a free loopback port, for the bench tools that read another process's heap; and a
// run of a built bench module's function in a node that has WebSocket, as the benches run them.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { promisify } from "node:util";
import { freePort } from "../fixtures/ports.js";

const started: ChildProcess[] = [];

/** Stops every process startInspected started (an afterEach). */
export function stopInspected(): void {
  for (const child of started.splice(0)) child.kill();
}

/** Runs `script` (CommonJS, `-e`) under `--inspect`; resolves with the port once it prints "ready". */
export async function startInspected(script: string, env: Readonly<Record<string, string>> = {}): Promise<number> {
  const port = await freePort();
  const child = spawn(process.execPath, [`--inspect=127.0.0.1:${port}`, "-e", script], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "ignore"] });
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => String(d).includes("ready") && resolve());
    child.once("exit", (code) => reject(new Error(`the inspected process exited with ${code}`)));
  });
  return port;
}

/** Runs an ES module `script` in a node with WebSocket and returns what it printed, parsed as JSON. */
export async function runWithWebSocket<T>(script: string): Promise<T> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--experimental-websocket", "--no-warnings", "--input-type=module", "-e", script], { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as T;
}
