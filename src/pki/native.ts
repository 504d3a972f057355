// Loads the optional native ECDSA verifier (native/ecdsa-verify.c); absent or disabled, callers use node:crypto.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

export type NativeEcdsaVerify = (curveBits: number, point: Uint8Array, digest: Uint8Array, signature: Uint8Array) => boolean | null;

function findPackageRoot(start: string): string | undefined {
  let dir = start;
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, "binding.gyp"))) return dir;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

function load(): NativeEcdsaVerify | undefined {
  // PLATFORM_CA_NATIVE=0 forces the node:crypto path (tests run both).
  if (process.env.PLATFORM_CA_NATIVE === "0") return undefined;
  const root = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
  if (root === undefined) return undefined;
  const file = join(root, "build", "Release", "platform_ca_native.node");
  if (!existsSync(file)) return undefined;
  try {
    const mod = createRequire(import.meta.url)(file) as { verify?: unknown };
    return typeof mod.verify === "function" ? (mod.verify as NativeEcdsaVerify) : undefined;
  } catch {
    return undefined;
  }
}

/** The native verifier when built and enabled, else undefined. */
export const nativeEcdsaVerify: NativeEcdsaVerify | undefined = load();
