// The exchange of the benches' bare node peers: a 1 KB JSON request body, read and parsed, answered with a fixed JSON
// object of CSR size. What the transport costs with no API server logic behind it.
import type http from "node:http";

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
