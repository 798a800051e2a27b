// `npm run bench -- --only webhooks`: what webhooks cost and how fast they go out, under
// `wrangler dev` on a throw-away local D1 (docs/performance.md, "Webhooks").
//   1. migrations + demo seed, `wrangler dev` (the .dev.vars of the checkout: WEBHOOK_SECRETS_KEY and
//      WEBHOOKS_ALLOW_PRIVATE_URLS="true", so a receiver on 127.0.0.1 may subscribe);
//   2. a local receiver (node:http on 127.0.0.1) that answers 204 and verifies a sample of the
//      deliveries with the `standardwebhooks` reference library;
//   3. POST /v1/items with no endpoint, then with one endpoint subscribed to item.created, each
//      between /health runs (ratio to /health, and the ratio of the two POST rates);
//   4. events delivered per second: from the first to the last delivery of the items created in
//      the second POST run, once every one of them has arrived (each item.created exactly once).
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChildProcess } from "node:child_process";
import { loadavg } from "node:os";
import { Webhook } from "standardwebhooks";
import {
  cpuSample,
  printColumns,
  prepareBenchState,
  type RouteResult,
  type RouteSpec,
  startBenchServer,
  benchSet,
} from "./kit.ts";

export interface WebhookBenchOptions {
  port: number;
  connections: number;
  duration: number;
  warmup: number;
}

interface Received {
  at: number;
  type: string;
  itemId: number;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}

export async function runWebhookBench(options: WebhookBenchOptions): Promise<number> {
  const { started, log, measure, scope, getJson, postJson, fetchToken } = benchSet("webhooks", options);
  let child: ChildProcess | undefined;
  const received: Received[] = [];
  let secret = "";
  let verified = 0;
  let unverified = 0;
  const receiver = createServer(async (req, res) => {
    const body = await readBody(req);
    try {
      const event = JSON.parse(body) as { type: string; data: { item_id?: number } };
      received.push({ at: Date.now(), type: event.type, itemId: event.data.item_id ?? 0 });
      // Every 50th delivery is checked against the reference library.
      if (secret && received.length % 50 === 1) {
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
          verified++;
        } catch {
          unverified++;
        }
      }
    } catch {
      unverified++;
    }
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    child = await startBenchServer(options.port, scope.persistTo, ["--var", "RATE_LIMITS:off"]);
    scope.setServer(child);
    const token = await fetchToken();
    const group = child.pid;
    const health: RouteSpec = { key: "health", label: "GET /health", path: "/health" };
    const post = (key: string, label: string): RouteSpec => ({
      key,
      label,
      path: "/v1/items",
      token,
      post: JSON.stringify({ title: "Hooked item [<id>]", expiry_date: "2031-06-30", seqid: 0 }),
    });
    const results: RouteResult[] = [];
    const run = async (route: RouteSpec) => {
      const result = await measure(route, group, true);
      if (result.non2xx > 0 || result.errors > 0)
        throw new Error(`${route.label}: ${result.non2xx} non-2xx, ${result.errors} errors`);
      results.push(result);
      log(`${route.label}: ${result.requestsPerSecond.toFixed(0)} req/s`);
      return result;
    };

    await run(health);
    const plain = await run(post("plain", "POST /v1/items, no endpoint"));
    const created = await postJson("/v1/webhooks", token, {
      url: receiverUrl,
      events: ["item.created"],
      description: "bench receiver",
    });
    if (created.status !== 201) throw new Error(`webhook endpoint: ${created.status} ${JSON.stringify(created.body)}`);
    secret = created.body.data.secret;
    const before = (await getJson("/v1/items?limit=1", token)).body.meta.total as number;
    const cpuBefore = cpuSample(group);
    const hooked = await run(post("hooked", "POST /v1/items, 1 endpoint subscribed"));
    await run(health);
    const after = (await getJson("/v1/items?limit=1", token)).body.meta.total as number;
    const expected = after - before;
    log(`waiting for ${expected} item.created deliveries`);
    const deadline = Date.now() + 300_000;
    while (received.length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    void cpuBefore;
    const ids = new Set(received.map((r) => r.itemId));
    if (received.length !== expected || ids.size !== expected) {
      throw new Error(`expected ${expected} distinct deliveries, got ${received.length} (${ids.size} distinct)`);
    }
    if (unverified > 0) throw new Error(`${unverified} deliveries failed standardwebhooks verification`);
    const span = (received[received.length - 1]!.at - received[0]!.at) / 1000;
    const healthRate = (results[0]!.requestsPerSecond + results[results.length - 1]!.requestsPerSecond) / 2;

    console.log(
      `\nWebhooks ${new Date(started).toISOString()}: ${options.connections} connections, ${options.duration} s runs; load ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after\n`,
    );
    printColumns(
      ["measure", "result"],
      [
        ["GET /health (mean of the two runs)", `${healthRate.toFixed(0)} req/s`],
        [
          "POST /v1/items, no endpoint",
          `${plain.requestsPerSecond.toFixed(1)} req/s, ratio ${(plain.requestsPerSecond / healthRate).toFixed(2)}`,
        ],
        [
          "POST /v1/items, 1 endpoint subscribed",
          `${hooked.requestsPerSecond.toFixed(1)} req/s, ratio ${(hooked.requestsPerSecond / healthRate).toFixed(2)}`,
        ],
        [
          "cost of recording the event",
          `with / without = ${(hooked.requestsPerSecond / plain.requestsPerSecond).toFixed(2)}`,
        ],
        [
          "item.created delivered",
          `${expected} in ${span.toFixed(1)} s from first to last: ${(expected / Math.max(span, 0.001)).toFixed(0)} events/s (${verified} sampled, all verified)`,
        ],
      ],
    );
    return 0;
  } finally {
    receiver.close();
    await scope.close();
  }
}
