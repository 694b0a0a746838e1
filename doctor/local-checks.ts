// What the gateway needs on this machine: a data dir it can write whose store migrates, and free ports.
import { createServer } from "node:net";
import { DataDirError, openStore } from "../store/index.js";
import { type Check, fail, pass, reasonOf } from "./check.js";

export async function checkDataDir(dataDir: string): Promise<Check> {
  try {
    const store = await openStore({ dataDir });
    await store.close();
    return pass(`data dir ${dataDir} is writable and the store is migrated`);
  } catch (err) {
    const fix = "pass another --data-dir, or make this one a directory the gateway's user can write";
    if (err instanceof DataDirError) return fail(err.message, fix);
    return fail(`data dir ${dataDir}: the store did not open: ${reasonOf(err)}`, fix);
  }
}

/** Binds and releases the port, as the gateway would bind it. */
export async function checkPort(listener: string, flag: string, host: string, port: number): Promise<Check> {
  const address = `${host}:${port}`;
  if (port === 0) return pass(`${listener}: ${host}, a free port picked at start-up`);
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, resolve);
    });
    await new Promise((resolve) => server.close(resolve));
    return pass(`${listener}: ${address} is free`);
  } catch (err) {
    const code = reasonOf(err);
    const held = code === "EADDRINUSE";
    return fail(
      `${listener}: ${address} ${held ? "is already in use" : "cannot be bound"} (${code})`,
      held
        ? `stop what holds it (a gateway already running? see \`ss -ltnp 'sport = :${port}'\`), or pass another ${flag}`
        : `pass another ${flag} or --host`,
    );
  }
}
