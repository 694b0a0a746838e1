// The TLS files the gateway would serve with (`--tls-cert/--tls-key` or config `tls:`): both readable, the key the
// certificate's own, and the certificate not expired. Read the way the listener reads them.
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import { X509Certificate } from "node:crypto";
import type { TlsConfig } from "../engine/config.js";
import { type Check, fail, pass, reasonOf } from "./check.js";

const REMAKE = "make a new pair (e.g. `mkcert 127.0.0.1 localhost`) and pass both files";

export function checkTls(files: TlsConfig, now = new Date()): Check {
  let cert: Buffer;
  let key: Buffer;
  try {
    cert = readFileSync(files.cert);
    key = readFileSync(files.key);
  } catch (err) {
    const which = (err as NodeJS.ErrnoException).path ?? "a TLS file";
    return fail(`TLS: ${which} cannot be read (${reasonOf(err)})`, "pass readable PEM files to --tls-cert/--tls-key");
  }
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    return fail(`TLS: ${files.cert} is not a PEM certificate`, REMAKE);
  }
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    return fail(`TLS: ${files.key} is not the key of ${files.cert} (${reasonOf(err)})`, REMAKE);
  }
  const until = new Date(x509.validTo);
  if (until < now) return fail(`TLS: ${files.cert} expired on ${until.toISOString()}`, REMAKE);
  return pass(`TLS: ${files.cert} (${x509.subject.replace(/\n/g, ", ")}) is valid until ${until.toISOString()}`);
}
