// Option groups shared by several verbs (-o/--template, -f/-R/-k, --dry-run, --validate) and their checks.
import { Option, type Command } from "commander";
import { UsageError } from "../program.js";
import type { CtlIo } from "./context.js";
import { parseOutput, type OutputSpec, type PrintOptions } from "./output/printer.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];

export interface OutputFlags {
  readonly output?: string;
  readonly template?: string;
  readonly allowMissingTemplateKeys: boolean;
  readonly showManagedFields?: boolean;
}

export interface FilenameFlags {
  readonly filename?: string[];
  readonly recursive?: boolean;
  readonly kustomize?: string;
}

export function addOutputFlags(cmd: Command, formats: string): Command {
  return cmd
    .option("-o, --output <format>", `output format: ${formats}`)
    .option("--template <template>", "template string or file for the go-template and jsonpath outputs")
    .option("--allow-missing-template-keys", "ignore missing fields or map keys in templates", true)
    .option("--no-allow-missing-template-keys", "fail on missing fields or map keys in templates")
    .option("--show-managed-fields", "keep metadata.managedFields when printing JSON or YAML");
}

export function outputOf(flags: OutputFlags, extra: readonly string[] = []): { spec: OutputSpec; print: PrintOptions } {
  return {
    spec: parseOutput(flags.output, flags.template, extra),
    print: { allowMissingKeys: flags.allowMissingTemplateKeys !== false, showManagedFields: flags.showManagedFields === true },
  };
}

export function addFilenameFlags(cmd: Command, what: string): Command {
  return cmd
    .addOption(new Option("-f, --filename <path>", `file, directory or URL ${what}; repeatable; - reads stdin`).argParser(collect))
    .option("-R, --recursive", "process the -f directories recursively")
    .option("-k, --kustomize <dir>", "kustomization directory (not supported: render it and pass the result with -f)");
}

/** -k is refused: together with -f or -R as the seed says, and alone because there is no kustomize here. */
export function checkFilenames(flags: FilenameFlags, args: readonly string[]): string[] {
  if (flags.kustomize !== undefined) {
    if ((flags.filename?.length ?? 0) > 0 || flags.recursive) throw new UsageError("--kustomize cannot be combined with -f/--filename or -R/--recursive");
    throw new UsageError("kustomize is not supported: render the kustomization (kustomize build DIR) and pass the result with -f -");
  }
  const files = flags.filename ?? [];
  if (files.length > 0 && args.length > 0) {
    throw new UsageError("when -f gives the objects, you may not name resources as arguments as well");
  }
  if (flags.recursive && files.length === 0) throw new UsageError("-R/--recursive needs -f/--filename");
  return files;
}

export type DryRun = "none" | "client" | "server";

export function addDryRunFlag(cmd: Command): Command {
  return cmd.option("--dry-run <mode>", "none, server or client: client only prints what would be sent, server submits without persisting (default none)");
}

/** `--dry-run` bare is kubectl's deprecated form of client (argv turns it into `unchanged`). */
export function dryRunOf(value: string | undefined, io: CtlIo): DryRun {
  switch (value ?? "none") {
    case "none":
    case "false":
      return "none";
    case "client":
      return "client";
    case "server":
      return "server";
    case "unchanged":
    case "true":
      io.err("W: --dry-run is deprecated and can be replaced with --dry-run=client.\n");
      return "client";
    default:
      throw new UsageError(`Invalid dry-run value (${value}). Must be "none", "server", or "client".`);
  }
}

export type FieldValidation = "Strict" | "Warn" | "Ignore";

export function addValidateFlag(cmd: Command): Command {
  return cmd.option("--validate <mode>", "server-side field validation: strict, warn or ignore (true = strict, false = ignore; default strict)");
}

export function fieldValidationOf(value: string | undefined): FieldValidation {
  switch ((value ?? "strict").toLowerCase()) {
    case "strict":
    case "true":
      return "Strict";
    case "warn":
      return "Warn";
    case "ignore":
    case "false":
      return "Ignore";
    default:
      throw new UsageError(`invalid --validate value ${JSON.stringify(value)}: use strict, warn, ignore, true or false`);
  }
}

export interface WriteFlags extends OutputFlags, FilenameFlags {
  readonly dryRun?: string;
  readonly validate?: string;
  readonly fieldManager: string;
}

/** How a write is sent: dry run, field manager, server-side field validation. */
export interface WriteSettings {
  readonly dryRun: DryRun;
  readonly fieldManager: string;
  readonly fieldValidation: FieldValidation;
}

/** --field-manager, -f/-R/-k, --dry-run, --validate and -o: the options of every verb that writes objects. */
export function addWriteFlags(cmd: Command, fieldManager: string, what: string): Command {
  cmd.option("--field-manager <name>", "name of the field-ownership manager", fieldManager);
  addFilenameFlags(cmd, what);
  addDryRunFlag(cmd);
  addValidateFlag(cmd);
  return addOutputFlags(cmd, "json|yaml|name|jsonpath=…|jsonpath-as-json=…|jsonpath-file=…|go-template=…|go-template-file=…|template=…|templatefile=…");
}

export function writeSettingsOf(flags: Pick<WriteFlags, "dryRun" | "validate" | "fieldManager">, io: CtlIo): WriteSettings {
  return { dryRun: dryRunOf(flags.dryRun, io), fieldManager: flags.fieldManager, fieldValidation: fieldValidationOf(flags.validate) };
}

/** The query parameters of a write (a client dry run sends nothing, so it has none of its own). */
export function writeQuery(w: Partial<WriteSettings> & { readonly dryRun: DryRun }): Record<string, string | undefined> {
  return { fieldManager: w.fieldManager, fieldValidation: w.fieldValidation, dryRun: w.dryRun === "server" ? "All" : undefined };
}

/** Appends kubectl's dry-run marker to a result line. */
export function dryRunSuffix(dryRun: DryRun): string {
  return dryRun === "client" ? " (dry run)" : dryRun === "server" ? " (server dry run)" : "";
}
