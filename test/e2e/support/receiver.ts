// A local HTTP receiver standing in for a chat platform's webhook (Slack, Teams, ...) or a webhook
// endpoint, for the e2e tests and the benches (WEBHOOKS_ALLOW_PRIVATE_URLS lets a channel point at
// it): it records every request (arrival time, path, headers, body, the status it answered) and
// answers each as `answer` decides, including the misbehaving receivers a delivery must survive.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";

export interface ReceivedRequest {
  /** 1-based, in order of arrival over all paths. */
  n: number;
  /** Arrival (the request's headers read), in ms since the epoch, to a fraction of a millisecond. */
  at: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** What the receiver answered; null while it has not (or never: `hang`). */
  status: number | null;
}

/** An answer: a status with headers and a body; `hang` never answers; `big` answers 200 with 10 MB. */
export type ReceiverAnswer = { status: number; headers?: Record<string, string>; body?: string } | "hang" | "big";

export interface Receiver {
  /** http://127.0.0.1:<port> */
  base: string;
  /** Every request so far, in order of arrival. */
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

export const OK: ReceiverAnswer = { status: 200, headers: { "content-type": "text/plain" }, body: "ok" };

const flat = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v ?? "")]));

/** 10 MB of `y`, written as the reader asks for it (a sender that read it all would take it all). */
function writeBig(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/plain" });
  const chunk = Buffer.alloc(64 * 1024, "y");
  let left = 160;
  const write = () => {
    while (left > 0) {
      left--;
      if (!res.write(chunk)) return void res.once("drain", write);
    }
    res.end();
  };
  res.on("error", () => undefined);
  write();
}

/** Starts a receiver on 127.0.0.1 (a port the OS picks); `answer` sees each request with its body read. */
export async function startReceiver(
  answer: (request: ReceivedRequest) => ReceiverAnswer = () => OK,
): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const request: ReceivedRequest = {
      n: requests.length + 1,
      at: performance.timeOrigin + performance.now(),
      path: req.url ?? "/",
      headers: flat(req.headers),
      body: "",
      status: null,
    };
    requests.push(request);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      request.body = Buffer.concat(chunks).toString("utf8");
      const a = answer(request);
      if (a === "hang") return;
      request.status = 200;
      if (a === "big") return writeBig(res);
      request.status = a.status;
      res.writeHead(a.status, a.headers).end(a.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    base: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Pacing {
  path: string;
  requests: number;
  /** The smallest gap between two consecutive requests to the path, ms (Infinity for fewer than 2). */
  minGapMs: number;
  /** The most requests to the path within any 1-second window [t, t + 1000 ms). */
  maxPerSecond: number;
}

/** How `requests` were paced, per path (each path one endpoint), by arrival time. */
export function pacingByPath(requests: ReceivedRequest[]): Pacing[] {
  const byPath = new Map<string, number[]>();
  for (const r of requests) {
    const times = byPath.get(r.path) ?? [];
    times.push(r.at);
    byPath.set(r.path, times);
  }
  return [...byPath].map(([path, times]) => {
    const at = times.sort((a, b) => a - b);
    let minGapMs = Number.POSITIVE_INFINITY;
    let maxPerSecond = 0;
    let end = 0;
    for (let i = 0; i < at.length; i++) {
      if (i > 0) minGapMs = Math.min(minGapMs, at[i]! - at[i - 1]!);
      while (end < at.length && at[end]! < at[i]! + 1000) end++;
      maxPerSecond = Math.max(maxPerSecond, end - i);
    }
    return { path, requests: at.length, minGapMs, maxPerSecond };
  });
}
