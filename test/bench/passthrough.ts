// The baseline of the relay scenario: a bare node:http pass-through to the upstream (method, path, headers and
// body piped both ways; no routing, logging or header filtering). Run as a child process with the upstream URL
// as its argument; prints "passthrough listening on <url>".
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

const upstream = new URL(process.argv[2] ?? "");
const server = createServer((req, res) => {
  const forward = request(
    { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
    (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      upstreamRes.pipe(res);
    },
  );
  forward.on("error", () => res.destroy());
  req.pipe(forward);
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`passthrough listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => process.exit(0));
