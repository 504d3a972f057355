// `platformctl certificate approve|deny|request|inspect`: decide on CSRs through /approval, request a certificate end to end, look at one.
import { randomBytes } from "node:crypto";
import { link, lstat, rename, unlink, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Option, type Command } from "commander";
import { CsrConditionMessage, CsrConditionReason } from "../../api/conditions.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { writePrivateKeyFile } from "../../pki/keys.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { UsageError, type CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { Failures } from "./failures.js";
import { addInspectCommand } from "./certificate-inspect.js";
import { addRevokeCommand } from "./certificate-revoke.js";
import { generateRequest, parseExpirationSeconds, parseKeyType, parseTimeout, parseUsages, submitCsr, waitForCertificate } from "./csr-issuance.js";
import { addFilenameFlags, addOutputFlags, checkFilenames, outputOf, type FilenameFlags, type OutputFlags } from "./flags.js";
import { printObject, qualifiedName } from "./output/printer.js";
import { objectPath, targetsOf } from "./targets.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];
const MAX_CONFLICT_RETRIES = 10;

interface DecideFlags extends OutputFlags, FilenameFlags {
  readonly force?: boolean;
}

type Decision = "Approved" | "Denied";

/** Adds the condition unless present; the opposite decision is refused, as upstream refuses it. */
function decide(csr: CertificateSigningRequest, decision: Decision, now: Date): { csr: CertificateSigningRequest; had: boolean } {
  const opposite = decision === "Approved" ? "Denied" : "Approved";
  const conditions = csr.status?.conditions ?? [];
  for (const c of conditions) {
    if (c.type === opposite) throw new PlatformError("CONFLICT", `certificate signing request "${csr.metadata.name}" is already ${opposite}`);
    if (c.type === decision) return { csr, had: true };
  }
  const reason = decision === "Approved" ? CsrConditionReason.PlatformctlApprove : CsrConditionReason.PlatformctlDeny;
  const message = decision === "Approved" ? CsrConditionMessage.PlatformctlApprove : CsrConditionMessage.PlatformctlDeny;
  const condition = { type: decision, status: "True" as const, reason, message, lastUpdateTime: rfc3339(now) };
  return { csr: { ...csr, status: { ...csr.status, conditions: [...conditions, condition] } }, had: false };
}

async function runDecide(ctx: CtlContext, args: readonly string[], flags: DecideFlags, decision: Decision): Promise<void> {
  const files = checkFilenames(flags, args);
  if (files.length === 0 && args.length === 0) throw new UsageError(`name the certificate signing requests to ${decision === "Approved" ? "approve" : "deny"}, or give -f`);
  const { spec, print } = outputOf(flags);
  const client = await ctx.client();
  const csrArgs = files.length > 0 ? args : ["certificatesigningrequests", ...args];
  // Every CSR is tried; the ones that could not be decided on are reported at the end (exit 1).
  const failures = new Failures();
  for (const t of await targetsOf(ctx, csrArgs, files, flags.recursive === true, "approve")) {
    await failures.attempt(async () => {
      if (t.info.kind !== "CertificateSigningRequest") throw new UsageError(`can only ${decision === "Approved" ? "approve" : "deny"} CertificateSigningRequests, got ${t.info.kind}`);
      let csr = await client.request<CertificateSigningRequest>("GET", objectPath(client, t));
      for (let attempt = 0; ; attempt++) {
        const next = decide(csr, decision, new Date());
        if (next.had && !flags.force) break;
        try {
          csr = await client.request<CertificateSigningRequest>("PUT", objectPath(client, t, "approval"), next.csr);
          break;
        } catch (err) {
          // Someone else wrote in between: read again and decide again on what is there now.
          if (!isPlatformError(err, "CONFLICT") || attempt >= MAX_CONFLICT_RETRIES) throw err;
          csr = await client.request<CertificateSigningRequest>("GET", objectPath(client, t));
        }
      }
      ctx.io.out(spec.format === "default" ? `${qualifiedName(csr)} ${decision.toLowerCase()}\n` : printObject(spec, csr, print));
    });
  }
  failures.throwIfAny(ctx.io);
}

interface RequestFlags {
  readonly signer?: string;
  readonly usages?: string[];
  readonly cn?: string;
  readonly o?: string[];
  readonly ou?: string[];
  readonly dns?: string[];
  readonly ip?: string[];
  readonly email?: string[];
  readonly uri?: string[];
  readonly keyType?: string;
  readonly expirationSeconds?: string;
  readonly wait?: boolean;
  readonly timeout: string;
  readonly certOut?: string;
  readonly keyOut?: string;
  readonly force?: boolean;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw new PlatformError("IO_ERROR", `cannot check the key file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

/**
 * The new key goes to a private file beside --key-out first, so that the key is on disk before the request exists and
 * --key-out itself is only written once the CSR was created: a failed create leaves it as it was.
 */
async function writeStagedKey(keyOut: string, pem: string): Promise<string> {
  const staged = join(dirname(keyOut), `.${basename(keyOut)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writePrivateKeyFile(staged, pem);
  } catch (err) {
    await unlink(staged).catch(() => undefined);
    throw new PlatformError("IO_ERROR", `cannot write private key file ${keyOut}: ${((err as PlatformError).cause as NodeJS.ErrnoException | undefined)?.code ?? (err as Error).message}`, { cause: err });
  }
  return staged;
}

/** Whether a failed create may have created the CSR all the same: no answer from the server, or a server error. */
function mayHaveBeenCreated(err: unknown): boolean {
  if (!isPlatformError(err)) return true;
  const syscall = (err.cause as NodeJS.ErrnoException | undefined)?.code;
  if (syscall === "ECONNREFUSED" || syscall === "ENOTFOUND") return false;
  return err.code === "TIMEOUT" || err.httpStatus >= 500;
}

/** Moves the staged key to --key-out: over an existing file only with --force (a file that appeared meanwhile is kept). */
async function installKey(staged: string, keyOut: string, force: boolean): Promise<void> {
  if (force) return rename(staged, keyOut);
  try {
    await link(staged, keyOut);
  } catch (err) {
    // Without hard links (some file systems), a rename; the check before still stands guard.
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw err;
    return rename(staged, keyOut);
  }
  await unlink(staged).catch(() => undefined);
}

async function runRequest(ctx: CtlContext, name: string, flags: RequestFlags): Promise<void> {
  const keyType = parseKeyType(flags.keyType);
  const usages = parseUsages(flags.usages);
  const expirationSeconds = parseExpirationSeconds(flags.expirationSeconds);
  const timeoutMs = parseTimeout(flags.timeout);
  if (!flags.keyOut) throw new UsageError("--key-out is required: the private key is made here and exists nowhere else");
  if (flags.certOut && !flags.wait) throw new UsageError("--cert-out needs --wait (the certificate exists only once issued)");
  // Refused before anything is made or sent: the key in that file may be the only one of an existing CSR or certificate.
  if (!flags.force && (await exists(flags.keyOut))) {
    throw new PlatformError("ALREADY_EXISTS", `key file ${flags.keyOut} already exists; remove it or pass --force to overwrite it`);
  }
  const subject = { commonName: flags.cn, organizations: flags.o, organizationalUnits: flags.ou, dns: flags.dns, ip: flags.ip, email: flags.email, uri: flags.uri };
  let generated;
  try {
    generated = await generateRequest(subject, keyType);
  } catch (err) {
    throw isPlatformError(err) ? err : new PlatformError("INVALID_ARGUMENT", `cannot build the request: ${(err as Error).message}`);
  }
  // The key is on disk before the request exists, so an issued certificate is never without its key.
  const staged = await writeStagedKey(flags.keyOut, generated.keyPem);
  const signerName = flags.signer ?? ctx.names.signers.apiserverClient;
  let created: CertificateSigningRequest;
  try {
    created = await submitCsr(await ctx.client(), ctx.names, { name, signerName, usages, expirationSeconds, csrPem: generated.csrPem });
  } catch (err) {
    // --key-out was never touched. When the server refused the request, no CSR holds the new key's public half: the
    // key is discarded. Without an answer (timeout, lost connection, server error) the CSR may exist: the key is kept.
    if (!mayHaveBeenCreated(err)) {
      await unlink(staged).catch(() => undefined);
      throw err;
    }
    const message = `${err instanceof Error ? err.message : String(err)}; the request may have been created all the same, so its key was kept in ${staged} (check with platformctl get csr ${name})`;
    throw isPlatformError(err) ? new PlatformError(err.code, message, { cause: err, httpStatus: err.httpStatus }) : new PlatformError("INTERNAL", message, { cause: err });
  }
  try {
    await installKey(staged, flags.keyOut, flags.force === true);
  } catch (err) {
    throw new PlatformError(
      "IO_ERROR",
      `${qualifiedName(created)} was created, but its key could not be written to ${flags.keyOut} (${(err as NodeJS.ErrnoException).code ?? String(err)}): the key is in ${staged}`,
      { cause: err },
    );
  }
  const client = await ctx.client();
  ctx.io.out(`${qualifiedName(created)} created\n`);
  if (!flags.wait) return;
  const certPem = await waitForCertificate(client, ctx.names, name, {
    timeoutMs,
    created,
    onWaiting: (what) => ctx.io.err(`waiting for CSR ${name} to be ${what === "approval" ? "approved" : "issued"} (signer ${signerName})\n`),
  });
  if (flags.certOut) {
    try {
      await writeFile(flags.certOut, certPem, { mode: 0o644 });
    } catch (err) {
      throw new PlatformError("IO_ERROR", `cannot write certificate file ${flags.certOut}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
    }
    ctx.io.err(`certificate written to ${flags.certOut}, key to ${flags.keyOut}\n`);
  } else ctx.io.out(certPem);
}

const REQUEST_HELP = `
Generates a private key (written to --key-out, mode 0600) and a CSR, creates the CertificateSigningRequest,
and with --wait waits until it is approved and issued, then writes the certificate to --cert-out (or stdout).
An existing --key-out file is refused unless --force. The key is written to --key-out only once the CSR was
created: when the create fails, the new key is discarded and the file is left as it was.

Examples:
  platformctl certificate request alice --cn alice --o devs --key-out alice.key --wait --cert-out alice.crt
  platformctl certificate request web --signer example.com/serving --usages "digital signature,server auth" \\
      --dns web.example.com --ip 10.0.0.5 --key-type rsa2048 --key-out web.key
`;

export const certificateVerb: CommandModule = (program: Command) => {
  const certificate = program.command("certificate").description("approve, deny, request, inspect or revoke certificates (CertificateSigningRequests)")
    .addHelpText("after", "\nExamples:\n  platformctl certificate approve alice\n  platformctl certificate request alice --cn alice --o devs --key-out alice.key --wait --cert-out alice.crt\n  platformctl certificate revoke alice --reason keyCompromise\n");
  for (const [verb, decision] of [["approve", "Approved"], ["deny", "Denied"]] as const) {
    const cmd = certificate
      .command(verb)
      .description(`${verb} certificate signing requests (adds the ${decision} condition through /approval)`)
      .argument("[names...]", "CSR names")
      .option("--force", `update the CSR even when it is already ${decision.toLowerCase()}`);
    addFilenameFlags(cmd, `naming the CSRs to ${verb}`);
    addOutputFlags(cmd, "json|yaml|name|jsonpath=…|go-template=…");
    cmd
      .addHelpText("after", `\nA CSR that is already ${decision === "Approved" ? "denied" : "approved"} is refused.\n\nExamples:\n  platformctl certificate ${verb} alice bob\n`)
      .action((names: string[], flags: DecideFlags, self: Command) => withContext(self, (ctx) => runDecide(ctx, names, flags, decision)));
  }
  certificate
    .command("request")
    .description("generate a key and CSR, create the CertificateSigningRequest, optionally wait for the certificate")
    .argument("<name>", "name of the CertificateSigningRequest")
    .option("--signer <name>", "signer name (default platform.io/apiserver-client; kubernetes.io/kube-apiserver-client under --group-suffix k8s.io)")
    .addOption(new Option("--usages <list>", 'key usages, comma-separated (default "digital signature,client auth")').argParser(collect))
    .option("--cn <name>", "subject common name")
    .addOption(new Option("--o <org>", "subject organization; repeatable").argParser(collect))
    .addOption(new Option("--ou <unit>", "subject organizational unit; repeatable").argParser(collect))
    .addOption(new Option("--dns <name>", "DNS subject alternative name; repeatable").argParser(collect))
    .addOption(new Option("--ip <address>", "IP subject alternative name; repeatable").argParser(collect))
    .addOption(new Option("--email <address>", "email subject alternative name; repeatable").argParser(collect))
    .addOption(new Option("--uri <uri>", "URI subject alternative name; repeatable").argParser(collect))
    .option("--key-type <type>", "p256, p384, p521, rsa2048, rsa3072, rsa4096 or ed25519 (default p256)")
    .option("--expiration-seconds <n>", "requested lifetime in seconds (≥ 600)")
    .option("--wait", "wait for approval and issuance")
    .option("--timeout <duration>", "how long --wait waits (5m, 90s, …)", "5m")
    .option("--cert-out <file>", "write the issued certificate here (needs --wait)")
    .option("--key-out <file>", "write the private key here (0600); an existing file is refused unless --force")
    .option("--force", "overwrite an existing --key-out file (only once the CSR was created)")
    .addHelpText("after", REQUEST_HELP)
    .action((name: string, flags: RequestFlags, self: Command) => withContext(self, (ctx) => runRequest(ctx, name, flags)));
  addInspectCommand(certificate);
  addRevokeCommand(certificate);
};
