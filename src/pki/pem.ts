// Strict PEM (RFC 7468) decoding and encoding: labelled blocks, explanatory text tolerated, RFC 1421 headers detected.
import { Buffer } from "node:buffer";
import { invalidOption, PlatformError } from "../errors.js";

export interface PemBlock {
  readonly label: string;
  readonly der: Uint8Array;
  /** The block carries RFC 1421 headers (`Proc-Type: ...`) before its base64 text. */
  readonly hasHeaders: boolean;
  /** Position of the block in the text, from 0 (messages number blocks from 1). */
  readonly index: number;
}

export interface DecodePemOptions {
  /** Every block must carry this label (PEM_LABEL otherwise). */
  readonly label?: string;
  /** Upper bound on the input text length (INPUT_TOO_LARGE above it). */
  readonly maxBytes?: number;
}

const BEGIN = "-----BEGIN ";
const END = "-----END ";
const DASHES = "-----";
// RFC 7468 labelchar is %x21-2C / %x2E-7E, with single spaces or hyphens allowed between labelchars.
const LABEL_RE = /^(?:[\x21-\x2c\x2e-\x7e](?:[- ]?[\x21-\x2c\x2e-\x7e])*)?$/;
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const WHITESPACE_RE = /[ \t\r\n\v\f]+/g;
const TRAILING_SPACE_RE = /^[ \t]*(?:\r?\n|$)/;

/** Validates a `maxBytes` option once, with the one option-message shape. */
export function checkMaxBytes(maxBytes: unknown): void {
  if (typeof maxBytes !== "number" || !Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw invalidOption("maxBytes", "to be a positive integer", maxBytes);
  }
}

/** How messages name a block: `block 2 (label "CERTIFICATE")`. */
export function describeBlock(index: number, label: string): string {
  return `block ${index + 1} (label ${JSON.stringify(label)})`;
}

/** Decodes every PEM block in `text`; text before, between and after blocks is ignored. */
export function decodePem(text: string, opts: DecodePemOptions = {}): PemBlock[] {
  if (typeof text !== "string") throw new PlatformError("PEM_INVALID", `expected PEM text, got ${typeof text}`);
  if (opts.maxBytes !== undefined) checkMaxBytes(opts.maxBytes);
  if (opts.maxBytes !== undefined && text.length > opts.maxBytes) {
    throw new PlatformError("INPUT_TOO_LARGE", `PEM input is ${text.length} bytes, above the limit of ${opts.maxBytes}`);
  }
  const blocks: PemBlock[] = [];
  let pos = 0;
  for (;;) {
    const begin = text.indexOf(BEGIN, pos);
    const strayEnd = text.indexOf(END, pos);
    if (strayEnd >= 0 && (begin < 0 || strayEnd < begin)) {
      throw new PlatformError("PEM_INVALID", `END line at character ${strayEnd} has no BEGIN line`);
    }
    if (begin < 0) break;
    const block = decodeBlock(text, begin, blocks.length);
    if (opts.label !== undefined && block.value.label !== opts.label) {
      throw new PlatformError(
        "PEM_LABEL",
        `${describeBlock(block.value.index, block.value.label)}: expected label ${JSON.stringify(opts.label)}`,
      );
    }
    blocks.push(block.value);
    pos = block.next;
  }
  if (blocks.length === 0) throw new PlatformError("PEM_INVALID", "no PEM block found");
  return blocks;
}

