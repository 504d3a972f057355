// `platform-ca apiserver --insecure-local`: authorization is off, and access reviews say so (a controller beside it
// can approve node-agent CSRs).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, startApiserver, type ApiserverProcess } from "./apiserver-process.js";

describe("apiserver --insecure-local answers SubjectAccessReviews", () => {
  let server: ApiserverProcess;
  beforeAll(async () => {
    ensureBuilt();
    server = await startApiserver();
  }, 120_000);
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  const review = (spec: Record<string, unknown>) =>
    fetch(`${server.address}/apis/authorization.platform.io/v1/subjectaccessreviews`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ apiVersion: "authorization.platform.io/v1", kind: "SubjectAccessReview", spec }),
    });

  it("allows every access, saying why", async () => {
    const r = await review({
      user: "system:bootstrap:abc123",
      groups: ["system:bootstrappers"],
      resourceAttributes: { group: "certificates.platform.io", resource: "certificatesigningrequests", subresource: "nodeclient", verb: "create" },
    });
    expect(r.status).toBe(201);
    expect((await r.json()).status).toEqual({ allowed: true, reason: "insecure-local: authorization is off" });
  });

  it("still validates the review itself (422 without user or attributes)", async () => {
    const r = await review({ resourceAttributes: { verb: "get", resource: "pods" } });
    expect(r.status).toBe(422);
    expect((await r.json()).kind).toBe("Status");
  });
});
