// A cluster CA replaced under a running server: certificates from the new CA and from the one it replaced both log in.
import { renameSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateCa } from "../../../src/pki/ca.js";
import { Issuer } from "../../../src/pki/issue.js";
import { issueCert, T0 } from "../auth/fixtures.js";
import { useSecureFixture, whoAmI } from "./fixtures.js";
import { testCa } from "../../fixtures/ca.js";

const fx = useSecureFixture({ caPollMs: 20 });

describe("CA rotation while running", () => {
  it("trusts the new CA once pki/ca.crt changes, and keeps trusting the replaced one", async () => {
    const f = fx();
    const old = await f.clientCert({ cn: "old-client" });
    const made = await generateCa({ commonName: "rotated cluster CA", keyType: "p256", lifetimeSeconds: 5 * 365 * 86_400, now: new Date(T0) });
    const fresh = await issueCert({ cn: "new-client", issuer: { certPem: made.certPem, issuer: new Issuer(made.ca) } });
    expect((await whoAmI(f, { cert: fresh })).status).toBe(401);

    const { certFile, keyFile } = f.state.pki.caFiles;
    writeFileSync(`${keyFile}.next`, made.keyPem, { mode: 0o600 });
    writeFileSync(`${certFile}.next`, made.certPem);
    renameSync(`${keyFile}.next`, keyFile);
    renameSync(`${certFile}.next`, certFile);
    // The file check runs on a timer; wait (bounded) until it has seen the new pair.
    let status = 0;
    for (let i = 0; i < 200 && status !== 201; i++) {
      status = (await whoAmI(f, { cert: fresh })).status;
      if (status !== 201) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(201);
    expect((await whoAmI(f, { cert: old })).body.status.userInfo.username).toBe("old-client");
    const stranger = await f.clientCert({ cn: "stranger", issuer: await testCa({ commonName: "unrelated CA" }) });
    expect((await whoAmI(f, { cert: stranger })).status).toBe(401);
  });
});
