// The peer of bench:requests: a bare node:https server with the API server's certificate, asking for and verifying
// client certificates like it, that reads and parses a JSON body and answers a fixed JSON object of CSR size. What
// the transport costs on this machine with nothing behind it. Prints its port.
import https from "node:https";
import { readFileSync } from "node:fs";
import { answerText, bareHandler } from "./bare-exchange.js";

const [certFile, keyFile, caFile, answerBytes = "3000"] = process.argv.slice(2);
const server = https.createServer({ cert: readFileSync(certFile!), key: readFileSync(keyFile!), ca: readFileSync(caFile!), requestCert: true, rejectUnauthorized: true }, bareHandler(answerText(Number(answerBytes))));
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`listening on ${typeof address === "object" && address ? address.port : 0}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
