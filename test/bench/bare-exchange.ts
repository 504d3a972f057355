// The exchange of the benches' bare node peers: a 1 KB JSON request body, read and parsed, answered with a fixed JSON
// object of CSR size. What the transport costs with no API server logic behind it.
import http from "node:http";
import https from "node:https";

export const REQUEST_BODY = Buffer.from(JSON.stringify({ apiVersion: "v1", kind: "Request", metadata: { name: "x" }, data: "x".repeat(1000) }));

/** A fixed JSON answer with `bytes` bytes of data (3,000: about a CSR with its certificate). */
export const answerText = (bytes = 3000): string => JSON.stringify({ apiVersion: "v1", kind: "Answer", metadata: { name: "x" }, data: "x".repeat(bytes) });

/** The peers' request handler: the body (if any) parsed, then the answer, 201 to a POST and 200 otherwise. */
export function bareHandler(answer = answerText()): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" });
      res.end(answer);
    });
  };
}

/**
 * One POST of REQUEST_BODY to `/x` (keep-alive through `options.agent`), `headers` added to the JSON ones; resolves
 * once the answer is read and parsed.
 */
export function postRequest(options: https.RequestOptions, secure: boolean, headers: Readonly<Record<string, string>> = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request({ ...options, method: "POST", path: "/x", headers: { "content-type": "application/json", "content-length": REQUEST_BODY.length, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve(void JSON.parse(Buffer.concat(chunks).toString("utf8"))));
    });
    req.on("error", reject);
    req.end(REQUEST_BODY);
  });
}