function decodeBlock(text: string, begin: number, index: number): { value: PemBlock; next: number } {
  const labelStart = begin + BEGIN.length;
  const labelEnd = text.indexOf(DASHES, labelStart);
  const eol = text.indexOf("\n", labelStart);
  if (labelEnd < 0 || (eol >= 0 && labelEnd > eol)) {
    throw new PlatformError("PEM_INVALID", `block ${index + 1}: BEGIN line is not closed with "-----"`);
  }
  const label = text.slice(labelStart, labelEnd);
  const where = describeBlock(index, label);
  if (!LABEL_RE.test(label)) throw new PlatformError("PEM_INVALID", `${where}: label has characters RFC 7468 does not allow`);
  const bodyStart = labelEnd + DASHES.length;
  if (!TRAILING_SPACE_RE.test(text.slice(bodyStart, bodyStart + 64))) {
    throw new PlatformError("PEM_INVALID", `${where}: text follows the BEGIN line on the same line`);
  }
  const end = text.indexOf(END, bodyStart);
  if (end < 0) throw new PlatformError("PEM_INVALID", `${where}: block is not terminated (no END line)`);
  const nested = text.indexOf(BEGIN, bodyStart);
  if (nested >= 0 && nested < end) {
    throw new PlatformError("PEM_INVALID", `${where}: block is not terminated before the next BEGIN line`);
  }
  const endLabelStart = end + END.length;
  const endLabelEnd = text.indexOf(DASHES, endLabelStart);
  const endEol = text.indexOf("\n", endLabelStart);
  if (endLabelEnd < 0 || (endEol >= 0 && endLabelEnd > endEol)) {
    throw new PlatformError("PEM_INVALID", `${where}: END line is not closed with "-----"`);
  }
  const endLabel = text.slice(endLabelStart, endLabelEnd);
  if (endLabel !== label) {
    throw new PlatformError("PEM_LABEL", `${where}: END label ${JSON.stringify(endLabel)} does not match the BEGIN label`);
  }
  const next = endLabelEnd + DASHES.length;
  const { base64, hasHeaders } = splitHeaders(text.slice(bodyStart, end), where);
  const compact = base64.replace(WHITESPACE_RE, "");
  if (compact.length === 0) throw new PlatformError("PEM_INVALID", `${where}: block has no base64 content`);
  if (compact.length % 4 !== 0) throw new PlatformError("PEM_INVALID", `${where}: content is not valid base64`);
  const buf = Buffer.from(compact, "base64");
  // Canonical base64 encodes back to itself, which proves its alphabet and padding at a fifth of the pattern's cost
  // (every CSR and certificate read goes through here); only text that does not (non-zero pad bits, or characters
  // the decoder skipped) is held against the pattern.
  if (buf.toString("base64") !== compact && !BASE64_RE.test(compact)) {
    throw new PlatformError("PEM_INVALID", `${where}: content is not valid base64`);
  }
  const der = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  return { value: { label, der, hasHeaders, index }, next };
}

// RFC 1421 headers are `Name: value` lines (with indented continuations) ended by a blank line.
function splitHeaders(body: string, where: string): { base64: string; hasHeaders: boolean } {
  if (body.indexOf(":") < 0) return { base64: body, hasHeaders: false };
  // The line break before the END line is not the blank line that ends the headers.
  const lines = body.trimEnd().split(/\r?\n/);
  let i = 0;
  while (i < lines.length && lines[i]!.trim() === "") i++;
  if (i >= lines.length || !lines[i]!.includes(":")) return { base64: body, hasHeaders: false };
  while (i < lines.length && lines[i]!.trim() !== "") i++;
  if (i >= lines.length) throw new PlatformError("PEM_INVALID", `${where}: headers are not followed by a blank line`);
  return { base64: lines.slice(i).join("\n"), hasHeaders: true };
}

/** Decodes text that must hold exactly one block with the given label (or one of the labels) and no headers. */
export function decodeSinglePem(text: string, label: string | readonly string[], opts: { maxBytes?: number } = {}): PemBlock {
  const labels = typeof label === "string" ? [label] : label;
  const blocks = decodePem(text, opts);
  const block = blocks[0]!;
  if (!labels.includes(block.label)) {
    throw new PlatformError(
      "PEM_LABEL",
      `${describeBlock(0, block.label)}: expected label ${labels.map((l) => JSON.stringify(l)).join(" or ")}`,
    );
  }
  if (blocks.length > 1) {
    const extra = blocks[1]!;
    throw new PlatformError("PEM_INVALID", `${describeBlock(1, extra.label)}: expected exactly one PEM block, found ${blocks.length}`);
  }
  if (block.hasHeaders) throw new PlatformError("PEM_HEADERS", `${describeBlock(0, block.label)}: PEM headers are not allowed`);
  return block;
}

/** Encodes DER bytes as a PEM block: 64-column base64 lines and a trailing newline. */
export function encodePem(label: string, der: Uint8Array): string {
  if (!LABEL_RE.test(label) || label.length === 0) {
    throw new PlatformError("INVALID_ARGUMENT", `PEM label ${JSON.stringify(label)} has characters RFC 7468 does not allow`);
  }
  const b64 = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString("base64");
  let out = `${BEGIN}${label}${DASHES}\n`;
  for (let i = 0; i < b64.length; i += 64) out += `${b64.slice(i, i + 64)}\n`;
  return `${out}${END}${label}${DASHES}\n`;
}
