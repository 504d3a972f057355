// `platform-ca credential`: an exec credential plugin handing out a client certificate obtained (and renewed) through a CSR.
import { createHash, X509Certificate } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { Option, type Command } from "commander";
import { DEFAULT_GROUP_SUFFIX } from "../../api/group.js";
import { addClientFlags, createClient, defaultUserAgent, EXEC_INFO_ENV, restConfigFromFlags, type ClientFlags } from "../../client/index.js";
import { PlatformError } from "../../errors.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { loadPrivateKey, privateKeyMatchesCertificate, writePrivateKeyFile } from "../../pki/keys.js";
import { groupNamesFlag, UsageError, type CommandModule } from "../program.js";
import { generateRequest, parseExpirationSeconds, parseKeyType, parseTimeout, submitCsr, waitForCertificate } from "../ctl/csr-issuance.js";

/** kubectl hands the ExecCredential over in its own variable; both are read. */
const KUBECTL_EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO";
/** Set while the plugin runs, so bootstrap credentials that point back at the plugin fail instead of recursing. */
const ACTIVE_ENV = "PLATFORM_CA_CREDENTIAL_ACTIVE";
/** A cached certificate is renewed once this share of its lifetime has passed. */
export const RENEW_AT_FRACTION = 0.8;
const EXEC_API_VERSION_RE = /^client\.authentication\.[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/(v1|v1beta1)$/;

interface CredentialFlags extends ClientFlags {
  readonly signerName?: string;
  readonly cn?: string;
  readonly o?: string[];
  readonly cacheDir?: string;
  readonly keyType?: string;
  readonly expirationSeconds?: string;
  readonly timeout: string;
  readonly groupSuffix: string;
}

/** The apiVersion to answer in: the one the caller sent (v1 or v1beta1, any group suffix), else v1 of ours. */
export function execApiVersion(env: Readonly<Record<string, string | undefined>>, suffix: string): string {
  const raw = env[EXEC_INFO_ENV] ?? env[KUBECTL_EXEC_INFO_ENV];
  if (raw === undefined || raw.trim() === "") return `client.authentication.${suffix}/v1`;
  let info: { apiVersion?: unknown; kind?: unknown };
  try {
    info = JSON.parse(raw) as typeof info;
  } catch (err) {
    throw new PlatformError("INVALID_ARGUMENT", `${EXEC_INFO_ENV} is not valid JSON: ${(err as Error).message}`);
  }
  if (info?.kind !== "ExecCredential" || typeof info.apiVersion !== "string" || !EXEC_API_VERSION_RE.test(info.apiVersion)) {
    throw new PlatformError("INVALID_ARGUMENT", `${EXEC_INFO_ENV} must be an ExecCredential of apiVersion client.authentication.<suffix>/v1 or /v1beta1, got ${JSON.stringify(info?.apiVersion)}`);
  }
  return info.apiVersion;
}

interface Cached {
  readonly certPem: string;
  readonly keyPem: string;
  readonly renewAt: Date;
}

/** The moment a certificate should be replaced: 80% of the way from notBefore to notAfter. */
export function renewalTime(cert: X509Certificate): Date {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return new Date(from + (to - from) * RENEW_AT_FRACTION);
}

/** The cached pair when it parses, belongs together and is not due for renewal. */
async function readCache(paths: { cert: string; key: string }, now: Date): Promise<Cached | undefined> {
  try {
    const [certPem, keyPem] = await Promise.all([readFile(paths.cert, "utf8"), readFile(paths.key, "utf8")]);
    const cert = new X509Certificate(certPem);
    if (!privateKeyMatchesCertificate(loadPrivateKey(keyPem), cert)) return undefined;
    const renewAt = renewalTime(cert);
    return now < renewAt && now >= new Date(cert.validFrom) ? { certPem, keyPem, renewAt } : undefined;
  } catch {
    return undefined;
  }
}

async function run(flags: CredentialFlags, env: Readonly<Record<string, string | undefined>>): Promise<void> {
  if (env[ACTIVE_ENV]) throw new PlatformError("CREDENTIALS_UNAVAILABLE", "the bootstrap credentials of platform-ca credential run platform-ca credential again; give it other credentials (--platformconfig, --token, --client-certificate)");
  const names = groupNamesFlag(flags.groupSuffix);
  const keyType = parseKeyType(flags.keyType);
  const expirationSeconds = parseExpirationSeconds(flags.expirationSeconds);
  const timeoutMs = parseTimeout(flags.timeout);
  if (!flags.cn) throw new UsageError("--cn is required: the certificate's common name is the user name the server sees");
  const apiVersion = execApiVersion(env, names.suffix);
  const signerName = flags.signerName ?? names.signers.apiserverClient;
  const config = await restConfigFromFlags(flags, env, { groupSuffix: names.suffix, userAgent: defaultUserAgent("platform-ca-credential") });
  const organizations = [...(flags.o ?? [])].sort();
  // One cache entry per server, signer and identity asked for.
  const id = createHash("sha256").update(JSON.stringify([config.server, signerName, flags.cn, organizations, keyType, expirationSeconds ?? null])).digest("hex").slice(0, 24);
  const dir = flags.cacheDir ?? join(env.HOME ?? homedir(), ".platform", "credential-cache");
  const paths = { cert: join(dir, `${id}.crt`), key: join(dir, `${id}.key`) };
  let pair = await readCache(paths, new Date());
  if (!pair) {
    const client = createClient(config, { groupSuffix: names.suffix, env: { ...env, [ACTIVE_ENV]: "1" }, onWarning: (w) => process.stderr.write(`Warning: ${w}\n`) });
    try {
      const { keyPem, csrPem } = await generateRequest({ commonName: flags.cn, organizations }, keyType);
      const usages = keyType.startsWith("rsa") ? ["digital signature", "key encipherment", "client auth"] : ["digital signature", "client auth"];
      const csr = await submitCsr(client, names, { generateName: "credential-", signerName, usages, expirationSeconds, csrPem });
      const name = csr.metadata.name!;
      const certPem = await waitForCertificate(client, names, name, {
        timeoutMs,
        onWaiting: (what) => process.stderr.write(`waiting for CSR ${name} to be ${what === "approval" ? "approved" : "issued"} (signer ${signerName})\n`),
      });
      try {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        await writePrivateKeyFile(paths.key, keyPem);
        await writeFile(paths.cert, certPem, { mode: 0o644 });
      } catch (err) {
        throw new PlatformError("IO_ERROR", `cannot write the credential cache in ${dir}: ${(err as Error).message}`, { cause: err });
      }
      pair = { certPem, keyPem, renewAt: renewalTime(new X509Certificate(certPem)) };
    } finally {
      client.close();
    }
  }
  const credential = {
    apiVersion,
    kind: "ExecCredential",
    status: { clientCertificateData: pair.certPem, clientKeyData: pair.keyPem, expirationTimestamp: rfc3339(pair.renewAt) },
  };
  process.stdout.write(`${JSON.stringify(credential)}\n`);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

const HELP = `
Run by a client (platformctl, kubectl) as its exec credential plugin. Answers with the cached client certificate
while it is valid and less than 80% of its lifetime has passed; otherwise generates a key, creates a
CertificateSigningRequest with the bootstrap credentials (the usual client options), waits for it to be approved
and issued, caches key (0600) and certificate, and prints the ExecCredential on stdout.

Example client config user:
  users:
  - name: alice
    user:
      exec:
        apiVersion: client.authentication.${DEFAULT_GROUP_SUFFIX}/v1
        command: platform-ca
        args: [credential, --cn, alice, --o, devs, --platformconfig, /etc/platform/bootstrap.conf]

Examples:
  platform-ca credential --cn alice --o devs --platformconfig bootstrap.conf
  platform-ca credential --cn node-1 --o system:nodes --signer-name platform.io/apiserver-client-nodeagent --token TOKEN --server https://127.0.0.1:6443 --certificate-authority ca.crt
`;

export const credentialCommand: CommandModule = (program: Command) => {
  const cmd = program
    .command("credential")
    .description("exec credential plugin: a client certificate from a CSR, cached and renewed")
    .option("--signer-name <name>", "signer of the certificate (default platform.io/apiserver-client; kubernetes.io/kube-apiserver-client under --group-suffix k8s.io)")
    .option("--cn <name>", "common name (the user name)")
    .addOption(new Option("--o <organization>", "organization (a group); repeatable").argParser(collect))
    .option("--cache-dir <dir>", "where key and certificate are kept (default ~/.platform/credential-cache)")
    .option("--key-type <type>", "p256, p384, p521, rsa2048, rsa3072, rsa4096 or ed25519 (default p256)")
    .option("--expiration-seconds <n>", "requested lifetime in seconds (≥ 600)")
    .option("--timeout <duration>", "how long to wait for approval and issuance", "5m")
    .option("--group-suffix <suffix>", "API group suffix; k8s.io also selects upstream's well-known names (kubernetes.io/kube-apiserver-client, ...)", DEFAULT_GROUP_SUFFIX);
  addClientFlags(cmd);
  cmd.addHelpText("after", HELP).action((flags: CredentialFlags) => run(flags, process.env));
};
