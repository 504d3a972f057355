// A small HTTP client for API server tests: one request (fetch), or a watch read line by line over node:http.
import { request as httpRequest, type IncomingMessage } from "node:http";

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** Parsed JSON body (undefined when the body is not JSON). */
  readonly body: any;
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly contentType?: string;
  readonly accept?: string;
  readonly headers?: Record<string, string>;
}

export async function call(base: string, method: string, path: string, o: RequestOptions = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  let body: string | undefined;
  if (o.body !== undefined) {
    body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
    headers["content-type"] = o.contentType ?? "application/json";
  }
  if (o.accept) headers.accept = o.accept;
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

export interface WatchReader {
  readonly status: number;
  readonly headers: IncomingMessage["headers"];
  /** The next event, or undefined when the stream ended. Rejects after `timeoutMs` without one. */
  next(timeoutMs?: number): Promise<any>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Opens a watch (GET with the given query) and reads newline-delimited events. */
export function openWatch(base: string, path: string, headers: Record<string, string> = {}): Promise<WatchReader> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { headers }, (res) => {
      const lines: string[] = [];
      const waiters: ((line: string | undefined) => void)[] = [];
      let buffer = "";
      let done = false;
      let endedResolve: () => void = () => undefined;
      const ended = new Promise<void>((r) => (endedResolve = r));
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line.trim() === "") continue;
          const w = waiters.shift();
          if (w) w(line);
          else lines.push(line);
        }
      });
      const finish = () => {
        done = true;
        for (const w of waiters.splice(0)) w(undefined);
        endedResolve();
      };
      res.on("end", finish);
      res.on("close", finish);
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        ended,
        next(timeoutMs = 5000) {
          const line = lines.shift();
          if (line !== undefined) return Promise.resolve(JSON.parse(line));
          if (done) return Promise.resolve(undefined);
          return new Promise((res2, rej) => {
            const timer = setTimeout(() => rej(new Error(`no watch event within ${timeoutMs} ms`)), timeoutMs);
            waiters.push((l) => {
              clearTimeout(timer);
              res2(l === undefined ? undefined : JSON.parse(l));
            });
          });
        },
        close: () => req.destroy(),
      });
    });
    req.on("error", reject);
    req.end();
  });
}
