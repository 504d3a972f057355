// Commands given several objects handle every one, as kubectl does: what worked is printed, each failure is reported
// on stderr after it, and the exit code is 1. Real processes against `platform-ca up`, with kubectl as the reference.
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { oneClearError, sameAsKubectl, useUpServer } from "./fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { serviceAccount } from "../../fixtures/objects.js";

const server = useUpServer();
const CSRS = "certificatesigningrequests.certificates.platform.io";
const notFound = (name: string) => `error: ${CSRS} "${name}" not found\n`;

/** Creates pending CSRs through `certificate request` (a fresh key each). */
async function requestCsrs(...names: string[]): Promise<void> {
  const dir = tempDir();
  for (const name of names) {
    const r = await server.up.ctl(["certificate", "request", name, "--cn", name, "--key-out", join(dir, `${name}.key`)]);
    expect(r.stderr).toBe("");
  }
}

const conditionOf = async (name: string) => (await server.up.ctl(["get", "csr", name, "-o", "jsonpath={.status.conditions[*].type}"])).stdout;

beforeAll(async () => {
  await requestCsrs("alice", "bob", "carol", "to-delete", "to-approve-1", "to-approve-2", "to-deny", "to-patch");
}, 60_000);

describe("get", () => {
  it("prints the rows of the names found and the error of the missing one, exit 1", async () => {
    const r = await server.up.ctl(["get", "csr", "nosuch", "alice"]);
    expect(r.stdout).toMatch(/^NAME\s+AGE\s+SIGNERNAME.*\nalice\s+\d+s\s+platform.io\/apiserver-client\s.*Pending\n$/);
    expect(r.stderr).toBe(notFound("nosuch"));
    expect(r.code).toBe(1);
  });

  it("prints the List of the objects found with -o json, then every error", async () => {
    const r = await server.up.ctl(["get", "csr", "alice", "nosuch", "bob", "nosuch2", "-o", "json"]);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: "List", items: [{ metadata: { name: "alice" } }, { metadata: { name: "bob" } }] });
    expect(r.stderr).toBe(notFound("nosuch") + notFound("nosuch2"));
    expect(r.code).toBe(1);
  });

  it("prints only the error when the one object asked for is missing", async () => {
    const r = await server.up.ctl(["get", "csr", "nosuch", "-o", "json"]);
    expect([r.code, r.stdout, oneClearError(r)]).toEqual([1, "", notFound("nosuch").trim()]);
  });

  it.each([
    [["get", "csr", "nosuch", "alice", "-o", "name"]],
    [["get", "csr", "alice", "nosuch", "bob", "-o", "jsonpath={.items[*].metadata.name}"]],
    [["get", "csr", "nosuch", "nosuch2", "-o", "name"]],
  ])("%j prints what kubectl prints, and exits as kubectl does", async (args) => {
    await sameAsKubectl(server.up, args);
  });

  it("handles TYPE/NAME arguments the same way", async () => {
    const r = await server.up.ctl(["get", "csr/nosuch", "csr/alice", "-o", "name"]);
    expect([r.code, r.stdout, r.stderr]).toEqual([1, `certificatesigningrequest.certificates.platform.io/alice\n`, notFound("nosuch")]);
  });
});

describe("delete", () => {
  it("deletes the objects that exist and reports the missing ones, exit 1", async () => {
    const r = await server.up.ctl(["delete", "csr", "nosuch", "to-delete"]);
    expect(r.stdout).toBe(`certificatesigningrequest.certificates.platform.io "to-delete" deleted\n`);
    expect(r.stderr).toBe(notFound("nosuch"));
    expect(r.code).toBe(1);
    expect((await server.up.ctl(["get", "csr", "to-delete"])).stderr).toBe(notFound("to-delete"));
  });
});

describe("certificate approve and deny", () => {
  it("approves every CSR that exists and reports the missing one, exit 1", async () => {
    const r = await server.up.ctl(["certificate", "approve", "nosuch", "to-approve-1", "to-approve-2"]);
    expect(r.stdout).toBe(`${["to-approve-1", "to-approve-2"].map((n) => `certificatesigningrequest.certificates.platform.io/${n} approved\n`).join("")}`);
    expect(r.stderr).toBe(notFound("nosuch"));
    expect(r.code).toBe(1);
    expect([await conditionOf("to-approve-1"), await conditionOf("to-approve-2")]).toEqual(["Approved", "Approved"]);
  });

  it("denies the CSR after one that refuses the decision", async () => {
    const r = await server.up.ctl(["certificate", "deny", "to-approve-1", "to-deny"]);
    expect(r.stdout).toBe("certificatesigningrequest.certificates.platform.io/to-deny denied\n");
    expect(oneClearError(r)).toBe('error: certificate signing request "to-approve-1" is already Approved');
    expect(r.code).toBe(1);
    expect(await conditionOf("to-deny")).toBe("Denied");
  });
});

describe("describe and patch", () => {
  it("describes the objects found, then reports the missing ones", async () => {
    const r = await server.up.ctl(["describe", "csr", "nosuch", "carol", "nosuch2"]);
    expect(r.stdout).toMatch(/^Name:\s+carol\n/);
    expect(r.stderr).toBe(notFound("nosuch") + notFound("nosuch2"));
    expect(r.code).toBe(1);
  });

  it("patches the objects found, then reports the missing one", async () => {
    const r = await server.up.ctl(["patch", "csr", "nosuch", "to-patch", "--type", "merge", "-p", '{"metadata":{"labels":{"patched":"yes"}}}']);
    expect(r.stdout).toBe("certificatesigningrequest.certificates.platform.io/to-patch patched\n");
    expect(r.stderr).toBe(notFound("nosuch"));
    expect(r.code).toBe(1);
  });
});

describe("create and apply -f", () => {
  const sa = (name: string) => toYaml(serviceAccount({ name }));

  it("creates the new objects of a file beside one that already exists", async () => {
    await server.up.ctl(["create", "-f", "-"], { stdin: sa("existing") });
    const r = await server.up.ctl(["create", "-f", "-"], { stdin: [sa("existing"), sa("fresh")].join("---\n") });
    expect(r.stdout).toBe("serviceaccount/fresh created\n");
    expect(oneClearError(r)).toMatch(/serviceaccounts "existing" already exists/);
    expect(r.code).toBe(1);
  });

  it("applies the objects after one the server refuses", async () => {
    const bad = toYaml({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "Not_A_Name" } });
    const r = await server.up.ctl(["apply", "-f", "-"], { stdin: [bad, sa("applied-after")].join("---\n") });
    expect(r.stdout).toBe("serviceaccount/applied-after created\n");
    expect(oneClearError(r)).toMatch(/Not_A_Name/);
    expect(r.code).toBe(1);
  });
});
