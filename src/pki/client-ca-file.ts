// Reads a client CA file (PEM certificates client certificates must chain to), as the API server's and the
// controllers' --client-ca-file take it.
import { readFile } from "node:fs/promises";
import { PlatformError } from "../errors.js";
import { decodePem, encodePem } from "./pem.js";

/** The CA certificates of a client CA file (none without a path); a missing, unreadable or empty file fails. */
export async function readClientCaFile(path: string | undefined): Promise<string[]> {
  if (path === undefined) return [];
  let text: string;
  try {
    text = await readFile(path, "latin1");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read the client CA file ${path}: ${(err as Error).message}`, { cause: err });
  }
  let pems: string[];
  try {
    pems = decodePem(text, { label: "CERTIFICATE" }).map((b) => encodePem("CERTIFICATE", b.der));
  } catch (err) {
    throw new PlatformError("CONFIG_INVALID", `the client CA file ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (pems.length === 0) throw new PlatformError("CONFIG_INVALID", `the client CA file ${path} holds no certificate`);
  return pems;
}
