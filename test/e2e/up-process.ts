// Runs `platform-ca up` as a real process for end-to-end tests; kubectlWith(up.adminConfig) speaks to it.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { startProcess, type Proc } from "../fixtures/process.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { PLATFORM_CA as CLI } from "../fixtures/repo.js";


export interface UpProcess extends Proc {
  /** The https:// address printed on the banner's last line. */
  readonly address: string;
  readonly dataDir: string;
  readonly adminConfig: string;
}

export interface UpOptions {
  /** `up` (default), or `apiserver` alone: both print the same banner. */
  readonly command?: "up" | "apiserver";
  readonly dataDir?: string;
  readonly args?: readonly string[];
}

/** Starts `platform-ca up --listen 127.0.0.1:0`; resolves once the banner names the address (everything is running then). */
export async function startUp(o: UpOptions = {}): Promise<UpProcess> {
  const dataDir = o.dataDir ?? join(tempDir("platform-ca-up-"), "data");
  const args = [CLI, o.command ?? "up", "--data-dir", dataDir, "--listen", "127.0.0.1:0", ...(o.args ?? [])];
  const { proc, match } = await startProcess(process.execPath, args, /listening on (https:\/\/\S+)/, { env: { PLATFORM_LOG_LEVEL: "info" }, what: `platform-ca ${o.command ?? "up"}`, timeoutMs: 60_000 });
  return { ...proc, address: match, dataDir, adminConfig: join(dataDir, "admin.conf") };
}

/** A kubeconfig beside admin.conf: the same cluster and CA, another user. */
export function kubeconfigFor(up: UpProcess, name: string, user: Record<string, unknown>): string {
  const doc = parseYaml(readFileSync(up.adminConfig, "utf8"));
  doc.users = [{ name, user }];
  doc.contexts[0].context.user = name;
  const path = join(up.dataDir, `${name}.conf`);
  writeFileSync(path, toYaml(doc), { mode: 0o600 });
  return path;
}
