// `platform-ca up`: the secure API server plus every registered component (the controllers) in one process, on loopback.
import type { Command } from "commander";
import type { Component, ComponentContext } from "../../apiserver/bootstrap/run-server.js";
import { createLogger } from "../../logger.js";
import { applyLogFlags } from "../log-flags.js";
import { addServeOptions, serveSecure, type ServeFlags } from "./apiserver.js";
import { clusterInfoComponent } from "./cluster-info.js";
import { controllerThreadComponent } from "./controller-thread.js";

export type UpComponent = Component;
export type UpContext = ComponentContext;

/**
 * What `up` starts after the API server serves, in order, each with `{ adminConfigPath, dataDir, names, caFiles,
 * logger, signal }`. A component module adds itself here (one entry), e.g. the controller manager (on its own
 * thread, so the API server and the controllers each have a core).
 */
export const upComponents: UpComponent[] = [controllerThreadComponent];

export const DEFAULT_DATA_DIR = ".platform";

export const upCommand = (program: Command): void => {
  const command = program
    .command("up")
    .description("run the API server (HTTPS, identity, RBAC) and the controllers with durable storage in a data directory; writes admin.conf");
  command.addHelpText("after", "\nExamples:\n  platform-ca up\n  platform-ca up --data-dir /var/lib/platform-ca --listen 127.0.0.1:0 --log-format json\n  platform-ca up --listen 127.0.0.1:6444 -v 4\n");
  addServeOptions(command, DEFAULT_DATA_DIR).action(async (flags: ServeFlags) => {
    applyLogFlags(flags);
    // With bootstrap tokens, nodes discover the cluster as kubeadm's do: cluster-info first, so the controllers' first
    // look signs it.
    const components = flags.enableBootstrapTokenAuth === true ? [clusterInfoComponent, ...upComponents] : upComponents;
    await serveSecure(flags, "up", createLogger({ name: "platform-ca" }), components, true);
  });
};
