// Server-side apply with real kubectl and with platformctl: the same sequence of two managers on two objects gives the same
// stored objects, the same managedFields (times aside) and the same conflict message.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CTL, runNode } from "../cli/ctl/fixtures.js";
import { ensureBuilt, kubectlFails, kubectlFor, startApiserver, type ApiserverProcess, type Kubectl } from "./apiserver-process.js";

const manifest = (name: string, labels: Record<string, string>, automount?: boolean) =>
  `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n${Object.keys(labels).length ? `  labels:\n${Object.entries(labels).map(([k, v]) => `    ${k}: ${v}\n`).join("")}` : ""}${automount === undefined ? "" : `automountServiceAccountToken: ${automount}\n`}`;

interface Step {
  readonly args: readonly string[];
  readonly body: (name: string) => string;
  readonly fails?: boolean;
}

/** Manager a creates; b changes a's label (a conflict), then forces it; a then drops the label it alone owned. */
const SEQUENCE: readonly Step[] = [
  { args: ["--field-manager=a"], body: (n) => manifest(n, { team: "a", owner: "a" }, false) },
  { args: ["--field-manager=b"], body: (n) => manifest(n, { team: "b", tier: "web" }), fails: true },
  { args: ["--field-manager=b", "--force-conflicts"], body: (n) => manifest(n, { team: "b", tier: "web" }) },
  { args: ["--field-manager=a"], body: (n) => manifest(n, {}, false) },
];

/** The stored object without what differs by name and time alone (entries are ordered by time, so by manager here). */
function comparable(json: string): unknown {
  const o = JSON.parse(json);
  const { name: _n, uid: _u, resourceVersion: _r, creationTimestamp: _c, managedFields, ...meta } = o.metadata;
  const entries = managedFields.map(({ time: _t, ...e }: { time?: string; manager: string }) => e);
  return { ...o, metadata: { ...meta, managedFields: entries.sort((x: { manager: string }, y: { manager: string }) => x.manager.localeCompare(y.manager)) } };
}

describe("server-side apply: kubectl and platformctl agree", () => {
  let server: ApiserverProcess;
  let kubectl: Kubectl;
  let kubeconfig: string;

  beforeAll(async () => {
    ensureBuilt();
    server = await startApiserver();
    kubectl = kubectlFor(server.address);
    kubeconfig = kubectl.baseArgs[1]!;
  }, 240_000);
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  const ctl = (args: readonly string[], stdin?: string) => runNode(CTL, ["--kubeconfig", kubeconfig, ...args], { stdin });

  it("runs the two-manager sequence with the same results", async () => {
    const outputs: { kubectl: string; platformctl: string }[] = [];
    for (const step of SEQUENCE) {
      const args = ["apply", "--server-side", ...step.args, "-f", "-"];
      const k = step.fails ? kubectlFails(kubectl, args, step.body("by-kubectl")) : kubectl(args, step.body("by-kubectl"));
      const p = await ctl(args, step.body("by-platformctl"));
      expect(p.code, p.stderr).toBe(step.fails ? 1 : 0);
      outputs.push({ kubectl: k.replaceAll("by-kubectl", "NAME"), platformctl: (step.fails ? p.stderr : p.stdout).replaceAll("by-platformctl", "NAME") });
    }
    expect(outputs[0]!.kubectl).toBe("serviceaccount/NAME serverside-applied\n");
    expect(outputs[1]!.kubectl).toContain('Apply failed with 1 conflict: conflict with "a": .metadata.labels.team');
    for (const o of outputs) expect(o.platformctl).toBe(o.kubectl);

    const byKubectl = comparable(kubectl(["get", "sa", "by-kubectl", "-o", "json", "--show-managed-fields"]));
    const byCtl = comparable((await ctl(["get", "sa", "by-platformctl", "-o", "json", "--show-managed-fields"])).stdout);
    expect(byCtl).toEqual(byKubectl);
    expect(byKubectl).toMatchObject({
      automountServiceAccountToken: false,
      metadata: {
        labels: { team: "b", tier: "web" },
        managedFields: [
          { manager: "a", operation: "Apply", fieldsV1: { "f:automountServiceAccountToken": {} } },
          { manager: "b", operation: "Apply", fieldsV1: { "f:metadata": { "f:labels": { "f:team": {}, "f:tier": {} } } } },
        ],
      },
    });
  });

  it("honours --dry-run=server with both clients: nothing is stored", async () => {
    expect(kubectl(["apply", "--server-side", "--dry-run=server", "-f", "-"], manifest("dry-k", { x: "one" }))).toBe("serviceaccount/dry-k serverside-applied (server dry run)\n");
    const p = await ctl(["apply", "--server-side", "--dry-run=server", "-f", "-"], manifest("dry-p", { x: "one" }));
    expect(p.stdout).toBe("serviceaccount/dry-p serverside-applied (server dry run)\n");
    expect(kubectlFails(kubectl, ["get", "sa", "dry-k"])).toContain("NotFound");
    expect((await ctl(["get", "sa", "dry-p"])).code).not.toBe(0);
  });

  it("platformctl hides managedFields unless --show-managed-fields, as kubectl", async () => {
    const applied = await ctl(["apply", "--server-side", "-f", "-"], manifest("shown", { x: "one" }));
    expect(applied.stdout, applied.stderr).toBe("serviceaccount/shown serverside-applied\n");
    expect((await ctl(["get", "sa", "shown", "-o", "yaml"])).stdout).not.toContain("managedFields");
    const shown = (await ctl(["get", "sa", "shown", "-o", "yaml", "--show-managed-fields"])).stdout;
    expect(shown).toContain("manager: platformctl");
    expect(shown).toContain("f:x: {}");
  });
});
