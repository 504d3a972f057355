// A throwaway SoftHSM2 token for tests: its own token directory and SOFTHSM2_CONF, a user PIN file, key URIs.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

export const SOFTHSM_MODULE = "/usr/lib/softhsm/libsofthsm2.so";
export const USER_PIN = "4321";

export interface TestToken {
  readonly dir: string;
  readonly label: string;
  readonly pinFile: string;
  /** Environment for child processes: SOFTHSM2_CONF. */
  readonly env: Readonly<Record<string, string>>;
  /** `pkcs11:token=<label>;object=<object>?module-path=...&pin-source=file:<pin file>` */
  uri(object: string): string;
}

/**
 * Initialises a token in a new directory and points this process at it. SoftHSM2 reads SOFTHSM2_CONF when the
 * module is initialised, once per process (one test file), so call this before any token is opened.
 */
export function softhsmToken(label = "platform-ca-test"): TestToken {
  const dir = mkdtempSync(join(tmpdir(), "platform-ca-hsm-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const conf = join(dir, "softhsm2.conf");
  mkdirSync(join(dir, "tokens"));
  writeFileSync(conf, `directories.tokendir = ${join(dir, "tokens")}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  const env = { SOFTHSM2_CONF: conf };
  execFileSync("softhsm2-util", ["--init-token", "--free", "--label", label, "--pin", USER_PIN, "--so-pin", "87654321"], { env: { ...process.env, ...env }, stdio: "pipe" });
  process.env.SOFTHSM2_CONF = conf;
  const pinFile = join(dir, "user.pin");
  writeFileSync(pinFile, `${USER_PIN}\n`, { mode: 0o600 });
  return {
    dir,
    label,
    pinFile,
    env,
    uri: (object) => `pkcs11:token=${encodeURIComponent(label)};object=${encodeURIComponent(object)}?module-path=${SOFTHSM_MODULE}&pin-source=file:${pinFile}`,
  };
}

/** Files under `dir` (recursively) that hold a PEM private key: a token-backed CA must leave none. */
export function privateKeyFiles(...dirs: string[]): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/PRIVATE KEY-----/.test(readFileSync(path, "latin1"))) found.push(path);
    }
  };
  for (const d of dirs) walk(d);
  return found;
}
