// The benchmarks' API server: `platform-ca apiserver --insecure-local` as a real process, and HTTP(S) calls to a server.
import { spawn, type ChildProcess } from "node:child_process";
import { request, type Agent } from "node:http";
import { request as httpsRequest } from "node:https";
import { PLATFORM_CA as CLI } from "../fixtures/repo.js";

/** One call on a keep-alive agent (an https.Agent, with the client certificate, for an https:// base). */
export function httpCall(agent: Agent, base: string, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  const send = base.startsWith("https:") ? httpsRequest : request;
  return new Promise((resolve, reject) => {
    const req = send(base + path, { method, agent, headers: body ? { "content-type": "application/json", "content-length": Buffer.byteLength(body) } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Starts the server on a data directory (with extra flags such as `--encryption-provider-config`); resolves once it listens. */
export function startServer(dataDir: string, extraArgs: readonly string[] = []): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [CLI, "apiserver", "--insecure-local", "--listen", "127.0.0.1:0", "--data-dir", dataDir, ...extraArgs], {
    stdio: ["ignore", "pipe", "ignore"],
    env: { ...process.env, PLATFORM_LOG_LEVEL: "warn" },
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, base: m[1]! });
    });
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
}

export function stopServer(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners("exit");
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}
