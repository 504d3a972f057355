// A PKCS#11 token through the optional pkcs11js package: loaded lazily, one session pool per token, login once.
import type * as Pkcs11js from "pkcs11js";
import { PlatformError } from "../errors.js";
import { readPin, type Pkcs11KeyRef } from "./pkcs11-uri.js";

type Pkcs11Lib = typeof Pkcs11js;
type Handle = Buffer;

/** Environment variable naming the PKCS#11 module when a URI has no module-path. */
export const MODULE_ENV = "PLATFORM_CA_PKCS11_MODULE";
const POOL_SIZE = 4;
/** Results after which the sessions are reopened, logged in again and the key looked up again. */
const RECONNECT = new Set([0x32, 0x60, 0x82, 0xb0, 0xb3, 0xe0, 0x101]);
const CKR_NAMES: Readonly<Record<number, string>> = {
  0x32: "CKR_DEVICE_REMOVED", 0x60: "CKR_KEY_HANDLE_INVALID", 0x70: "CKR_MECHANISM_INVALID", 0x82: "CKR_OBJECT_HANDLE_INVALID",
  0xa0: "CKR_PIN_INCORRECT", 0xa4: "CKR_PIN_LOCKED", 0xb0: "CKR_SESSION_CLOSED", 0xb3: "CKR_SESSION_HANDLE_INVALID",
  0xe0: "CKR_TOKEN_NOT_PRESENT", 0x101: "CKR_USER_NOT_LOGGED_IN",
};

let library: Promise<Pkcs11Lib> | undefined;

/** pkcs11js, imported on first use of a `pkcs11:` URI so the product runs without it. */
export function loadPkcs11js(): Promise<Pkcs11Lib> {
  const name = "pkcs11js";
  library ??= import(name).then(
    (m: Pkcs11Lib & { default?: Pkcs11Lib }) => m.default ?? m,
    (err: unknown) => {
      library = undefined;
      throw new PlatformError(
        "HSM_UNAVAILABLE",
        `pkcs11: keys need the optional package pkcs11js, which cannot be loaded (${(err as Error).message}); enable it with \`npm install pkcs11js\` (needs a C++ compiler)`,
        { cause: err },
      );
    },
  );
  return library;
}

export function ckrName(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === "number" ? (CKR_NAMES[code] ?? `CKR 0x${code.toString(16)}`) : (err as Error).message;
}

export function tokenError(ref: Pkcs11KeyRef, what: string, err: unknown): PlatformError {
  return err instanceof PlatformError ? err : new PlatformError("HSM_ERROR", `${ref.display}: ${what} failed: ${ckrName(err)}`, { cause: err });
}

const modules = new Map<string, Promise<{ lib: Pkcs11Lib; module: Pkcs11js.PKCS11 }>>();

function openModule(path: string): Promise<{ lib: Pkcs11Lib; module: Pkcs11js.PKCS11 }> {
  let opened = modules.get(path);
  if (opened === undefined) {
    opened = loadPkcs11js().then((lib) => {
      const module = new lib.PKCS11();
      try {
        module.load(path);
      } catch (err) {
        modules.delete(path);
        throw new PlatformError("HSM_UNAVAILABLE", `cannot load the PKCS#11 module ${path}: ${(err as Error).message}`, { cause: err });
      }
      // OS locking: signatures run on libuv's worker threads, several at a time. A module already initialised by
      // another thread of this process (a restarted worker) is usable as it is.
      try {
        module.C_Initialize({ flags: lib.CKF_OS_LOCKING_OK });
      } catch (err) {
        if ((err as { code?: number }).code !== lib.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
          modules.delete(path);
          throw new PlatformError("HSM_UNAVAILABLE", `cannot initialise the PKCS#11 module ${path}: ${ckrName(err)}`, { cause: err });
        }
      }
      return { lib, module };
    });
    modules.set(path, opened);
  }
  return opened;
}

const tokens = new Map<string, Token>();

/** One logged-in token: a pool of sessions shared by every key of the token. */
export class Token {
  readonly lib: Pkcs11Lib;
  readonly module: Pkcs11js.PKCS11;
  readonly ref: Pkcs11KeyRef;
  readonly #slot: Handle;
  readonly #pin: string | undefined;
  #idle: Handle[] = [];
  #open = 0;
  #waiting: ((session: Handle) => void)[] = [];
  #generation = 0;

  private constructor(lib: Pkcs11Lib, module: Pkcs11js.PKCS11, ref: Pkcs11KeyRef, slot: Handle, pin: string | undefined) {
    this.lib = lib;
    this.module = module;
    this.ref = ref;
    this.#slot = slot;
    this.#pin = pin;
  }

