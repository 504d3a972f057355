// `platform-ca up` runs the controller manager on a thread of its own: banner, health and metrics, a node-agent CSR
// approved and issued, and a clean SIGTERM that stops the controllers before the server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newCsrObject } from "../fixtures/csr.js";
import { ensureBuilt, type Kubectl, kubectlWith } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";
import { opsGet } from "../controller/controllers/cluster.js";
import { availableParallelism } from "node:os";
import { connect as tlsConnect } from "node:tls";

describe("platform-ca up: the controllers on their own thread", () => {
  let up: UpProcess;
  let kubectl: Kubectl;
  let ops: string;

  beforeAll(async () => {
    ensureBuilt();
    up = await startUp();
    kubectl = kubectlWith(up.adminConfig);
    ops = /controllers {2}health and metrics on (https:\/\/127\.0\.0\.1:\d+) \(own thread\)/.exec(up.stdout())?.[1] ?? "";
  }, 240_000);
  afterAll(async () => {
    if (up.child.exitCode === null) await up.stop();
  });

  it("names the controllers' health and metrics address in the banner, and it answers", async () => {
    expect(ops).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    // Ready once the caches have synced: shortly after the banner.
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await opsGet(up.adminConfig, `${ops}/readyz`)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe(200);
    // /metrics is authenticated and authorized by the API server: admin.conf's certificate (system:masters) may.
    const metrics = (await opsGet(up.adminConfig, `${ops}/metrics`)).text;
    expect((await opsGet(undefined, `${ops}/metrics`)).status).toBe(401);
    expect(metrics).toMatch(/^platform_ca_workqueue_depth\{name="clustertrustbundle-publisher"\} \d+$/m);
  });

  it("serves the API server's health without credentials, and its metrics and per-check paths to admin.conf through kubectl", async () => {
    expect(await opsGet(undefined, `${up.address}/readyz?verbose`)).toMatchObject({ status: 200, text: expect.stringContaining("[+]storage ok\n") });
    expect((await opsGet(undefined, `${up.address}/metrics`)).status).toBe(401);
    expect(kubectl(["get", "--raw", "/readyz/storage"])).toBe("ok");
    expect(kubectl(["get", "--raw", "/metrics"])).toMatch(/^apiserver_request_total\{verb="GET",.*code="200"\} \d+$/m);
  });

  it("approves and issues a node-agent client CSR created through the server", async () => {
    const manifest = JSON.stringify(await newCsrObject({ name: "thread-1", cn: "system:node:thread-1", o: ["system:nodes"] }));
    kubectl(["create", "-f", "-"], manifest);
    let certificate = "";
    for (let i = 0; i < 100 && certificate === ""; i++) {
      certificate = kubectl(["get", "csr", "thread-1", "-o", "jsonpath={.status.certificate}"]);
      if (certificate === "") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(Buffer.from(certificate, "base64").toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(kubectl(["get", "csr", "thread-1"])).toMatch(/Approved,Issued/);
    const signed = (await opsGet(up.adminConfig, `${ops}/metrics`)).text;
    expect(signed).toMatch(/^platform_ca_csr_signed_total\{signer="platform\.io\/apiserver-client-nodeagent"\} 1$/m);
  });

  it("publishes the root CA in every namespace, whose ca.crt verifies the server, and puts it back when changed", async () => {
    const caOf = async (ns: string): Promise<string> => {
      for (let i = 0; i < 100; i++) {
        const text = kubectl(["get", "configmap", "platform-root-ca.crt", "-n", ns, "-o", "jsonpath={.data.ca\\.crt}", "--ignore-not-found"]);
        if (text.startsWith("-----BEGIN CERTIFICATE-----")) return text;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`no root CA ConfigMap in ${ns}`);
    };
    const ca = await caOf("default");
    // A TLS handshake that trusts only that bundle, checking the server's name, as a client inside would.
    const url = new URL(up.address);
    await new Promise<void>((resolve, reject) => {
      const socket = tlsConnect({ host: url.hostname, port: Number(url.port), ca, servername: url.hostname === "127.0.0.1" ? undefined : url.hostname }, () => {
        socket.end();
        resolve();
      });
      socket.once("error", reject);
    });
    kubectl(["create", "namespace", "root-ca-test"]);
    expect(await caOf("root-ca-test")).toBe(ca);
    kubectl(["patch", "configmap", "platform-root-ca.crt", "-n", "root-ca-test", "-p", '{"data":{"ca.crt":"tampered"}}']);
    for (let i = 0; i < 100 && kubectl(["get", "configmap", "platform-root-ca.crt", "-n", "root-ca-test", "-o", "jsonpath={.data.ca\\.crt}"]) !== ca; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(kubectl(["get", "configmap", "platform-root-ca.crt", "-n", "root-ca-test", "-o", "jsonpath={.data.ca\\.crt}"])).toBe(ca);
    kubectl(["delete", "namespace", "root-ca-test"]);
  });

  it("stops the controller thread, then the server, on SIGTERM (exit 0)", async () => {
    expect(await up.stop()).toBe(0);
    const log = up.stderr();
    const controllers = log.indexOf('"msg":"controller manager stopped"');
    const server = log.indexOf('"msg":"API server stopped"');
    expect(controllers).toBeGreaterThan(0);
    expect(server).toBeGreaterThan(controllers);
    await expect(opsGet(up.adminConfig, `${ops}/readyz`)).rejects.toThrow();
  });
});

describe("embeddedControllerSettings", () => {
  it("runs the embedded controllers without leader election and without a client rate limit, with the cluster CA for every built-in signer", async () => {
    const { embeddedControllerSettings } = await import("../../src/cli/commands/controller.js");
    const { groupNames } = await import("../../src/api/group.js");
    const names = groupNames();
    const caFiles = { certFile: "/d/pki/ca.crt", keyFile: "/d/pki/ca.key" };
    const s = await embeddedControllerSettings({ names, caFiles, adminConfigPath: "/d/admin.conf" });
    expect(s.config.Generic.LeaderElection.leaderElect).toBe(false);
    expect(s.config.Generic.ClientConnection.qps).toBe(0);
    expect([...s.signingFiles.keys()].sort()).toEqual(Object.values(names.signers).sort());
    expect([...s.signingFiles.values()].every((f) => f === caFiles)).toBe(true);
    expect(s.kubeconfig).toBe("/d/admin.conf");
    // HTTPS (no insecureHttp), client certificates of the cluster CA accepted beside reviewed tokens.
    expect(s.ops).toEqual({ host: "127.0.0.1", port: 0, clientCaFile: caFiles.certFile });
    // The server's and the controllers' threads hold two cores: the signing pool gets only the others.
    expect(s.signingPoolWorkers).toBe(Math.max(0, availableParallelism() - 2));
  });
});
