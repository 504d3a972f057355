// The admission flags of `apiserver` and `up` (upstream's names): the AdmissionConfiguration file and which plugins run, read before anything starts.
import type { Command } from "commander";
import type { AdmissionSettings } from "../apiserver/bootstrap/auth.js";
import { ADMISSION_PLUGIN_NAMES, ADMISSION_PLUGINS, enabledAdmissionPlugins, loadAdmissionConfig } from "../config/admission-config.js";
import type { Logger } from "../logger.js";

export interface AdmissionFlags {
  readonly admissionControlConfigFile?: string;
  readonly enableAdmissionPlugins?: readonly string[];
  readonly disableAdmissionPlugins?: readonly string[];
}

/** `A,B` → [A, B]; repeated flags add up, as upstream's string slices. */
const names = (text: string, previous: readonly string[] = []): string[] => [...previous, ...text.split(",").map((s) => s.trim()).filter((s) => s !== "")];

export function addAdmissionOptions(command: Command): Command {
  return command
    .option("--admission-control-config-file <file>", "AdmissionConfiguration (apiserver.config.<group-suffix>/v1): configuration of the admission plugins, e.g. EventRateLimit")
    .option("--enable-admission-plugins <names>", `admission plugins to run besides those on by default, comma-separated (${ADMISSION_PLUGIN_NAMES.join(", ")})`, names)
    .option("--disable-admission-plugins <names>", "admission plugins on by default not to run, comma-separated", names);
}

/** The plugins that run and their configurations, checked: a bad file or name fails here, before the data directory is touched. */
export async function readAdmissionSettings(flags: AdmissionFlags, groupSuffix: string, logger: Logger): Promise<AdmissionSettings> {
  const file = flags.admissionControlConfigFile === undefined ? undefined : await loadAdmissionConfig(flags.admissionControlConfigFile, { groupSuffix });
  const plugins = enabledAdmissionPlugins({
    ...(flags.enableAdmissionPlugins && { enable: flags.enableAdmissionPlugins }),
    ...(flags.disableAdmissionPlugins && { disable: flags.disableAdmissionPlugins }),
    ...(file && { file }),
  });
  // Said once at start: a disabled check is a deliberate hole, and a configuration for a plugin that does not run is a slip.
  for (const name of ADMISSION_PLUGIN_NAMES.filter((p) => ADMISSION_PLUGINS[p].enabledByDefault && !plugins.includes(p))) logger.warn({ plugin: name }, "admission plugin disabled: the writes it checks are no longer refused");
  for (const name of file?.listed ?? []) if (!plugins.includes(name)) logger.warn({ plugin: name, file: file!.source }, "admission plugin configured but disabled: its configuration is not used");
  return { plugins, ...(file && { configs: file.configs }) };
}