  /** Opens the token the URI names and logs in; HSM_LOGIN_FAILED for a missing token or a wrong PIN. */
  static async open(ref: Pkcs11KeyRef, env: Readonly<Record<string, string | undefined>> = process.env): Promise<Token> {
    const path = ref.modulePath ?? env[MODULE_ENV];
    if (path === undefined || path === "") {
      throw new PlatformError("HSM_UNAVAILABLE", `${ref.display}: no PKCS#11 module: add module-path=/path/to/module.so to the URI or set ${MODULE_ENV}`);
    }
    const { lib, module } = await openModule(path);
    const slot = findSlot(module, ref);
    const pin = readPin(ref, env);
    // One pool and one login per token: every key and CA reload of the same token shares them. The login is the
    // application's, so another PIN could not be checked: it is refused rather than taken on trust.
    const id = `${path}\0${slot.toString("hex")}`;
    const known = tokens.get(id);
    if (known !== undefined && known.#pin !== pin) {
      throw new PlatformError("HSM_LOGIN_FAILED", `${ref.display}: the token is already in use with another PIN in this process; use one PIN source per token`);
    }
    if (known !== undefined) return known;
    const token = new Token(lib, module, ref, slot, pin);
    token.release(token.#openSession());
    tokens.set(id, token);
    return token;
  }

  #openSession(): Handle {
    const session = this.module.C_OpenSession(this.#slot, this.lib.CKF_SERIAL_SESSION | this.lib.CKF_RW_SESSION);
    this.#open += 1;
    if (this.#open === 1 && this.#pin !== undefined) {
      try {
        this.module.C_Login(session, this.lib.CKU_USER, this.#pin);
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code !== this.lib.CKR_USER_ALREADY_LOGGED_IN) {
          this.module.C_CloseSession(session);
          this.#open -= 1;
          const why = code === this.lib.CKR_PIN_INCORRECT ? "wrong PIN" : ckrName(err);
          throw new PlatformError("HSM_LOGIN_FAILED", `${this.ref.display}: login to token failed: ${why}`, { cause: err });
        }
      }
    }
    return session;
  }

  /** A session for one operation; give it back with release(). */
  acquire(): Promise<Handle> {
    const idle = this.#idle.pop();
    if (idle !== undefined) return Promise.resolve(idle);
    if (this.#open < POOL_SIZE) return Promise.resolve(this.#openSession());
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  release(session: Handle, generation = this.#generation): void {
    if (generation !== this.#generation) return;
    const next = this.#waiting.shift();
    if (next) next(session);
    else this.#idle.push(session);
  }

  get generation(): number {
    return this.#generation;
  }

  /** Drops every session (the token was removed, or a session became invalid); the next acquire logs in again. */
  reset(): void {
    this.#generation += 1;
    try {
      this.module.C_CloseAllSessions(this.#slot);
    } catch {
      // Sessions already gone: nothing to close.
    }
    this.#idle = [];
    this.#open = 0;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const w of waiting) void this.acquire().then(w);
  }

  /** Runs `op` on a session; on a lost session or login it reconnects once and runs it again. `ref` names the key in errors. */
  async withSession<T>(what: string, op: (session: Handle) => Promise<T> | T, ref: Pkcs11KeyRef = this.ref): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      const generation = this.#generation;
      const session = await this.acquire();
      try {
        const result = await op(session);
        this.release(session, generation);
        return result;
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (attempt === 0 && typeof code === "number" && RECONNECT.has(code)) {
          if (generation === this.#generation) this.reset();
          continue;
        }
        this.release(session, generation);
        throw tokenError(ref, what, err);
      }
    }
  }
}

function trimmed(value: string): string {
  return value.replace(/[\s\0]+$/, "");
}

function findSlot(module: Pkcs11js.PKCS11, ref: Pkcs11KeyRef): Handle {
  const seen: string[] = [];
  for (const slot of module.C_GetSlotList(true)) {
    const info = module.C_GetTokenInfo(slot);
    const label = trimmed(info.label);
    seen.push(label);
    if (ref.token !== undefined && label !== ref.token) continue;
    if (ref.serial !== undefined && trimmed(info.serialNumber) !== ref.serial) continue;
    if (ref.manufacturer !== undefined && trimmed(info.manufacturerID) !== ref.manufacturer) continue;
    if (ref.model !== undefined && trimmed(info.model) !== ref.model) continue;
    if (ref.slotId !== undefined && slot.readUIntLE(0, Math.min(6, slot.length)) !== ref.slotId) continue;
    return slot;
  }
  const tokens = seen.length === 0 ? "none" : seen.map((s) => JSON.stringify(s)).join(", ");
  throw new PlatformError("HSM_LOGIN_FAILED", `${ref.display}: no token matches the URI (tokens present: ${tokens})`);
}
