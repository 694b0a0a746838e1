// The data dir is checked before SQLite opens it: knex would otherwise report an unwritable directory as a
// migration lock ("Can't take lock to run migrations") or as SQLITE_CANTOPEN without the path, and
// fs.mkdir({recursive}) never settles for some paths (under /proc on Linux, Node 20), so start-up hung.
import { constants } from "node:fs";
import { mkdir, open, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";

/** A data dir that cannot hold the store; the message names the directory and the reason. */
export class DataDirError extends Error {
  override readonly name = "DataDirError";
}

/** A directory that hangs (a dead network mount) is refused after this long rather than waited for. */
const CHECK_TIMEOUT_MS = 5000;

const REASONS = new Map<string, string>([
  ["EACCES", "permission denied"],
  ["EPERM", "operation not permitted"],
  ["EROFS", "read-only file system"],
  ["ENOENT", "no such file or directory"],
  ["ENOTDIR", "a part of the path is not a directory"],
  ["ENOSPC", "no space left on the device"],
  ["EDQUOT", "disk quota exceeded"],
  ["ELOOP", "too many symbolic links"],
  ["ENAMETOOLONG", "the path is too long"],
]);

/** Creates the directory if needed and proves it writable by creating and removing a probe file. */
export async function prepareDataDir(dir: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new DataDirError(`data dir ${dir} did not answer within ${CHECK_TIMEOUT_MS / 1000} s`)),
      CHECK_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([checkDataDir(dir), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function checkDataDir(dir: string): Promise<void> {
  await attempt(dir, "cannot be created", () => makeDirectory(dir));
  const isDirectory = await attempt(dir, "cannot be read", async () => (await stat(dir)).isDirectory());
  if (!isDirectory) throw new DataDirError(`data dir ${dir} is not a directory`);
  const probe = join(dir, `.byok-write-probe-${process.pid}`);
  await attempt(dir, "is not writable", async () => {
    const file = await open(probe, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY);
    await file.close();
    await unlink(probe);
  });
}

/** Each missing level in turn, so a path that can never exist fails instead of looping (see above). */
async function makeDirectory(dir: string): Promise<void> {
  try {
    await mkdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    if (code !== "ENOENT" || dirname(dir) === dir) throw err;
    await makeDirectory(dirname(dir));
    await mkdir(dir).catch((again: NodeJS.ErrnoException) => {
      if (again.code !== "EEXIST") throw again;
    });
  }
}

async function attempt<T>(dir: string, what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === undefined) throw err;
    throw new DataDirError(`data dir ${dir} ${what}: ${REASONS.get(code) ?? "error"} (${code})`);
  }
}
