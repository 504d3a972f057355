// `platform-ca dev-certs`: mint or refresh the development PKI of a manifest; `issue`: one certificate, mkcert style; `install`/`uninstall`: trust its CA.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative, isAbsolute } from "node:path";
import { Option, type Command } from "commander";
import { PlatformError } from "../../errors.js";
import { UsageError, type CommandModule } from "../program.js";
import { durationFlag } from "../duration.js";
import { formatTable } from "../table.js";
import { rfc3339 } from "../../time/rfc3339.js";
import type { DevPkiRow } from "../../devpki/dev-pki.js";
import type { IssueRow } from "../../devpki/issue-one.js";
import { CA_ROOT_ENV, locateDevCa, PROJECT_MANIFEST, userCaRoot } from "../../devpki/ca-root.js";
import { TRUST_STORES, type TrustResult, type TrustStoreKind } from "../../devpki/trust-store.js";

// Below this many certificates to issue the table alone says enough.
const PROGRESS_THRESHOLD = 10;
const TRUST_ROOT_ENV = "PLATFORM_CA_TRUST_STORE_ROOT";

interface DevCertsFlags {
  readonly manifest?: string;
  readonly out?: string;
  readonly force?: boolean;
  readonly renewWithin: string;
}

interface IssueFlags {
  readonly client?: boolean;
  readonly rsa?: boolean;
  readonly ecdsa?: boolean;
  readonly out?: string;
  readonly caDir?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
  readonly pkcs12?: string | true;
  readonly pkcs12Password?: string;
}

interface TrustFlags {
  readonly caDir?: string;
  readonly store?: string[];
  readonly trustStoreRoot?: string;
  readonly nssDb?: string[];
}

/** Shows paths below the working directory relative to it, others as they are. */
function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === "" || rel.startsWith("..") || isAbsolute(rel) ? path : rel;
}

export function formatRows(rows: readonly DevPkiRow[]): string {
  return formatTable(
    ["name", "kind", "action", "not after", "files", "reason"],
    rows.map((r) => [r.name, r.kind, r.action, rfc3339(r.notAfter), r.files.map(shortPath).join(","), r.reason]),
  );
}

/** `issue`'s table: the last column holds the names a certificate is for (the CA's common name on its row). */
export function formatIssueRows(rows: readonly IssueRow[]): string {
  return formatTable(["name", "kind", "action", "not after", "files", "names"], rows.map((r) => [r.name, r.kind, r.action, rfc3339(r.notAfter), r.files.map(shortPath).join(","), r.names]));
}

/** A counter line on stderr: rewritten in place on a terminal, every tenth and the last otherwise. */
function progressReporter(stream: NodeJS.WriteStream): (done: number, total: number) => void {
  return (done, total) => {
    if (total <= PROGRESS_THRESHOLD) return;
    if (stream.isTTY) stream.write(`\rissuing certificates: ${done}/${total}${done === total ? "\n" : ""}`);
    else if (done % 10 === 0 || done === total) stream.write(`issuing certificates: ${done}/${total}\n`);
  };
}

async function devCerts(flags: DevCertsFlags): Promise<void> {
  const renewWithinSeconds = durationFlag(flags.renewWithin, "--renew-within");
  const manifestPath = flags.manifest ?? PROJECT_MANIFEST;
  if (flags.manifest === undefined && !existsSync(manifestPath)) {
    throw new PlatformError(
      "NOT_FOUND",
      `no dev PKI manifest here (${PROJECT_MANIFEST}): pass --manifest FILE, run it in a project that has one, or issue single certificates with your own dev CA (${userCaRoot()}): platform-ca dev-certs issue NAME…`,
    );
  }
  const [{ loadPkiManifest }, { runDevPki }] = await Promise.all([import("../../config/pki-manifest.js"), import("../../devpki/dev-pki.js")]);
  const manifest = await loadPkiManifest(manifestPath);
  const rows = await runDevPki({
    manifest,
    outDir: flags.out ?? join(dirname(manifestPath), "out"),
    renewWithinSeconds,
    force: flags.force === true,
    onProgress: progressReporter(process.stderr),
  });
  process.stdout.write(formatRows(rows));
}

