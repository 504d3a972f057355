// Where the dev CA lives: --ca-dir, else PLATFORM_CA_ROOT, else a project's certs-dev/ when its manifest is here, else per user.
import { existsSync } from "node:fs";
import { homedir, hostname, userInfo } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/** The project-local manifest, relative to the working directory. */
export const PROJECT_MANIFEST = "certs-dev/pki.yaml";
/** Where a project's manifest run writes, and so where its CA (`ca`) is. */
export const PROJECT_OUT = "certs-dev/out";
/** Like mkcert's CAROOT: a directory holding the dev CA (ca.crt, ca.key). */
export const CA_ROOT_ENV = "PLATFORM_CA_ROOT";

type Env = Readonly<Record<string, string | undefined>>;

/** The per-user CA directory: $PLATFORM_CA_ROOT, else $XDG_DATA_HOME/platform-ca, else ~/.local/share/platform-ca. */
export function userCaRoot(env: Env = process.env): string {
  if (env[CA_ROOT_ENV]) return resolve(env[CA_ROOT_ENV]!);
  const data = env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : join(env.HOME || homedir(), ".local", "share");
  return join(data, "platform-ca");
}

export type CaOrigin = "--ca-dir" | typeof CA_ROOT_ENV | "project" | "user";

export interface DevCaLocation {
  readonly caDir: string;
  readonly origin: CaOrigin;
  /** Where issued files go unless --out says otherwise: the project's out/, or the working directory (as mkcert). */
  readonly outDir: string;
  /** Common name of a CA made here: the per-user one names its owner, so trust stores tell two users' CAs apart. */
  readonly commonName: string;
}

/** The common name of the project manifest's first CA, which `issue` shares. */
export const PROJECT_CA_COMMON_NAME = "platform-ca development cluster CA";

function userCommonName(): string {
  let who = "user";
  try {
    who = userInfo().username;
  } catch {
    // No passwd entry (some containers): the generic name is fine.
  }
  return `platform-ca development CA ${who}@${hostname()}`.slice(0, 64);
}

export function locateDevCa(o: { readonly caDir?: string; readonly cwd?: string; readonly env?: Env } = {}): DevCaLocation {
  const cwd = o.cwd ?? process.cwd();
  const env = o.env ?? process.env;
  const project = existsSync(join(cwd, PROJECT_MANIFEST));
  const outDir = project ? join(cwd, PROJECT_OUT) : cwd;
  if (o.caDir !== undefined) return { caDir: resolve(cwd, o.caDir), origin: "--ca-dir", outDir, commonName: project ? PROJECT_CA_COMMON_NAME : userCommonName() };
  if (env[CA_ROOT_ENV]) return { caDir: userCaRoot(env), origin: CA_ROOT_ENV, outDir, commonName: userCommonName() };
  if (project) return { caDir: join(cwd, PROJECT_OUT), origin: "project", outDir, commonName: PROJECT_CA_COMMON_NAME };
  return { caDir: userCaRoot(env), origin: "user", outDir, commonName: userCommonName() };
}
