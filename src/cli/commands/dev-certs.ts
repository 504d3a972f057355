// `platform-ca dev-certs`: mint or refresh the development PKI of a manifest; `dev-certs issue`: one certificate, mkcert style.
import { dirname, join, relative, isAbsolute } from "node:path";
import type { Command } from "commander";
import { UsageError, type CommandModule } from "../program.js";
import { durationFlag } from "../duration.js";
import { formatTable } from "../table.js";
import type { DevPkiRow } from "../../devpki/dev-pki.js";

const DEFAULT_MANIFEST = "certs-dev/pki.yaml";
const DEFAULT_OUT = "certs-dev/out";
// Below this many certificates to issue the table alone says enough.
const PROGRESS_THRESHOLD = 10;

interface DevCertsFlags {
  readonly manifest: string;
  readonly out?: string;
  readonly force?: boolean;
  readonly renewWithin: string;
}

interface IssueFlags {
  readonly client?: boolean;
  readonly rsa?: boolean;
  readonly ecdsa?: boolean;
  readonly out: string;
  readonly caDir: string;
}

/** Shows paths below the working directory relative to it, others as they are. */
function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === "" || rel.startsWith("..") || isAbsolute(rel) ? path : rel;
}

export function formatRows(rows: readonly DevPkiRow[]): string {
  return formatTable(
    ["name", "kind", "action", "not after", "files", "reason"],
    rows.map((r) => [r.name, r.kind, r.action, r.notAfter.toISOString().replace(/\.\d{3}Z$/, "Z"), r.files.map(shortPath).join(","), r.reason]),
  );
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
  const [{ loadPkiManifest }, { runDevPki }] = await Promise.all([import("../../config/pki-manifest.js"), import("../../devpki/dev-pki.js")]);
  const manifest = await loadPkiManifest(flags.manifest);
  const rows = await runDevPki({
    manifest,
    outDir: flags.out ?? join(dirname(flags.manifest), "out"),
    renewWithinSeconds,
    force: flags.force === true,
    onProgress: progressReporter(process.stderr),
  });
  process.stdout.write(formatRows(rows));
}

async function issue(names: string[], flags: IssueFlags): Promise<void> {
  if (flags.rsa && flags.ecdsa) throw new UsageError("--rsa and --ecdsa exclude each other");
  const { issueDevCertificate } = await import("../../devpki/issue-one.js");
  const { classifyNames } = await import("../../devpki/names.js");
  try {
    classifyNames(names);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const rows = await issueDevCertificate({
    names,
    client: flags.client === true,
    keyType: flags.rsa ? "rsa2048" : "p256",
    outDir: flags.out,
    caDir: flags.caDir,
  });
  process.stdout.write(formatRows(rows));
}

export const devCertsCommand: CommandModule = (program: Command) => {
  const devCertsCmd = program
    .command("dev-certs")
    .description("mint or refresh the development PKI described by a manifest (idempotent) and print what was written")
    .option("--manifest <file>", "dev PKI manifest", DEFAULT_MANIFEST)
    .option("--out <dir>", "output directory (default: out/ beside the manifest)")
    .option("--force", "re-issue every leaf certificate (CAs are kept; delete a CA's files to replace it)")
    .option("--renew-within <duration>", "renew certificates that expire within this duration", "720h")
    .addHelpText("after", "\nExamples:\n  platform-ca dev-certs\n  platform-ca dev-certs --manifest certs-dev/pki.yaml --force\n")
    .action((flags: DevCertsFlags) => devCerts(flags));
  devCertsCmd
    .command("issue")
    .description("issue one certificate for DNS names, IPs, emails (a@b) and URIs (scheme://), like mkcert; the first name is the CN")
    .argument("<names...>", "names the certificate is for")
    .option("--client", "a client certificate (client auth) instead of a server certificate")
    .option("--rsa", "an RSA 2048 key instead of ECDSA P-256")
    .option("--ecdsa", "an ECDSA P-256 key (the default)")
    .option("--out <dir>", "where <name>.pem and <name>-key.pem are written", DEFAULT_OUT)
    .option("--ca-dir <dir>", "directory of the dev CA (ca.crt, ca.key), created when missing", DEFAULT_OUT)
    .addHelpText("after", "\nExamples:\n  platform-ca dev-certs issue localhost 127.0.0.1 ::1\n  platform-ca dev-certs issue --client alice@example.com --out certs\n")
    // The root program reads options anywhere on the line, so `issue … --out D` lands on dev-certs' own --out.
    .action((names: string[], flags: IssueFlags) => issue(names, flags));
};
