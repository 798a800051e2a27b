// End to end: the real service (`node scripts/start.ts` on a free port, fresh --persist-to) sends
// channel test messages to a receiver this test runs on 127.0.0.1, standing in for Slack, Teams,
// Google Chat, Discord and ntfy (WEBHOOKS_ALLOW_PRIVATE_URLS on); a receiver that answers 500, 10 MB,
// a redirect or nothing at all; then the same state restarted with the switch off, where neither
// that channel nor a webhook endpoint saved on loopback is called any more (issue 35, reliability).
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

let service: Service | undefined;
let base = "";
let receiver: Server | undefined;
let receiverBase = "";
interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}
const received: Received[] = [];

const flat = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v ?? "")]));

const VARS = ["--var", "WEBHOOK_SECRETS_KEY:e2e-webhook-secrets-key-0123456789abcdef", "--var", "RATE_LIMITS:off"];

const http = (method: string, path: string, token?: string, body?: unknown) => callApi(base, method, path, token, body);

beforeAll(async () => {
  receiver = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      received.push({ path, headers: flat(req.headers), body: Buffer.concat(chunks).toString("utf8") });
      if (path.startsWith("/hang")) return; // never answers
      if (path.startsWith("/fail")) return void res.writeHead(500).end('{"error":"platform down"}');
      if (path.startsWith("/redirect")) return void res.writeHead(302, { location: `${receiverBase}/moved` }).end();
      if (path.startsWith("/big")) {
        // 10 MB, written as the reader asks for it: a send that read it all would take it all.
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
        return write();
      }
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  receiverBase = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  service = await startService("expiry-e2e-channels-", [...VARS, "--var", "WEBHOOKS_ALLOW_PRIVATE_URLS:true"]);
  base = service.base;
});

afterAll(async () => {
  try {
    await service?.stop();
  } finally {
    receiver?.closeAllConnections();
    await new Promise((r) => receiver?.close(r));
  }
});