async function issue(names: string[], flags: IssueFlags): Promise<void> {
  if (flags.rsa && flags.ecdsa) throw new UsageError("--rsa and --ecdsa exclude each other");
  if (flags.pkcs12 !== undefined && (flags.certFile !== undefined || flags.keyFile !== undefined)) throw new UsageError("--pkcs12 writes one file instead of --cert-file and --key-file");
  if (flags.pkcs12Password !== undefined && flags.pkcs12 === undefined) throw new UsageError("--pkcs12-password needs --pkcs12");
  const { issueDevCertificate } = await import("../../devpki/issue-one.js");
  const { classifyNames } = await import("../../devpki/names.js");
  try {
    classifyNames(names);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const where = locateDevCa({ caDir: flags.caDir });
  const rows = await issueDevCertificate({
    names,
    client: flags.client === true,
    keyType: flags.rsa ? "rsa2048" : "p256",
    outDir: flags.out ?? where.outDir,
    caDir: where.caDir,
    caCommonName: where.commonName,
    ...(flags.certFile !== undefined && { certFile: flags.certFile }),
    ...(flags.keyFile !== undefined && { keyFile: flags.keyFile }),
    ...(flags.pkcs12 !== undefined && { pkcs12: flags.pkcs12 }),
    ...(flags.pkcs12Password !== undefined && { pkcs12Password: flags.pkcs12Password }),
  });
  process.stdout.write(formatIssueRows(rows));
}

function storesOf(values: readonly string[]): TrustStoreKind[] {
  const list = values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  const bad = list.find((s) => s !== "system" && s !== "nss");
  if (bad !== undefined || list.length === 0) throw new UsageError(`--store takes system and/or nss, got ${JSON.stringify(bad ?? "")}`);
  return [...new Set(list)] as TrustStoreKind[];
}

async function trust(flags: TrustFlags, install: boolean): Promise<void> {
  const stores = storesOf(flags.store ?? TRUST_STORES);
  const [{ ensureDevCa }, { caCommonName, changeTrust }, { readFile }] = await Promise.all([import("../../devpki/issue-one.js"), import("../../devpki/trust-store.js"), import("node:fs/promises")]);
  const where = locateDevCa({ caDir: flags.caDir });
  // Installing makes the CA when there is none yet, as mkcert -install does; uninstalling never makes one.
  if (!install && !existsSync(join(where.caDir, "ca.crt"))) throw new PlatformError("NOT_FOUND", `no dev CA in ${where.caDir} (${where.origin}): nothing to uninstall`);
  const caCertFile = install ? (await ensureDevCa(where.caDir, where.commonName)).paths.cert : join(where.caDir, "ca.crt");
  const caCertPem = await readFile(caCertFile, "utf8");
  const results: TrustResult[] = await changeTrust(
    {
      caCertPem,
      caCertFile,
      stores,
      ...((flags.trustStoreRoot ?? process.env[TRUST_ROOT_ENV]) && { systemRoot: flags.trustStoreRoot ?? process.env[TRUST_ROOT_ENV] }),
      ...(flags.nssDb !== undefined && { nssDbs: flags.nssDb }),
      home: process.env.HOME || homedir(),
    },
    install,
  );
  process.stdout.write(`dev CA ${shortPath(caCertFile)} (${caCommonName(caCertPem)})\n`);
  process.stdout.write(formatTable(["store", "location", "result", "detail"], results.map((r) => [r.store, shortPath(r.location), r.result, r.detail])));
  const refused = results.filter((r) => r.result === "refused");
  if (refused.length > 0) throw new PlatformError("IO_ERROR", `the ${refused.map((r) => r.store).join(" and ")} trust store${refused.length > 1 ? "s were" : " was"} not changed: ${refused[0]!.detail}`);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function addTrustCommand(devCertsCmd: Command, verb: "install" | "uninstall"): void {
  const install = verb === "install";
  devCertsCmd
    .command(verb)
    .description(install ? "trust the dev CA: add it to the system trust store (update-ca-certificates) and to NSS databases (certutil), creating it when missing" : "remove the dev CA from the system trust store and NSS databases")
    .option("--ca-dir <dir>", `directory of the dev CA (default: $${CA_ROOT_ENV}, else certs-dev/out/ in a project, else ${userCaRoot()})`)
    .addOption(new Option("--store <list>", "system, nss or both, comma-separated or repeated (default both)").argParser(collect))
    .option("--trust-store-root <dir>", `file-system root of the system store (default /, or $${TRUST_ROOT_ENV}); for images and tests`)
    .addOption(new Option("--nss-db <dir>", "an NSS database directory (default: ~/.pki/nssdb and Firefox profiles); repeatable").argParser(collect))
    .addHelpText("after", `\nThe system store needs root; NSS databases belong to the user. A store that cannot be changed is reported\nwith the way out, and the exit code is 1.\n\nExamples:\n  sudo platform-ca dev-certs ${verb} --store system --ca-dir ~/.local/share/platform-ca\n  platform-ca dev-certs ${verb} --store nss\n`)
    .action((flags: TrustFlags) => trust(flags, install));
}

export const devCertsCommand: CommandModule = (program: Command) => {
  const devCertsCmd = program
    .command("dev-certs")
    .description("mint or refresh the development PKI described by a manifest (idempotent) and print what was written")
    .option("--manifest <file>", `dev PKI manifest (default ${PROJECT_MANIFEST})`)
    .option("--out <dir>", "output directory (default: out/ beside the manifest)")
    .option("--force", "re-issue every leaf certificate (CAs are kept; delete a CA's files to replace it)")
    .option("--renew-within <duration>", "renew certificates that expire within this duration", "720h")
    .addHelpText("after", "\nExamples:\n  platform-ca dev-certs                      # certs-dev/pki.yaml into certs-dev/out/\n  platform-ca dev-certs --manifest pki.yaml --out tls --renew-within 240h\n")
    .action((flags: DevCertsFlags) => devCerts(flags));
  devCertsCmd
    .command("issue")
    .description("issue one certificate for DNS names, IPs, emails (a@b) and URIs (scheme://), like mkcert; the first name is the CN")
    .argument("<names...>", "names the certificate is for")
    .option("--client", "a client certificate (client auth) instead of a server certificate")
    .option("--rsa", "an RSA 2048 key instead of ECDSA P-256")
    .option("--ecdsa", "an ECDSA P-256 key (the default)")
    .option("--out <dir>", "where <name>.pem and <name>-key.pem are written (default: certs-dev/out/ in a project, else the working directory)")
    .option("--ca-dir <dir>", `directory of the dev CA (ca.crt, ca.key), created when missing (default: $${CA_ROOT_ENV}, else certs-dev/out/ in a project, else ${userCaRoot()})`)
    .option("--cert-file <file>", "write the certificate here instead")
    .option("--key-file <file>", "write the private key here instead (0600)")
    .option("--pkcs12 [file]", "write one PKCS#12 file (key, certificate, CA; 0600) instead of PEM files (default <name>.p12)")
    .option("--pkcs12-password <password>", 'password of the PKCS#12 file (default "changeit", as mkcert)')
    .addHelpText("after", "\nExamples:\n  platform-ca dev-certs issue example.test '*.example.test' 127.0.0.1 ::1\n  platform-ca dev-certs issue --client alice@example.test --pkcs12\n  platform-ca dev-certs issue localhost --cert-file tls.crt --key-file tls.key\n")
    .action((names: string[], flags: IssueFlags) => issue(names, flags));
  addTrustCommand(devCertsCmd, "install");
  addTrustCommand(devCertsCmd, "uninstall");
  devCertsCmd
    .command("ca-root")
    .description("print the directory of the dev CA that issue and install use here")
    .option("--ca-dir <dir>", "as for issue")
    .addHelpText("after", "\nExamples:\n  platform-ca dev-certs ca-root\n  PLATFORM_CA_ROOT=~/ca platform-ca dev-certs ca-root\n")
    .action((flags: { caDir?: string }) => void process.stdout.write(`${locateDevCa({ caDir: flags.caDir }).caDir}\n`));
};
