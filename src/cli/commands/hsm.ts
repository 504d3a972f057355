// `platform-ca hsm init-ca`: generate a CA key inside a PKCS#11 token and write the self-signed CA certificate.
import type { Command } from "commander";
import { UsageError, type CommandModule } from "../program.js";
import { durationFlag } from "../duration.js";

interface InitCaFlags {
  readonly keyUri: string;
  readonly subject: string;
  readonly keyType: string;
  readonly rsaPss?: boolean;
  readonly lifetime: string;
  readonly out: string;
}

/** `CN=name` or a bare name: the CA's subject is a common name alone, like generateCa's. */
function commonName(subject: string): string {
  const name = subject.replace(/^\/?CN=/i, "");
  if (name.length === 0 || name.length > 64 || /^[A-Za-z]+=.*[,/+]/.test(subject)) {
    throw new UsageError(`expected \`--subject\` to be CN=<name> (1–64 characters, common name only), got ${JSON.stringify(subject)}`);
  }
  return name;
}

async function initCa(flags: InitCaFlags): Promise<void> {
  const lifetimeSeconds = durationFlag(flags.lifetime, "--lifetime");
  const name = commonName(flags.subject);
  const [{ generateTokenCa, TOKEN_KEY_TYPES }, { writeFileAtomic }] = await Promise.all([import("../../pki/pkcs11-ca.js"), import("../../pki/files.js")]);
  const keyType = TOKEN_KEY_TYPES.find((t) => t === flags.keyType);
  if (keyType === undefined) throw new UsageError(`expected \`--key-type\` to be one of ${TOKEN_KEY_TYPES.join(", ")}, got ${JSON.stringify(flags.keyType)}`);
  const { certPem } = await generateTokenCa({ uri: flags.keyUri, commonName: name, keyType, rsaPss: flags.rsaPss === true, lifetimeSeconds, now: new Date() });
  await writeFileAtomic(flags.out, certPem, 0o644);
  process.stdout.write(`generated a ${keyType}${flags.rsaPss ? " (RSA-PSS)" : ""} key in the token and wrote the CA certificate to ${flags.out}\n`);
}

export const hsmCommand: CommandModule = (program: Command) => {
  const hsm = program.command("hsm").description("CA keys in a PKCS#11 token (HSM, SoftHSM2); needs the optional pkcs11js package")
    .addHelpText("after", "\nExamples:\n  platform-ca hsm init-ca --key-uri 'pkcs11:token=ca;object=signer-ca?pin-source=file:pin.txt' --subject CN=signer-ca --out ca.pem\n");
  hsm
    .command("init-ca")
    .description("generate a non-extractable CA key in the token and write its self-signed CA certificate")
    .requiredOption("--key-uri <uri>", "RFC 7512 URI of the key to create, e.g. 'pkcs11:token=ca;object=signer-ca?pin-source=file:/etc/pin'")
    .requiredOption("--subject <CN=name>", "subject of the CA certificate (a common name)")
    .requiredOption("--out <file>", "where to write the CA certificate (PEM)")
    .option("--key-type <type>", "ecdsa-p256, ecdsa-p384, rsa-2048 or rsa-3072", "ecdsa-p256")
    .option("--rsa-pss", "RSA keys sign with RSASSA-PSS (SHA-256) instead of PKCS#1 v1.5")
    .option("--lifetime <duration>", "validity of the CA certificate", "87600h")
    .addHelpText("after", "\nExamples:\n  platform-ca hsm init-ca --key-uri 'pkcs11:token=ca;object=signer-ca?pin-source=file:pin.txt&module-path=/usr/lib/softhsm/libsofthsm2.so' --subject CN=signer-ca --out ca.pem\n  platform-ca hsm init-ca --key-uri 'pkcs11:token=ca;object=rsa-ca?pin-source=env:HSM_PIN' --key-type rsa-2048 --rsa-pss --subject CN=rsa-ca --out rsa-ca.pem\n")
    .action((flags: InitCaFlags) => initCa(flags));
};
