// `platform-ca sign`: sign CSRs offline with a CA and a signer's rules (built-in, policy file or plug-in); PEM on stdout,
// or one file per CSR in --out-dir when several are given (signed on every core).
import { readFile } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { text } from "node:stream/consumers";
import type { Command } from "commander";
import { DEFAULT_GROUP_SUFFIX } from "../../api/group.js";
import { PlatformError } from "../../errors.js";
import { addCaKeyKmsOptions, useCaKeyKmsFlags, type CaKeyKmsFlags } from "../ca-key-kms-flags.js";
import { groupNamesFlag, UsageError, type CommandModule } from "../program.js";
import { durationFlag } from "../duration.js";
import { isPkcs11Uri } from "../../pki/pkcs11-uri.js";
import { MIN_EXPIRATION_SECONDS } from "../../pki/validity.js";

interface SignFlags extends CaKeyKmsFlags {
  readonly signerName: string;
  readonly usages: string;
  readonly csr: readonly string[];
  readonly outDir?: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly expirationSeconds?: string;
  readonly maxDuration?: string;
  readonly policy?: string;
  readonly plugin?: string;
  readonly username?: string;
  readonly groups?: string;
  readonly groupSuffix: string;
}

function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function list(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);
}

async function readCsr(path: string): Promise<string> {
  try {
    return path === "-" ? await text(process.stdin) : await readFile(path, "latin1");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read CSR ${path === "-" ? "from stdin" : `file ${path}`}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

/** Flag checks that make a usage error (exit 2) rather than a refusal. */
async function checkFlags(flags: SignFlags): Promise<{ usages: string[]; expirationSeconds?: number; maxDurationSeconds?: number }> {
  if (flags.policy !== undefined && flags.plugin !== undefined) throw new UsageError("--policy and --plugin exclude each other");
  const names = groupNamesFlag(flags.groupSuffix);
  if (flags.policy === undefined && flags.plugin === undefined && !Object.values(names.signers).includes(flags.signerName)) {
    throw new UsageError(
      `${JSON.stringify(flags.signerName)} is not a built-in signer (${Object.values(names.signers).join(", ")}); give a custom signer --policy or --plugin`,
    );
  }
  const usages = list(flags.usages);
  const { isKnownUsage, KNOWN_USAGES } = await import("../../pki/usages.js");
  const unknown = usages.find((u) => !isKnownUsage(u));
  if (usages.length === 0 || unknown !== undefined) {
    throw new UsageError(`expected \`--usages\` to be a comma-separated list of ${KNOWN_USAGES.join(", ")}, got ${JSON.stringify(flags.usages)}`);
  }
  let expirationSeconds: number | undefined;
  if (flags.expirationSeconds !== undefined) {
    expirationSeconds = Number(flags.expirationSeconds);
    if (!/^\d+$/.test(flags.expirationSeconds) || !Number.isSafeInteger(expirationSeconds) || expirationSeconds < MIN_EXPIRATION_SECONDS) {
      throw new UsageError(`expected \`--expiration-seconds\` to be a whole number ≥ ${MIN_EXPIRATION_SECONDS}, got ${JSON.stringify(flags.expirationSeconds)}`);
    }
  }
  const maxDurationSeconds = flags.maxDuration === undefined ? undefined : durationFlag(flags.maxDuration, "--max-duration");
  return { usages, ...(expirationSeconds !== undefined && { expirationSeconds }), ...(maxDurationSeconds !== undefined && { maxDurationSeconds }) };
}

/** Where the chain of each CSR goes with --out-dir: its file name with .crt for its extension; names must differ. */
function outputPaths(csrs: readonly string[], outDir: string): string[] {
  const paths = csrs.map((csr) => join(outDir, `${basename(csr, extname(csr))}.crt`));
  const twice = paths.find((p, i) => paths.indexOf(p) !== i);
  if (twice !== undefined) throw new UsageError(`two CSRs would be written to ${twice}: give CSR files with different names`);
  return paths;
}

async function sign(flags: SignFlags): Promise<void> {
  const checked = await checkFlags(flags);
  if (flags.csr.length > 1 && flags.outDir === undefined) throw new UsageError("several --csr files need --out-dir (one certificate file per CSR)");
  if (flags.csr.length > 1 && flags.csr.includes("-")) throw new UsageError("--csr - (stdin) is for one CSR only");
  const outputs = flags.outDir === undefined ? undefined : outputPaths(flags.csr, flags.outDir);
  if (flags.caKeyKms !== undefined && isPkcs11Uri(flags.caKey)) throw new UsageError("--ca-key-kms unwraps a key file, and --ca-key names a key in a token");
  // Before the CA (or the plug-in's) is loaded: a wrapped key file is unwrapped through it.
  await useCaKeyKmsFlags(flags, flags.groupSuffix);
  const [{ parseCsr }, { loadCaFiles }, { createSignerFor, signWith }] = await Promise.all([
    import("../../pki/csr.js"),
    import("../../pki/ca.js"),
    import("../../devpki/signer-factory.js"),
  ]);
  const texts = await Promise.all(flags.csr.map(readCsr));
  const signer = flags.plugin !== undefined
    ? await (await import("../../../signers/plugin.js")).loadSignerPlugin(flags.plugin, {
        groupSuffix: flags.groupSuffix,
        ...(checked.maxDurationSeconds !== undefined && { maxDurationSeconds: checked.maxDurationSeconds }),
        options: { caCertFile: flags.caCert, caKeyFile: flags.caKey },
      })
    : await createSignerFor({
        signerName: flags.signerName,
        ca: isPkcs11Uri(flags.caKey)
          ? await (await import("../../pki/pkcs11-ca.js")).loadTokenCa(await readFile(flags.caCert, "latin1"), flags.caKey, { intermediates: true, certName: flags.caCert })
          : await loadCaFiles({ certFile: flags.caCert, keyFile: flags.caKey, intermediates: true }),
        groupSuffix: flags.groupSuffix,
        ...(checked.maxDurationSeconds !== undefined && { maxDurationSeconds: checked.maxDurationSeconds }),
        ...(flags.policy !== undefined && { policyFile: flags.policy }),
      });
  if (signer.signerName !== flags.signerName) {
    throw new PlatformError("SIGNER_UNKNOWN", `plug-in ${flags.plugin} provides signer ${signer.signerName}, not ${flags.signerName}`);
  }
  const request = (csr: ReturnType<typeof parseCsr>) => ({
    signerName: flags.signerName,
    csr,
    usages: checked.usages,
    ...(checked.expirationSeconds !== undefined && { expirationSeconds: checked.expirationSeconds }),
    ...(flags.username !== undefined && { username: flags.username }),
    ...(flags.groups !== undefined && { groups: list(flags.groups) }),
  });
  const now = new Date();
  if (outputs === undefined) {
    process.stdout.write(await signWith(signer, request(parseCsr(texts[0]!)), now));
    return;
  }
  const { signMany } = await import("./sign-many.js");
  await signMany({ signer, files: flags.csr, texts, outDir: flags.outDir!, outputs, request, now, sign: signWith });
}

export const signCommand: CommandModule = (program: Command) => {
  addCaKeyKmsOptions(program
    .command("sign")
    .description("sign one CSR with a CA and a signer's rules, offline; prints the PEM certificate chain on stdout")
    .requiredOption("--signer-name <name>", "the signer whose rules apply (a built-in name, or the one of --policy/--plugin)")
    .requiredOption("--usages <list>", 'comma-separated usages, e.g. "digital signature,client auth"')
    .requiredOption("--csr <file>", "PEM or DER certificate signing request; - reads stdin; repeat for several (with --out-dir)", collect)
    .requiredOption("--ca-cert <file>", "CA certificate (PEM; intermediates may follow it)")
    .requiredOption("--ca-key <file>", "CA private key (PEM), or a pkcs11: URI naming it in a token")
    .option("--expiration-seconds <n>", "requested lifetime in seconds (≥ 600)")
    .option("--max-duration <duration>", "cluster maximum lifetime, e.g. 8760h (default 8760h)")
    .option("--policy <file>", "custom signer policy file")
    .option("--plugin <module>", "signer plug-in module (gets caCertFile and caKeyFile as options)")
    .option("--username <name>", "requesting user, as the API server would record it")
    .option("--groups <list>", "comma-separated groups of the requesting user")
    .option("--out-dir <dir>", "write each chain to <dir>/<CSR file name>.crt instead of stdout (needed for several --csr)")
    .option("--group-suffix <suffix>", "API group suffix of the built-in signer names", DEFAULT_GROUP_SUFFIX), "--ca-key")
    .addHelpText("after", '\nExamples:\n  platform-ca sign --signer-name platform.io/apiserver-client --usages "digital signature,client auth" --csr alice.csr --ca-cert ca.crt --ca-key ca.key > alice.crt\n  openssl req -new -key k.pem -subj /CN=web | platform-ca sign --signer-name platform.io/nodeagent-serving --usages "digital signature,server auth" --csr - --ca-cert ca.crt --ca-key ca.key\n  platform-ca sign --signer-name platform.io/apiserver-client --usages "digital signature,client auth" --csr alice.csr --csr bob.csr --out-dir certs --ca-cert ca.crt --ca-key ca.key\n  platform-ca sign --signer-name platform.io/apiserver-client --usages "digital signature,client auth" --csr alice.csr --ca-cert data/pki/ca.crt --ca-key data/pki/ca.key --encryption-provider-config encryption.yaml --ca-key-kms kms1 > alice.crt\n')
    .action((flags: SignFlags) => sign(flags));
};
