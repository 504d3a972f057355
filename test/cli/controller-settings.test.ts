// controllerSettings: where health and metrics listen, from the configuration file and the flags.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { controllerSettings, type ControllerFlags } from "../../src/cli/commands/controller.js";
import { createLogger } from "../../src/logger.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir("controller-settings-");
const logger = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) as never, level: "silent" });

function configFile(name: string, generic: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, stringify({ apiVersion: "platformcontrollermanager.config.platform.io/v1alpha1", kind: "PlatformControllerManagerConfiguration", Generic: generic }));
  return path;
}

const settings = (flags: Partial<ControllerFlags>) => controllerSettings({ groupSuffix: "platform.io", ...flags }, logger);

describe("controllerSettings: the health and metrics address", () => {
  it("stays on loopback when neither the file nor a flag names an address", async () => {
    expect((await settings({})).ops).toEqual({ host: "127.0.0.1", port: 10257 });
    expect((await settings({ config: configFile("port-only.yaml", { Port: 10300 }) })).ops).toEqual({ host: "127.0.0.1", port: 10300 });
  });

  it("uses Generic.Address when the file sets it, and --bind-address over both", async () => {
    const file = configFile("address.yaml", { Address: "0.0.0.0", Port: 10301 });
    expect((await settings({ config: file })).ops).toEqual({ host: "0.0.0.0", port: 10301 });
    expect((await settings({ config: file, bindAddress: "127.0.0.2:10400" })).ops).toEqual({ host: "127.0.0.2", port: 10400 });
  });
});
