// A Prometheus gauge of the NotAfter of every certificate a process holds, read at each scrape (CAs rotate, signers reload).
import { X509Certificate } from "node:crypto";
import { Gauge, type Registry } from "prom-client";

/** One certificate a process holds: what it is for, which one, and its PEM (the first certificate of the text counts). */
export interface HeldCertificate {
  /** `ca` (issues or anchors trust), `client-ca` (trusted for client certificates only), `serving`. */
  readonly usage: string;
  /** Which one: `cluster-ca`, a signer name, `apiserver`, `controller-manager`… */
  readonly name: string;
  readonly pem: string;
}

export const CERTIFICATE_EXPIRY_METRIC = "certificate_expiration_timestamp_seconds";

interface Facts {
  readonly notAfterSeconds: number;
  readonly subject: string;
  readonly serial: string;
}

/** Parses are kept per PEM text: the same few certificates are read at every scrape. */
const MAX_CACHED = 256;

/**
 * Registers `<prefix>certificate_expiration_timestamp_seconds{usage,name,subject,serial}` on `registry`: the
 * certificate's NotAfter in seconds since the epoch, for every certificate `source()` names at scrape time. A text
 * that does not parse is left out (the component that loaded it reports the problem).
 */
export function certificateExpiryGauge(registry: Registry, prefix: string, source: () => readonly HeldCertificate[]): Gauge<"usage" | "name" | "subject" | "serial"> {
  const cache = new Map<string, Facts | undefined>();
  const factsOf = (pem: string): Facts | undefined => {
    if (cache.has(pem)) return cache.get(pem);
    let facts: Facts | undefined;
    try {
      const cert = new X509Certificate(pem);
      facts = { notAfterSeconds: Date.parse(cert.validTo) / 1000, subject: cert.subject.replaceAll("\n", ", "), serial: cert.serialNumber.toLowerCase() };
    } catch {
      facts = undefined;
    }
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(pem, facts);
    return facts;
  };
  return new Gauge({
    name: prefix + CERTIFICATE_EXPIRY_METRIC,
    help: "NotAfter of a CA or serving certificate this process holds, in seconds since the Unix epoch.",
    labelNames: ["usage", "name", "subject", "serial"],
    registers: [registry],
    collect() {
      // Rebuilt at each scrape: a rotated-out certificate disappears instead of staying at its old value.
      this.reset();
      for (const held of source()) {
        const facts = factsOf(held.pem);
        if (facts) this.set({ usage: held.usage, name: held.name, subject: facts.subject, serial: facts.serial }, facts.notAfterSeconds);
      }
    },
  });
}
