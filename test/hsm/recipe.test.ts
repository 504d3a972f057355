// The SoftHSM2 set-up recipe of docs/signers.md, run as written: token, CA key in it, a signed certificate.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, REPO } from "../cli/fixtures.js";
import { privateKeyFiles } from "./softhsm.js";

const doc = readFileSync(join(REPO, "docs/signers.md"), "utf8");
const recipe = /### Set-up with SoftHSM2[\s\S]*?```sh\n([\s\S]*?)```/.exec(doc)?.[1];

describe("docs/signers.md SoftHSM2 recipe", () => {
  const dir = mkdtempSync(join(tmpdir(), "platform-ca-recipe-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("sets up a token, generates the CA key in it and issues a certificate openssl verifies", () => {
    expect(recipe).toMatch(/platform-ca hsm init-ca/);
    const bin = join(dir, "bin");
    for (const d of [bin, join(dir, "hsm")]) mkdirSync(d, { recursive: true });
    writeFileSync(join(bin, "platform-ca"), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, { mode: 0o755 });
    const out = execFileSync("bash", ["-euo", "pipefail", "-c", recipe!], {
      env: { ...process.env, HSM_DIR: join(dir, "hsm"), PATH: `${bin}:${process.env.PATH}` },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    }).toString();
    expect(out).toMatch(/alice\.crt: OK\n$/);
    expect(readFileSync(join(dir, "hsm", "alice.crt"), "latin1")).toMatch(/^-----BEGIN CERTIFICATE-----/);
    // The only private key on disk is the client's own; the CA key exists only in the token.
    expect(privateKeyFiles(join(dir, "hsm"))).toEqual([join(dir, "hsm", "alice.key")]);
  });
});
