// The --authentication-config file reloaded on change: a good file replaces the issuers, a bad or unreadable one is refused and logged.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { AuthenticationConfigFile } from "../../../src/apiserver/auth/authn-config-reload.js";
import { startTestOidcIssuer, type TestOidcIssuer } from "../../../src/testing/oidc-issuer.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const config = (issuer: TestOidcIssuer, prefix: string) =>
  stringify({
    apiVersion: "apiserver.config.platform.io/v1",
    kind: "AuthenticationConfiguration",
    jwt: [{ issuer: { url: issuer.url, certificateAuthority: issuer.caPem, audiences: ["platform"] }, claimMappings: { username: { claim: "sub", prefix } } }],
    anonymous: { enabled: true, conditions: [{ path: "/livez" }] },
  });

describe("AuthenticationConfigFile", () => {
  let issuer: TestOidcIssuer;
  beforeAll(async () => {
    issuer = await startTestOidcIssuer();
  });
  afterAll(() => issuer?.close());

  it("refuses to start with an invalid file, naming the field", async () => {
    const path = join(tempDir(), "auth.yaml");
    writeFileSync(path, config(issuer, "a:").replace("audiences:", "audiencez:"));
    await expect(new AuthenticationConfigFile({ path, checkIntervalMs: 60_000 }).start()).rejects.toThrow(/`jwt\[0\]\.issuer\.audiences` to list at least one audience/);
  });

  it("swaps in a good change, keeps the running configuration on a bad or missing file and logs why", async () => {
    const path = join(tempDir(), "auth.yaml");
    writeFileSync(path, config(issuer, "a:"));
    const file = new AuthenticationConfigFile({ path, checkIntervalMs: 60_000 });
    await file.start();
    const user = async () => ((await file.current!.jwt.authenticateToken(await issuer.mint({ sub: "u" }))) as { user?: { username: string } }).user?.username;
    await expect.poll(() => file.notReady().length).toBe(0);
    expect(await user()).toBe("a:u");
    expect(file.current!.anonymous).toEqual({ enabled: true, conditions: ["/livez"] });

    await file.check();
    expect(file.stats).toMatchObject({ reloads: 0, refused: 0 });

    writeFileSync(path, config(issuer, "b:").replace("audiences:", "audience:"));
    await file.check();
    expect(file.stats).toMatchObject({ reloads: 0, refused: 1, lastError: expect.stringMatching(/audience/) });
    expect(await user()).toBe("a:u");

    rmSync(path);
    await file.check();
    expect(file.stats).toMatchObject({ refused: 2, lastError: expect.stringMatching(/ENOENT/) });
    // Checked again (the folder watch and the timer both look), the same missing file is not reported twice.
    await file.check();
    expect(file.stats.refused).toBe(2);
    expect(await user()).toBe("a:u");

    writeFileSync(path, config(issuer, "c:"));
    await file.check();
    expect(file.stats.reloads).toBe(1);
    expect(await user()).toBe("c:u");
    file.stop();
  });
});
