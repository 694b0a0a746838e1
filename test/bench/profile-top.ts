// Reads a V8 .cpuprofile (from `npm run bench -- --profile DIR`, which runs the gateway with --cpu-prof) and
// prints where the time went: idle / GC / program share, then the functions with the most self time, and the
// same summed by file. Usage: node --import tsx test/bench/profile-top.ts FILE.cpuprofile [N]
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, top = "25"] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-top.ts FILE.cpuprofile [N]");
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const where = url.replace(/^file:\/\/.*?\/(node_modules|wt-[^/]+|main)\//, "$1/");
  const fn = `${functionName || "(anonymous)"} ${where}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  const fileKey = where || functionName;
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms`;
const print = (title: string, m: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(top)))
    process.stdout.write(`${pct(us)}  ${k}\n`);
};
process.stdout.write(`${file}: ${(total / 1000).toFixed(0)} ms sampled\n`);
print("self time by function", byFunction);
print("self time by file", byFile);
