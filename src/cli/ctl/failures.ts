// kubectl's way with several objects: act on every one, print what worked, report each failure at the end, exit 1.
import { errorText } from "../program.js";
import type { CtlIo } from "./context.js";

/** Failures of the objects of one command, collected while the others go on. */
export class Failures {
  readonly #errors: unknown[] = [];

  get count(): number {
    return this.#errors.length;
  }

  add(err: unknown): void {
    this.#errors.push(err);
  }

  /** Runs `fn` for one object; a failure is recorded (undefined returned) instead of ending the command. */
  async attempt<T>(fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      this.add(err);
      return undefined;
    }
  }

  /**
   * Ends the command when anything failed: every failure but the last is printed on stderr here, the last is thrown
   * so that the program prints it and exits with its code, as if it had been the only one.
   */
  throwIfAny(io: CtlIo): void {
    if (this.#errors.length === 0) return;
    for (const err of this.#errors.slice(0, -1)) io.err(errorText(err));
    throw this.#errors.at(-1);
  }
}
