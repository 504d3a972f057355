// Explicit registry of signers by signerName: the controller looks signers up here; nothing registers itself.
import { PlatformError } from "../src/errors.js";
import type { Signer } from "./signer.js";

export class SignerRegistry {
  readonly #signers = new Map<string, Signer>();

  constructor(signers: Iterable<Signer> = []) {
    for (const signer of signers) this.register(signer);
  }

  /** Adds a signer; a second signer under the same name is refused, as the controller could not choose. */
  register(signer: Signer): this {
    if (this.#signers.has(signer.signerName)) {
      throw new PlatformError("SIGNER_DUPLICATE", `a signer named ${signer.signerName} is already registered`, {
        details: { name: signer.signerName },
      });
    }
    this.#signers.set(signer.signerName, signer);
    return this;
  }

  /** The signer for a name; SIGNER_UNKNOWN names the registered ones so a typo is easy to spot. */
  get(signerName: string): Signer {
    const signer = this.#signers.get(signerName);
    if (!signer) {
      const known = this.names();
      throw new PlatformError(
        "SIGNER_UNKNOWN",
        `no signer is registered for ${signerName}; registered: ${known.length > 0 ? known.join(", ") : "none"}`,
        { details: { name: signerName } },
      );
    }
    return signer;
  }

  has(signerName: string): boolean {
    return this.#signers.has(signerName);
  }

  /** Signers in registration order. */
  list(): readonly Signer[] {
    return [...this.#signers.values()];
  }

  names(): readonly string[] {
    return [...this.#signers.keys()];
  }

  get size(): number {
    return this.#signers.size;
  }
}
