// `node bench/profile.ts --port 9141 --seconds 20 [--out FILE.cpuprofile] [--top 30] [--interval 200]`
// (or `--read FILE.cpuprofile`: the summary of a kept profile):
// a V8 CPU profile of the Worker's isolate under `wrangler dev`, through its inspector (the port a
// bench set gives `--inspector-port`: its own port + 1), while whatever load you run meanwhile.
// Prints the functions with the most self time and the most total time (self + callees), by
// function, file and line; --out also keeps the profile for Chrome DevTools (Performance, "Load
// profile"). The inspector refuses a WebSocket without a local `Origin`, so one is sent.
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** One DevTools-protocol session over the inspector's WebSocket. */
async function connect(port: number) {
  const list = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const url = list[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on port ${port}`);
  // Node's WebSocket (undici) takes headers as an extension of the standard constructor.
  const socket = new WebSocket(url, { headers: { Origin: `http://127.0.0.1:${port}` } } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error(`inspector WebSocket ${url} refused`));
  });
  let nextId = 1;
  const waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message);
  };
  const send = <T>(method: string, params: Record<string, unknown> = {}) =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, (message) => {
        waiting.delete(id);
        if (message.error) reject(new Error(`${method}: ${JSON.stringify(message.error)}`));
        else resolve(message.result as T);
      });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { send, close: () => socket.close() };
}

/** Self and total milliseconds per function (name, file, line), from the samples' time deltas. */
export function summarise(profile: CpuProfile): {
  totalMs: number;
  rows: Array<{ key: string; selfMs: number; totalMs: number }>;
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the delta to the next sample.
  for (let i = 0; i < samples.length; i++) {
    const us = deltas[i + 1] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + us);
  }
  const keyOf = (n: ProfileNode) => {
    const f = n.callFrame;
    const file = f.url ? f.url.replace(/^.*\//, "") : "";
    return `${f.functionName || "(anonymous)"} ${file}${file ? `:${f.lineNumber + 1}` : ""}`;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  for (const [id, us] of selfUs) {
    all += us;
    const node = byId.get(id)!;
    self.set(keyOf(node), (self.get(keyOf(node)) ?? 0) + us);
    // Each function once per stack (recursion counted once).
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = keyOf(byId.get(at)!);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + us);
    }
  }
  const rows = [...total.keys()].map((key) => ({
    key,
    selfMs: (self.get(key) ?? 0) / 1000,
    totalMs: total.get(key)! / 1000,
  }));
  return { totalMs: all / 1000, rows };
}

export async function profileIsolate(port: number, seconds: number, intervalUs: number): Promise<CpuProfile> {
  const session = await connect(port);
  try {
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: intervalUs });
    await session.send("Profiler.start");
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const { profile } = await session.send<{ profile: CpuProfile }>("Profiler.stop");
    await session.send("Profiler.disable");
    return profile;
  } finally {
    session.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      port: { type: "string", default: "9141" },
      seconds: { type: "string", default: "20" },
      interval: { type: "string", default: "200" },
      top: { type: "string", default: "30" },
      out: { type: "string" },
      read: { type: "string" },
    },
  });
  const profile: CpuProfile = values.read
    ? JSON.parse(readFileSync(values.read, "utf8"))
    : await profileIsolate(Number(values.port), Number(values.seconds), Number(values.interval));
  if (values.out) writeFileSync(values.out, JSON.stringify(profile));
  const { totalMs, rows } = summarise(profile);
  const top = Number(values.top);
  const wall = (profile.endTime - profile.startTime) / 1000;
  console.log(`${(wall / 1000).toFixed(1)} s profiled; samples cover ${totalMs.toFixed(0)} ms`);
  const show = (title: string, field: "selfMs" | "totalMs") => {
    console.log(`\n${title}`);
    for (const r of [...rows].sort((a, b) => b[field] - a[field]).slice(0, top))
      console.log(
        `${r[field].toFixed(1).padStart(9)} ms ${((100 * r[field]) / totalMs).toFixed(1).padStart(5)}%  (self ${r.selfMs.toFixed(1)})  ${r.key}`,
      );
  };
  show("by self time", "selfMs");
  show("by total time (self + callees)", "totalMs");
  process.exit(0);
}
