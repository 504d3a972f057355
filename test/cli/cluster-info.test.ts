// The address cluster-info gives joining nodes: the bound one, or the host's name when bound on every interface.
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { advertisedServer } from "../../src/cli/commands/cluster-info.js";

describe("advertisedServer", () => {
  it("keeps a specific address and names the host for a wildcard bind", () => {
    expect(advertisedServer("https://10.1.2.3:6443")).toBe("https://10.1.2.3:6443");
    expect(advertisedServer("https://cp.example.com:6443")).toBe("https://cp.example.com:6443");
    expect(advertisedServer("https://[fd00::1]:6443")).toBe("https://[fd00::1]:6443");
    expect(advertisedServer("https://0.0.0.0:6443")).toBe(`https://${hostname().toLowerCase()}:6443`);
    expect(advertisedServer("https://[::]:6443")).toBe(`https://${hostname().toLowerCase()}:6443`);
  });
});