describe("channels over HTTP, a local receiver standing in for each platform", () => {
  let token = "";
  const channels: Record<string, number> = {};

  it("sends each type's test message and answers with what the platform said", async () => {
    token = await ownerToken(base);
    for (const type of ["slack", "teams", "google_chat", "discord", "ntfy"]) {
      const create = await http("POST", "/v1/channels", token, {
        type,
        name: `e2e ${type}`,
        url: `${receiverBase}/${type}`,
        ...(type === "ntfy" ? { access_token: "tk_e2e_token_0123456789" } : {}),
      });
      expect(create.status, JSON.stringify(create.body)).toBe(201);
      expect(create.body.data.url).toBe(`${receiverBase}/${type}`);
      channels[type] = create.body.data.channel_id;
      const test = await http("POST", `/v1/channels/${channels[type]}/test`, token);
      expect(test.status, JSON.stringify(test.body)).toBe(200);
      expect(test.body.data).toMatchObject({ delivered: true, status: 200, body: "ok", truncated: false, error: null });
      expect(test.body.data.duration_ms).toEqual(expect.any(Number));
    }
    const at = (type: string) => received.find((r) => r.path === `/${type}`)!;
    expect(JSON.parse(at("slack").body)).toEqual({ text: expect.stringContaining("Test message from Demo Company") });
    expect(at("slack").headers["content-type"]).toBe("application/json");
    expect(JSON.parse(at("google_chat").body)).toEqual({ text: expect.stringContaining("Demo Company") });
    expect(JSON.parse(at("discord").body)).toMatchObject({ content: expect.stringContaining("Demo Company") });
    expect(JSON.parse(at("teams").body)).toMatchObject({
      type: "message",
      attachments: [{ contentType: "application/vnd.microsoft.card.adaptive", content: { version: "1.4" } }],
    });
    expect(at("ntfy").headers).toMatchObject({
      title: "Test message from Demo Company",
      authorization: "Bearer tk_e2e_token_0123456789",
    });
    expect(at("ntfy").body).toContain("reminders from Demo Company");
    // The reads mask the URL; the audit log and the service's output never hold it.
    const list = await http("GET", "/v1/channels", token);
    expect(list.body.data.map((c: { url: string }) => c.url)).toEqual(Array(5).fill(`${receiverBase}/…`));
    const log = await http("GET", "/v1/audit-log?resource_type=channel", token);
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(5);
    for (const text of [JSON.stringify(list.body), JSON.stringify(log.body), service!.output()]) {
      for (const type of Object.keys(channels)) expect(text).not.toContain(`${receiverBase}/${type}`);
      expect(text).not.toContain("tk_e2e_token");
    }
  });

  it("reports a 500, a redirect (not followed), a 10 MB answer (read only in part) and a receiver that never answers", async () => {
    const tryUrl = async (path: string) => {
      const create = await http("POST", "/v1/channels", token, {
        type: "discord",
        name: path,
        url: `${receiverBase}${path}`,
      });
      expect(create.status, JSON.stringify(create.body)).toBe(201);
      const test = await http("POST", `/v1/channels/${create.body.data.channel_id}/test`, token);
      expect(test.status, JSON.stringify(test.body)).toBe(200);
      return test.body.data;
    };
    expect(await tryUrl("/fail")).toMatchObject({
      delivered: false,
      status: 500,
      body: '{"error":"platform down"}',
      error: "the platform answered HTTP 500",
    });
    expect(await tryUrl("/redirect")).toMatchObject({
      delivered: false,
      status: 302,
      error: expect.stringMatching(/not followed/),
    });
    expect(received.some((r) => r.path === "/moved")).toBe(false);
    const big = await tryUrl("/big");
    expect(big).toMatchObject({ delivered: true, status: 200, truncated: true });
    expect(big.body).toBe("y".repeat(1000));
    expect(await tryUrl("/hang")).toMatchObject({
      delivered: false,
      status: null,
      error: "no complete answer within 5 s",
    });
    // Meanwhile the service answers other requests as usual.
    expect((await http("GET", "/health")).status).toBe(200);
  });

  it("restarted with WEBHOOKS_ALLOW_PRIVATE_URLS=false: loopback channels and webhook endpoints saved before are not called; new ones are refused", async () => {
    const hook = await http("POST", "/v1/webhooks", token, {
      url: `${receiverBase}/webhook`,
      events: ["item.created"],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    await service!.halt();
    service = await startService("expiry-e2e-channels-", [...VARS, "--var", "WEBHOOKS_ALLOW_PRIVATE_URLS:false"], {
      persistDir: service!.persistDir,
    });
    base = service.base;
    token = await ownerToken(base);
    const before = received.length;

    const test = await http("POST", `/v1/channels/${channels.slack}/test`, token);
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    expect(test.body.data).toMatchObject({
      delivered: false,
      status: null,
      error: "not sent: url not allowed on this deployment: url must use https",
    });
    const fresh = await http("POST", "/v1/channels", token, {
      type: "slack",
      name: "new",
      url: `${receiverBase}/slack`,
    });
    expect(fresh.status).toBe(400);
    expect(fresh.body.msg).toBe("url must use https");
    const freshHook = await http("POST", "/v1/webhooks", token, { url: `${receiverBase}/webhook`, events: ["*"] });
    expect(freshHook.status).toBe(400);

    const due = new Date(Date.now() + 200 * 86_400_000).toISOString().slice(0, 10);
    expect(
      (await http("POST", "/v1/items", token, { title: "E2E after restart", expiry_date: due, seqid: 0 })).status,
    ).toBe(201);
    const path = `/v1/webhooks/${hook.body.data.webhook_id}`;
    let deliveries: any[] = [];
    for (let i = 0; i < 100 && deliveries[0]?.state !== "failed"; i++) {
      deliveries = (await http("GET", `${path}/deliveries`, token)).body.data ?? [];
      if (deliveries[0]?.state !== "failed") await sleep(200);
    }
    expect(deliveries[0]).toMatchObject({
      state: "failed",
      attempts: 0,
      last_error: "not sent: url not allowed on this deployment: url must use https",
    });
    expect((await http("GET", path, token)).body.data).toMatchObject({
      enabled: false,
      disabled_reason: "url not allowed on this deployment: url must use https",
    });
    expect(received.slice(before)).toEqual([]);
  });
});
