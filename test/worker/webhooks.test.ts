import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import { WebhookPayloadSchema } from "../../src/schemas/webhooks";
import type { CompanyClock } from "../../src/company-clock/object";
import type { WebhookRequest } from "../../src/webhooks/delivery";
import { EVENT_TYPES } from "../../src/webhooks/events";
import { readEndpoints } from "../../src/webhooks/outbox";
import { decryptSecret } from "../../src/webhooks/secrets";
import { webhookHeaders } from "../../src/webhooks/signing";
import { checkWebhookUrl } from "../../src/webhooks/urls";
import {
  type CallResult,
  type DataOf,
  type Fields,
  type Schemas,
  type OpenApiJson,
  call,
  callWithEnv,
  createAccount,
  createExtraCompany,
  createOwnerWithScopes,
  env,
  expectShapeA,
  expectShapeB,
  noServerError,
  TIMESTAMP,
  uniqueWord,
  expectStatus,
  ok,
  openApiDocument,
} from "./helpers";

// Webhook endpoints (docs/webhooks.md): CRUD, the secret (shown at creation and rotation only,
// stored encrypted, verified by the reference library), owner-only access and scopes, tenancy,
// URL rules in both modes, event lists, the per-company limit (also under concurrency), rotation
// with two signing secrets for 24 h, the test event, the catalogue, and company deletion.

const ENDPOINT_FIELDS = [
  "webhook_id",
  "url",
  "description",
  "events",
  "enabled",
  "status",
  "disabled_reason",
  "failing_since",
  "created_at",
  "updated_at",
].sort();
const DAY_MS = 24 * 3_600_000;
// Nothing listens there: a delivery the engine attempts fails at once, without leaving the machine.
const LOCAL_URL = "http://127.0.0.1:9/hook";
const PUBLIC_URL = "https://hooks.example.com/expiry";

type Owner = Awaited<ReturnType<typeof createOwnerWithScopes>>;
/** A fresh account (owner, member), plus a client of the owner that can ask for narrower scopes. */
const freshOwner = () => createOwnerWithScopes("whclient");

async function createEndpoint(token: string, body: Fields = {}): Promise<DataOf<"createWebhook">> {
  const res = await call("createWebhook", "/v1/webhooks", {
    token,
    body: { url: LOCAL_URL, events: ["item.created"], ...body },
  });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** The columns of webhook_endpoints these tests read (the row has more). */
type EndpointRow = Fields & {
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: number | null;
};

async function row(endpointId: number) {
  return env.DB.prepare("SELECT * FROM webhook_endpoints WHERE id = ?").bind(endpointId).first<EndpointRow>();
}

/** What the secret looks like: `whsec_` + base64 of 32 bytes. */
function expectSecret(secret: unknown) {
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
}

/** Signs `body` as a delivery would (src/webhooks/signing.ts) and verifies it with the reference library. */
async function verifies(
  signWith: string[],
  verifyWith: string,
  body = JSON.stringify({ type: "webhook.test", timestamp: new Date().toISOString(), data: {} }),
) {
  const headers = await webhookHeaders(signWith, `msg_${uniqueWord()}`, Math.floor(Date.now() / 1000), body);
  try {
    new Webhook(verifyWith).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

/** Replaces the company's Durable Object sender: deliveries are captured and answered 200 (nothing leaves the machine). */
async function receiver(companyId: number): Promise<WebhookRequest[]> {
  const received: WebhookRequest[] = [];
  await runInDurableObject(clockFor(env, companyId), (instance: CompanyClock) => {
    instance.webhookTransport = async (request) => {
      received.push(request);
      return { status: 200 };
    };
  });
  return received;
}

/** Runs the company's alarm until `done()` holds (the runtime may also run it by itself). */
async function drain(companyId: number, done: () => boolean, rounds = 10) {
  for (let i = 0; i < rounds && !done(); i++) {
    await runDurableObjectAlarm(clockFor(env, companyId));
    if (!done()) await new Promise((r) => setTimeout(r, 20));
  }
}

describe("webhook endpoints: create, read, update, delete", () => {
  it("creates an endpoint and returns it with its secret; GET never shows the secret", async () => {
    const owner = await freshOwner();
    const res = await call("createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url: LOCAL_URL, events: ["item.created", "reminder.sent"], description: "Ops dashboard" },
    });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(res.body.msg).toBe("Webhook endpoint created");
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual([...ENDPOINT_FIELDS, "secret"].sort());
    expect(data).toMatchObject({
      url: LOCAL_URL,
      description: "Ops dashboard",
      events: ["item.created", "reminder.sent"],
      enabled: true,
      status: "active",
      disabled_reason: null,
      failing_since: null,
    });
    expect(data.webhook_id).toBeTypeOf("number");
    expect(data.created_at).toMatch(TIMESTAMP);
    expect(data.updated_at).toMatch(TIMESTAMP);
    expectSecret(data.secret);

    const detail = await call("getWebhook", `/v1/webhooks/${data.webhook_id}`, { token: owner.ownerToken });
    expectStatus(detail, 200);
    expect(Object.keys(detail.body.data).sort()).toEqual(ENDPOINT_FIELDS);
    const { secret: _secret, ...withoutSecret } = data;
    expect(detail.body.data).toEqual(withoutSecret);
    expect(JSON.stringify(detail.body)).not.toContain(data.secret);

    const list = await call("listWebhooks", "/v1/webhooks", { token: owner.ownerToken });
    expectStatus(list, 200);
    expect(list.body.data).toEqual([withoutSecret]);
    expect(list.body.meta).toEqual({ total: 1, max_allowed: 10 });
    expect(JSON.stringify(list.body)).not.toContain(data.secret);
  });

  it('defaults description to "" and enabled to true; enabled=false creates a disabled endpoint', async () => {
    const owner = await freshOwner();
    const plain = await createEndpoint(owner.ownerToken);
    expect(plain).toMatchObject({ description: "", enabled: true, status: "active" });
    const off = await createEndpoint(owner.ownerToken, { enabled: false });
    expect(off).toMatchObject({ enabled: false, status: "disabled", disabled_reason: "disabled by the account owner" });
  });

  it("stores the secret encrypted: the ciphertext neither is nor contains it, and decrypts to it", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    const stored = await row(endpoint.webhook_id);
    const secret = endpoint.secret as string;
    expect(stored!.secret_ciphertext).not.toBe(secret);
    expect(stored!.secret_ciphertext).not.toContain(secret.slice("whsec_".length));
    expect(stored!.secret_ciphertext).not.toContain(secret.slice("whsec_".length, 20));
    expect(stored!.secret_ciphertext).toMatch(/^v1\./);
    expect(await decryptSecret(stored!.secret_ciphertext, env.WEBHOOK_SECRETS_KEY)).toBe(secret);
    expect(stored!.previous_secret_ciphertext).toBeNull();
    // No other column carries it either.
    expect(JSON.stringify(stored)).not.toContain(secret.slice("whsec_".length));
  });

  it("lists a company's endpoints by webhook_id", async () => {
    const owner = await freshOwner();
    const a = await createEndpoint(owner.ownerToken);
    const b = await createEndpoint(owner.ownerToken, { events: ["*"] });
    const list = ok(await call("listWebhooks", "/v1/webhooks", { token: owner.ownerToken }));
    expect(list.body.data.map((e) => e.webhook_id)).toEqual([a.webhook_id, b.webhook_id]);
    expect(list.body.meta.total).toBe(2);
  });

  it("updates url, events, description and enabled; an empty body is 400", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    const id = endpoint.webhook_id;
    const res = await call("updateWebhook", `/v1/webhooks/${id}`, {
      token: owner.ownerToken,
      body: { url: "http://127.0.0.1:9/other", events: ["task.created", "task.deleted"], description: "Tasks" },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.msg).toBe("Webhook endpoint updated");
    expect(Object.keys(res.body.data).sort()).toEqual(ENDPOINT_FIELDS);
    expect(res.body.data).toMatchObject({
      url: "http://127.0.0.1:9/other",
      events: ["task.created", "task.deleted"],
      description: "Tasks",
      enabled: true,
    });

    const off = ok(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: { enabled: false } }),
    );
    expect(off.body.data).toMatchObject({
      enabled: false,
      status: "disabled",
      disabled_reason: "disabled by the account owner",
    });
    const on = ok(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: { enabled: true } }),
    );
    expect(on.body.data).toMatchObject({ enabled: true, status: "active", disabled_reason: null });

    expectShapeB(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: {} }),
      400,
      /No updatable fields/,
    );
    expectShapeB(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: { secret: "whsec_x" } }),
      400,
      /Unknown field: secret/,
    );
    expectShapeB(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: { events: ["nope.nope"] } }),
      400,
      /nope\.nope/,
    );
    expectShapeB(
      await call("updateWebhook", `/v1/webhooks/${id}`, {
        token: owner.ownerToken,
        body: { url: "ftp://example.com/" },
      }),
      400,
      /url must use https/,
    );
    // Nothing of the refused changes was written.
    expect(ok(await call("getWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken })).body.data).toMatchObject({
      url: "http://127.0.0.1:9/other",
      events: ["task.created", "task.deleted"],
    });
  });

  it("enabling a disabled endpoint clears disabled_reason and failing_since; failing and disabled show in status", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    const id = endpoint.webhook_id;
    const since = Date.now() - 6 * DAY_MS;
    // As the engine leaves it: failing for days, then disabled.
    await env.DB.prepare("UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?").bind(since, id).run();
    const failing = ok(await call("getWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken })).body.data;
    expect(failing).toMatchObject({
      enabled: true,
      status: "failing",
      failing_since: new Date(since).toISOString(),
      disabled_reason: null,
    });
    await env.DB.prepare(
      "UPDATE webhook_endpoints SET enabled = 0, disabled_reason = 'failing for 5 days' WHERE id = ?",
    )
      .bind(id)
      .run();
    const disabled = ok(await call("getWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken })).body.data;
    expect(disabled).toMatchObject({ enabled: false, status: "disabled", disabled_reason: "failing for 5 days" });

    // Disabling again keeps the service's reason.
    const again = ok(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: { enabled: false } }),
    );
    expect(again.body.data.disabled_reason).toBe("failing for 5 days");

    const enabled = ok(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: { enabled: true } }),
    );
    expect(enabled.body.data).toMatchObject({
      enabled: true,
      status: "active",
      disabled_reason: null,
      failing_since: null,
    });
    const stored = await row(id);
    expect(stored).toMatchObject({ enabled: 1, disabled_reason: null, failing_since: null });
  });

  it("a new url clears failing_since; other changes keep it", async () => {
    const owner = await freshOwner();
    const { webhook_id: id } = await createEndpoint(owner.ownerToken);
    await env.DB.prepare("UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?")
      .bind(Date.now() - 1000, id)
      .run();
    const described = ok(
      await call("updateWebhook", `/v1/webhooks/${id}`, {
        token: owner.ownerToken,
        body: { description: "x", enabled: true },
      }),
    );
    expect(described.body.data.status).toBe("failing");
    const moved = ok(
      await call("updateWebhook", `/v1/webhooks/${id}`, {
        token: owner.ownerToken,
        body: { url: "http://127.0.0.1:9/new" },
      }),
    );
    expect(moved.body.data).toMatchObject({ status: "active", failing_since: null });
  });

  it("deletes an endpoint; then it is 404", async () => {
    const owner = await freshOwner();
    const { webhook_id: id } = await createEndpoint(owner.ownerToken);
    const res = await call("deleteWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken });
    expectStatus(res, 200);
    expect(res.body).toEqual({ success: true, msg: "Webhook endpoint deleted" });
    expect(await row(id)).toBeNull();
    expectShapeB(
      await call("getWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken }),
      404,
      /Webhook endpoint not found/,
    );
    expectShapeB(await call("deleteWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken }), 404);
  });

  it("validates the body: required fields, types, lengths, unknown fields, path ids", async () => {
    const owner = await freshOwner();
    const post = (body: unknown) => call("createWebhook", "/v1/webhooks", { token: owner.ownerToken, body });
    expectShapeB(await post({ events: ["*"] }), 400, /^url is required$/);
    expectShapeB(await post({ url: LOCAL_URL }), 400, /^events is required$/);
    expectShapeB(await post({ url: "", events: ["*"] }), 400, /url must not be empty/);
    expectShapeB(await post({ url: 42, events: ["*"] }), 400, /url must be a string/);
    expectShapeB(
      await post({ url: LOCAL_URL, events: ["*"], description: "d".repeat(501) }),
      400,
      /description must be at most 500 characters/,
    );
    expectStatus(await post({ url: LOCAL_URL, events: ["*"], description: "d".repeat(500) }), 201);
    expectShapeB(await post({ url: LOCAL_URL, events: ["*"], enabled: "yes" }), 400, /enabled must be true or false/);
    expectShapeB(await post({ url: LOCAL_URL, events: ["*"], secret: "whsec_mine" }), 400, /Unknown field: secret/);
    expectShapeB(
      await call("getWebhook", "/v1/webhooks/abc", { token: owner.ownerToken }),
      400,
      /webhook_id must be a positive integer/,
    );
    expectShapeB(
      await call("getWebhook", "/v1/webhooks/0", { token: owner.ownerToken }),
      400,
      /webhook_id must be a positive integer/,
    );
  });
});

describe("webhook endpoints: event lists", () => {
  it('accepts catalogue types, ["*"] and "*"; removes duplicates', async () => {
    const owner = await freshOwner();
    expect((await createEndpoint(owner.ownerToken, { events: ["*"] })).events).toEqual(["*"]);
    expect((await createEndpoint(owner.ownerToken, { events: "*" })).events).toEqual(["*"]);
    expect((await createEndpoint(owner.ownerToken, { events: [...EVENT_TYPES] })).events).toEqual([...EVENT_TYPES]);
    expect(
      (await createEndpoint(owner.ownerToken, { events: ["task.created", "item.created", "task.created"] })).events,
    ).toEqual(["task.created", "item.created"]);
  });

  it('refuses unknown types (naming them), an empty list, "*" mixed with types, and other values', async () => {
    const owner = await freshOwner();
    const post = (events: unknown) =>
      call("createWebhook", "/v1/webhooks", { token: owner.ownerToken, body: { url: LOCAL_URL, events } });
    const unknown = await post(["item.created", "item.exploded", "Item.Created", "item.exploded"]);
    expectShapeB(unknown, 400, /^events: unknown event types: item\.exploded, Item\.Created \(known: reminder\.sent, /);
    expectShapeB(await post(["bogus"]), 400, /unknown event type: bogus/);
    expectShapeB(await post([]), 400, /events must not be empty/);
    expectShapeB(await post(["*", "item.created"]), 400, /send \["\*"\] alone/);
    expectShapeB(await post("item.created"), 400, /events must be a list of event types, or "\*"/);
    expectShapeB(await post([1]), 400, /events/);
    expectShapeB(await post(null), 400, /events/);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM webhook_endpoints WHERE company_id = ?")
      .bind(owner.companyId)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });
});

describe("webhook endpoints: who may manage them", () => {
  it("is for the account owner only: a member's token is 403 Shape B on every operation", async () => {
    const owner = await freshOwner();
    const { webhook_id: id } = await createEndpoint(owner.ownerToken);
    const token = owner.memberToken;
    const attempts: CallResult[] = await Promise.all([
      call("listWebhooks", "/v1/webhooks", { token }),
      call("createWebhook", "/v1/webhooks", { token, body: { url: LOCAL_URL, events: ["*"] } }),
      call("getWebhook", `/v1/webhooks/${id}`, { token }),
      call("updateWebhook", `/v1/webhooks/${id}`, { token, body: { description: "x" } }),
      call("deleteWebhook", `/v1/webhooks/${id}`, { token }),
      call("rotateWebhookSecret", `/v1/webhooks/${id}/rotate-secret`, { token }),
      call("testWebhook", `/v1/webhooks/${id}/test`, { token }),
    ]);
    for (const res of attempts) expectShapeB(res, 403);
    expect(await row(id)).toMatchObject({ description: "" });
  });

  it("needs webhooks:read to read and webhooks:write to write (insufficient_scope otherwise)", async () => {
    const owner = await freshOwner();
    const { webhook_id: id } = await createEndpoint(owner.ownerToken);
    const items = await owner.token("items:read items:write");
    for (const res of [
      await call("listWebhooks", "/v1/webhooks", { token: items }),
      await call("getWebhook", `/v1/webhooks/${id}`, { token: items }),
      await call("listWebhookEventTypes", "/v1/webhook-event-types", { token: items }),
    ]) {
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("webhooks:read");
    }
    const denied = await call("createWebhook", "/v1/webhooks", {
      token: items,
      body: { url: LOCAL_URL, events: ["*"] },
    });
    expectShapeA(denied, 403, "insufficient_scope");
    expect(denied.body.required_scope).toBe("webhooks:write");

    const read = await owner.token("webhooks:read");
    expectStatus(await call("listWebhooks", "/v1/webhooks", { token: read }), 200);
    expectStatus(await call("getWebhook", `/v1/webhooks/${id}`, { token: read }), 200);
    for (const res of [
      await call("createWebhook", "/v1/webhooks", { token: read, body: { url: LOCAL_URL, events: ["*"] } }),
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: read, body: { description: "x" } }),
      await call("deleteWebhook", `/v1/webhooks/${id}`, { token: read }),
      await call("rotateWebhookSecret", `/v1/webhooks/${id}/rotate-secret`, { token: read }),
      await call("testWebhook", `/v1/webhooks/${id}/test`, { token: read }),
    ]) {
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("webhooks:write");
    }

    const write = await owner.token("webhooks:write");
    expectStatus(
      await call("updateWebhook", `/v1/webhooks/${id}`, { token: write, body: { description: "by write" } }),
      200,
    );
    expectShapeA(await call("listWebhooks", "/v1/webhooks", { token: write }), 403, "insufficient_scope");
  });

  it("keeps companies apart: another company's endpoint is 404 everywhere and is left alone", async () => {
    const a = await freshOwner();
    const b = await freshOwner();
    const endpoint = await createEndpoint(a.ownerToken);
    const id = endpoint.webhook_id;
    const token = b.ownerToken;
    for (const res of [
      await call("getWebhook", `/v1/webhooks/${id}`, { token }),
      await call("updateWebhook", `/v1/webhooks/${id}`, { token, body: { description: "taken" } }),
      await call("deleteWebhook", `/v1/webhooks/${id}`, { token }),
      await call("rotateWebhookSecret", `/v1/webhooks/${id}/rotate-secret`, { token }),
      await call("testWebhook", `/v1/webhooks/${id}/test`, { token }),
    ]) {
      expectShapeB(res, 404, /Webhook endpoint not found/);
    }
    expect(ok(await call("listWebhooks", "/v1/webhooks", { token })).body.data).toEqual([]);
    const stored = await row(id);
    expect(stored).toMatchObject({ company_id: a.companyId, description: "", previous_secret_ciphertext: null });
    expect(await decryptSecret(stored!.secret_ciphertext, env.WEBHOOK_SECRETS_KEY)).toBe(endpoint.secret);
  });
});

describe("webhook endpoints: URL rules", () => {
  // A deployment: WEBHOOKS_ALLOW_PRIVATE_URLS unset.
  const strict = { WEBHOOKS_ALLOW_PRIVATE_URLS: undefined };
  const REFUSED: Array<[string, RegExp]> = [
    ["http://hooks.example.com/x", /^url must use https$/],
    ["https://10.0.0.1/x", /10\.0\.0\.1 is private \(10\.0\.0\.0\/8\)/],
    ["https://10.255.255.255/x", /private/],
    ["https://172.16.0.1/x", /172\.16\.0\.1 is private \(172\.16\.0\.0\/12\)/],
    ["https://172.31.255.1/x", /private/],
    ["https://192.168.1.10/x", /192\.168\.1\.10 is private \(192\.168\.0\.0\/16\)/],
    ["https://127.0.0.1/x", /127\.0\.0\.1 is loopback/],
    ["https://127.1.2.3/x", /loopback/],
    ["https://0x7f.0.0.1/x", /127\.0\.0\.1 is loopback/],
    ["https://0177.0.0.1/x", /127\.0\.0\.1 is loopback/],
    ["https://127.0.0.1./x", /127\.0\.0\.1 is loopback/],
    ["https://[::127.0.0.1]/x", /IPv4-compatible loopback/],
    ["https://2130706433/x", /127\.0\.0\.1 is loopback/],
    ["https://0.0.0.0/x", /unspecified/],
    ["https://[::1]/x", /\[::1\] is loopback/],
    ["https://[::]/x", /unspecified/],
    ["https://[::ffff:127.0.0.1]/x", /IPv4-mapped loopback/],
    ["https://[::ffff:10.1.2.3]/x", /IPv4-mapped private/],
    ["https://169.254.169.254/latest/meta-data", /169\.254\.169\.254 is cloud metadata/],
    ["https://169.254.1.1/x", /link-local/],
    ["https://[fe80::1]/x", /link-local/],
    ["https://[fd00::1]/x", /unique-local/],
    ["https://[fd00:ec2::254]/x", /unique-local/],
    ["https://100.64.0.1/x", /carrier-grade NAT/],
    ["https://100.127.255.254/x", /carrier-grade NAT/],
    ["https://224.0.0.1/x", /multicast/],
    ["https://[ff02::1]/x", /multicast/],
    ["https://localhost/x", /^url must not point to localhost$/],
    ["https://LOCALHOST./x", /localhost/],
    ["https://api.localhost/x", /localhost/],
    ["https://printer.local/x", /\*\.local/],
    ["https://db.corp.internal/x", /\*\.internal/],
    ["https://metadata.google.internal/computeMetadata/v1/", /cloud metadata host/],
    ["https://intranet/x", /single-label host/],
    ["https://user:pass@hooks.example.com/x", /^url must not contain credentials/],
    ["https://user@hooks.example.com/x", /credentials/],
    ["https://hooks.example.com:8443/x", /^url must use the default https port \(443\), not 8443$/],
    ["https://hooks.example.com:80/x", /default https port/],
    ["ftp://hooks.example.com/x", /^url must use https, not ftp$/],
    ["javascript:alert(1)", /^url must use https, not javascript$/],
    ["file:///etc/passwd", /not file/],
    ["hooks.example.com/x", /url must be an absolute URL/],
    ["/relative/path", /url must be an absolute URL/],
    [`https://hooks.example.com/${"a".repeat(3000)}`, /url must be at most 2048 characters/],
    ["https://hooks.exa mple.com/", /url must be an absolute URL/],
    ["https://hooks.example.com/\u0000", /url must not contain control characters/],
  ];

  // An outside probe's findings and their neighbours: refused in a deployment and in local
  // development alike (which allows only plain loopback hosts, not their IPv6 embeddings).
  const REFUSED_IN_BOTH_MODES: Array<[string, RegExp]> = [
    [
      "https://[::ffff:0:169.254.169.254]/",
      /\[::ffff:0:a9fe:a9fe\] is IPv4-translated cloud metadata \(169\.254\.169\.254\)/,
    ],
    ["https://[::ffff:0:127.0.0.1]/", /IPv4-translated loopback/],
    ["https://[::ffff:127.0.0.1]/", /IPv4-mapped loopback/],
    ["https://[::127.0.0.1]/", /IPv4-compatible loopback/],
    ["https://[64:ff9b::a9fe:a9fe]/", /NAT64-mapped cloud metadata/],
    ["https://[64:ff9b:1::a9fe:a9fe]/", /local-use NAT64 \(64:ff9b:1::\/48\)/],
    ["https://[64:ff9b:1::808:808]/", /local-use NAT64/],
    ["https://[2002:a9fe:a9fe::1]/", /6to4-mapped cloud metadata/],
    ["https://[2001::a9fe:a9fe]/", /Teredo server unspecified/],
    ["https://[2001:0:a00:1::f7f7:f7f7]/", /Teredo server private \(10\.0\.0\.0\/8\)/],
    ["https://[2001:0:808:808::5601:5601]/", /Teredo client cloud metadata/],
    ["https://[::5efe:a9fe:a9fe]/", /ISATAP cloud metadata/],
    ["https://[2606:4700::200:5efe:a00:1]/", /ISATAP private/],
    ["https://[fe80::5efe:808:808]/", /link-local/],
    ["https://[2001:2::1]/", /benchmarking \(2001:2::\/48\)/],
    ["https://[2001:10::1]/", /ORCHID \(2001:10::\/28\)/],
    ["https://[3fff::1]/", /documentation \(3fff::\/20\)/],
    ["https://[5f00::1]/", /SRv6\) SIDs \(5f00::\/16\)/],
    ["https://[100::1]/", /discard-only \(100::\/64\)/],
    [
      "https://metadata.google.internal../",
      /^url must have a valid host name: metadata\.google\.internal\.\. has an empty label/,
    ],
    ["https://localhost../", /empty label/],
    ["https://foo.internal../", /empty label/],
    ["https://single../", /empty label/],
    ["https://127.0.0.1../", /empty label/],
    ["https://.example.com/", /empty label/],
    ["https://hooks..example.com/", /empty label/],
    ["https://example.com:0/", /^url must not use port 0$/],
    ["https://example.com\\@127.0.0.1/", /^url must not contain a backslash \(\\\) before its path$/],
    ["https:\\\\example.com/x", /backslash/],
    [
      `https://hooks.example.com/${"é".repeat(1000)}`,
      /^url must be at most 2048 characters once normalised \(percent-encoded\), not 6026$/,
    ],
  ];
  const MODES = [
    { mode: "a deployment", modeEnv: strict },
    { mode: "local development", modeEnv: { WEBHOOKS_ALLOW_PRIVATE_URLS: "true" } },
  ];
  const shown = (url: string) =>
    url.length > 60 ? `${url.slice(0, 40)}… (${url.length} characters)` : JSON.stringify(url);

  it.each(
    MODES.flatMap(({ mode, modeEnv }) =>
      REFUSED_IN_BOTH_MODES.map(([url, msg]) => ({ url, msg, mode, modeEnv, shown: shown(url) })),
    ),
  )("refuses $shown in $mode (400 naming the rule)", async ({ url, msg, modeEnv }) => {
    const owner = await strictOwner();
    const res = await callWithEnv(modeEnv, "createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url, events: ["*"] },
    });
    expectShapeB(res, 400, msg);
  });

  it.each(REFUSED.map(([url, msg]) => ({ url, msg, shown: shown(url) })))(
    "refuses $shown in a deployment (400 naming the rule)",
    async ({ url, msg }) => {
      const owner = await strictOwner();
      const res = await callWithEnv(strict, "createWebhook", "/v1/webhooks", {
        token: owner.ownerToken,
        body: { url, events: ["*"] },
      });
      expectShapeB(res, 400, msg);
    },
  );

  it("refuses the same on PATCH", async () => {
    const owner = await strictOwner();
    const created = await callWithEnv(strict, "createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url: PUBLIC_URL, events: ["*"] },
    });
    expectStatus(created, 201, JSON.stringify(created.body));
    const id = created.body.data.webhook_id;
    for (const url of [
      "https://10.0.0.1/x",
      "http://hooks.example.com/x",
      "https://[::ffff:127.0.0.1]/",
      "https://hooks.example.com:8443/",
      "https://[::ffff:0:169.254.169.254]/",
      "https://[2001::a9fe:a9fe]/",
      "https://metadata.google.internal../",
      "https://example.com:0/",
      "https://example.com\\@127.0.0.1/",
    ]) {
      expectShapeB(
        await callWithEnv(strict, "updateWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken, body: { url } }),
        400,
        /^url /,
      );
    }
    expect((await row(id))!.url).toBe(PUBLIC_URL);
    await call("deleteWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken });
  });

  it.each([
    [PUBLIC_URL, PUBLIC_URL],
    ["https://hooks.example.com:443/path?x=1", "https://hooks.example.com/path?x=1"],
    ["HTTPS://Example.COM:443/a/../b", "https://example.com/b"],
    ["https://hooks.example.com/a\\b?q=\\", "https://hooks.example.com/a/b?q=\\"],
    ["https://hooks.example.com./x", "https://hooks.example.com./x"],
    ["https://bücher.example/hook", "https://xn--bcher-kva.example/hook"],
    ["https://hooks.example.com/é", "https://hooks.example.com/%C3%A9"],
    ["https://1.1.1.1/hook", "https://1.1.1.1/hook"],
    ["https://172.32.0.1/x", "https://172.32.0.1/x"],
    ["https://[2606:4700:4700::1111]/hook", "https://[2606:4700:4700::1111]/hook"],
    ["https://[2606:4700:0::1111]/hook", "https://[2606:4700::1111]/hook"],
    ["https://[::ffff:8.8.8.8]/", "https://[::ffff:808:808]/"],
    ["https://[64:ff9b::8.8.8.8]/", "https://[64:ff9b::808:808]/"],
    ["https://[2002:808:808::1]/", "https://[2002:808:808::1]/"],
    ["https://[2001:0:808:808::f7f7:f7f7]/", "https://[2001:0:808:808::f7f7:f7f7]/"],
    ["https://[2606:4700::5efe:808:808]/", "https://[2606:4700::5efe:808:808]/"],
  ])("accepts the public https URL %s in a deployment, stored and returned as %s", async (url, normalised) => {
    const owner = await strictOwner();
    const res = await callWithEnv(strict, "createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url, events: ["*"] },
    });
    expectStatus(res, 201, JSON.stringify(res.body));
    const id = res.body.data.webhook_id;
    expect(res.body.data.url).toBe(normalised);
    expect((await row(id))!.url).toBe(normalised);
    expect(ok(await call("getWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken })).body.data.url).toBe(
      normalised,
    );
    await call("deleteWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken });
  });

  it("checkWebhookUrl: a tab or newline, which the parser drops, does not hide a backslash before the path", () => {
    // Not reachable over HTTP (control characters are refused first); the check must not rely on that.
    for (const raw of ["https:/\n/example.com\\@127.0.0.1/", "https://exa\tmple.com\\@127.0.0.1/"]) {
      expect(checkWebhookUrl(raw, false)).toEqual({
        ok: false,
        msg: "url must not contain a backslash (\\) before its path",
      });
    }
  });

  it("stores and returns the normalised URL on PATCH too", async () => {
    const owner = await strictOwner();
    const created = await callWithEnv(strict, "createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url: PUBLIC_URL, events: ["*"] },
    });
    expectStatus(created, 201, JSON.stringify(created.body));
    const id = created.body.data.webhook_id;
    const patched = await callWithEnv(strict, "updateWebhook", `/v1/webhooks/${id}`, {
      token: owner.ownerToken,
      body: { url: "HTTPS://Example.COM:443/a/../b" },
    });
    expectStatus(patched, 200, JSON.stringify(patched.body));
    expect(patched.body.data.url).toBe("https://example.com/b");
    expect((await row(id))!.url).toBe("https://example.com/b");
    expect(
      ok(await call("listWebhooks", "/v1/webhooks", { token: owner.ownerToken })).body.data.map((e) => e.url),
    ).toEqual(["https://example.com/b"]);
    await call("deleteWebhook", `/v1/webhooks/${id}`, { token: owner.ownerToken });
  });

  it("allows http, any port and loopback hosts where WEBHOOKS_ALLOW_PRIVATE_URLS=true (local development), and nothing else non-public", async () => {
    const owner = await freshOwner();
    for (const url of [
      "http://127.0.0.1:8787/hook",
      "http://localhost:3000/",
      "http://[::1]:9000/x",
      "https://127.0.0.1/x",
      "http://hooks.example.com:8080/x",
    ]) {
      const res = await call("createWebhook", "/v1/webhooks", {
        token: owner.ownerToken,
        body: { url, events: ["*"] },
      });
      expectStatus(res, 201, `${url}: ${JSON.stringify(res.body)}`);
    }
    const post = (url: string) =>
      call("createWebhook", "/v1/webhooks", { token: owner.ownerToken, body: { url, events: ["*"] } });
    expectShapeB(await post("ftp://127.0.0.1/"), 400, /url must use https \(or http/);
    expectShapeB(await post("http://u:p@127.0.0.1/"), 400, /credentials/);
    for (const [url, msg] of [
      ["http://10.0.0.1/x", /10\.0\.0\.1 is private .*\(local development allows only loopback hosts\)$/],
      ["https://192.168.1.1/x", /private/],
      ["http://172.16.0.1:8080/x", /private/],
      ["http://169.254.169.254/latest/meta-data", /cloud metadata/],
      ["http://[fd00::1]/", /unique-local/],
      ["http://100.64.0.1/", /carrier-grade NAT/],
      ["http://metadata.google.internal/", /cloud metadata host/],
      ["http://printer.local/", /\*\.local/],
    ] as Array<[string, RegExp]>) {
      expectShapeB(await post(url), 400, msg);
    }
  });
});

// One company for the URL table (at most one endpoint at a time: each accepted URL is deleted).
let strictOwnerPromise: Promise<Owner> | undefined;
const strictOwner = () => (strictOwnerPromise ??= freshOwner());

describe("webhook endpoints: the per-company limit", () => {
  it("allows 10 endpoints; the 11th is 400; deleting one makes room", async () => {
    const owner = await freshOwner();
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) ids.push((await createEndpoint(owner.ownerToken)).webhook_id);
    const over = await call("createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url: LOCAL_URL, events: ["*"] },
    });
    expectShapeB(over, 400, /at most 10 webhook endpoints/);
    await call("deleteWebhook", `/v1/webhooks/${ids[0]}`, { token: owner.ownerToken });
    await createEndpoint(owner.ownerToken);
  });

  it("holds under concurrent creates", async () => {
    const owner = await freshOwner();
    for (let i = 0; i < 6; i++) await createEndpoint(owner.ownerToken);
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        call("createWebhook", "/v1/webhooks", { token: owner.ownerToken, body: { url: LOCAL_URL, events: ["*"] } }),
      ),
    );
    noServerError(...results);
    expect(results.filter((r) => r.status === 201)).toHaveLength(4);
    for (const res of results.filter((r) => r.status !== 201)) expectShapeB(res, 400, /at most 10 webhook endpoints/);
    const n = await env.DB.prepare("SELECT count(*) AS n FROM webhook_endpoints WHERE company_id = ?")
      .bind(owner.companyId)
      .first<{ n: number }>();
    expect(n!.n).toBe(10);
  });
});

describe("webhook secrets: signing and rotation", () => {
  it("a signature made with the returned secret verifies with the standardwebhooks reference library", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    // The secrets as the delivery engine reads them (decrypted from D1).
    const [engine] = await readEndpoints(env.DB, owner.companyId, env.WEBHOOK_SECRETS_KEY);
    expect(engine!.secrets).toEqual([endpoint.secret]);
    expect(await verifies(engine!.secrets, endpoint.secret)).toBe(true);
    // And the library's own signature is ours.
    const body = '{"type":"webhook.test","timestamp":"2026-03-01T09:00:00.000Z","data":{}}';
    const at = new Date();
    const ours = await webhookHeaders([endpoint.secret], "msg_fixed", Math.floor(at.getTime() / 1000), body);
    expect(ours["webhook-signature"]).toBe(
      new Webhook(endpoint.secret).sign("msg_fixed", new Date(Math.floor(at.getTime() / 1000) * 1000), body),
    );
    // Another secret does not verify.
    const other = await createEndpoint(owner.ownerToken);
    expect(await verifies(engine!.secrets, other.secret)).toBe(false);
  });

  it("rotation returns a new secret; the previous one keeps signing alongside for 24 hours", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    const before = await row(endpoint.webhook_id);
    const startedAt = Date.now();
    const res = await call("rotateWebhookSecret", `/v1/webhooks/${endpoint.webhook_id}/rotate-secret`, {
      token: owner.ownerToken,
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.msg).toMatch(/rotated/);
    expect(Object.keys(res.body.data).sort()).toEqual([...ENDPOINT_FIELDS, "secret"].sort());
    expectSecret(res.body.data.secret);
    expect(res.body.data.secret).not.toBe(endpoint.secret);

    const after = await row(endpoint.webhook_id);
    expect(after!.previous_secret_ciphertext).toBe(before!.secret_ciphertext);
    expect(after!.secret_ciphertext).not.toBe(before!.secret_ciphertext);
    expect(await decryptSecret(after!.secret_ciphertext, env.WEBHOOK_SECRETS_KEY)).toBe(res.body.data.secret);
    expect(await decryptSecret(after!.previous_secret_ciphertext!, env.WEBHOOK_SECRETS_KEY)).toBe(endpoint.secret);
    expect(after!.previous_secret_expires_at).toBeGreaterThanOrEqual(startedAt + DAY_MS);
    expect(after!.previous_secret_expires_at).toBeLessThanOrEqual(Date.now() + DAY_MS);

    // The engine signs with both; the reference library accepts the delivery with either secret.
    const [engine] = await readEndpoints(env.DB, owner.companyId, env.WEBHOOK_SECRETS_KEY);
    expect(engine!.secrets).toEqual([res.body.data.secret, endpoint.secret]);
    const headers = await webhookHeaders(engine!.secrets, "msg_rot", Math.floor(Date.now() / 1000), "{}");
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(await verifies(engine!.secrets, res.body.data.secret)).toBe(true);
    expect(await verifies(engine!.secrets, endpoint.secret)).toBe(true);

    // The secret is still only in the rotation's response.
    expect(
      JSON.stringify(
        (await call("getWebhook", `/v1/webhooks/${endpoint.webhook_id}`, { token: owner.ownerToken })).body,
      ),
    ).not.toContain(res.body.data.secret);

    // 24 h later only the new one signs.
    await env.DB.prepare("UPDATE webhook_endpoints SET previous_secret_expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, endpoint.webhook_id)
      .run();
    const [later] = await readEndpoints(env.DB, owner.companyId, env.WEBHOOK_SECRETS_KEY);
    expect(later!.secrets).toEqual([res.body.data.secret]);
    expect(await verifies(later!.secrets, endpoint.secret)).toBe(false);
  });

  it("rotating twice within 24 hours: the previous secret is the one just replaced", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    const first = ok(
      await call("rotateWebhookSecret", `/v1/webhooks/${endpoint.webhook_id}/rotate-secret`, {
        token: owner.ownerToken,
      }),
    );
    const second = await call("rotateWebhookSecret", `/v1/webhooks/${endpoint.webhook_id}/rotate-secret`, {
      token: owner.ownerToken,
    });
    expectStatus(second, 200);
    const stored = await row(endpoint.webhook_id);
    expect(await decryptSecret(stored!.secret_ciphertext, env.WEBHOOK_SECRETS_KEY)).toBe(second.body.data.secret);
    expect(await decryptSecret(stored!.previous_secret_ciphertext!, env.WEBHOOK_SECRETS_KEY)).toBe(
      first.body.data.secret,
    );
    const [engine] = await readEndpoints(env.DB, owner.companyId, env.WEBHOOK_SECRETS_KEY);
    expect(engine!.secrets).toEqual([second.body.data.secret, first.body.data.secret]);
    expect(await verifies(engine!.secrets, endpoint.secret)).toBe(false);
  });

  it("is 503 (Shape B) when the deployment has no WEBHOOK_SECRETS_KEY, and writes nothing", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    const none = { WEBHOOK_SECRETS_KEY: undefined };
    const create = await callWithEnv(none, "createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url: LOCAL_URL, events: ["*"] },
    });
    expectShapeB(create, 503, /^webhooks are not configured on this deployment$/);
    const rotate = await callWithEnv(none, "rotateWebhookSecret", `/v1/webhooks/${endpoint.webhook_id}/rotate-secret`, {
      token: owner.ownerToken,
    });
    expectShapeB(rotate, 503, /not configured/);
    expectShapeB(
      await callWithEnv(
        { WEBHOOK_SECRETS_KEY: "too-short" },
        "testWebhook",
        `/v1/webhooks/${endpoint.webhook_id}/test`,
        { token: owner.ownerToken },
      ),
      503,
      /not configured/,
    );
    const n = await env.DB.prepare("SELECT count(*) AS n FROM webhook_endpoints WHERE company_id = ?")
      .bind(owner.companyId)
      .first<{ n: number }>();
    expect(n!.n).toBe(1);
    expect((await row(endpoint.webhook_id))!.previous_secret_ciphertext).toBeNull();
    // Reads do not need the key.
    expectStatus(await callWithEnv(none, "listWebhooks", "/v1/webhooks", { token: owner.ownerToken }), 200);
  });
});

describe("webhook endpoints: the test event", () => {
  it("queues a webhook.test delivery to that endpoint only (202), whatever it subscribes to; it arrives signed", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken, { events: ["task.deleted"] });
    const bystander = await createEndpoint(owner.ownerToken, { events: ["*"] });
    const received = await receiver(owner.companyId);
    const res = await call("testWebhook", `/v1/webhooks/${endpoint.webhook_id}/test`, { token: owner.ownerToken });
    expectStatus(res, 202, JSON.stringify(res.body));
    expect(res.body).toMatchObject({ success: true, msg: "Test event queued" });
    expect(Object.keys(res.body.data).sort()).toEqual(["delivery_id", "message_id"]);
    expect(res.body.data.delivery_id).toBeTypeOf("number");
    expect(res.body.data.message_id).toMatch(/^msg_/);

    await drain(owner.companyId, () => received.length > 0);
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request!.url).toBe(LOCAL_URL);
    expect(request!.headers["webhook-id"]).toBe(res.body.data.message_id);
    const payload = new Webhook(endpoint.secret).verify(request!.body, request!.headers) as Schemas["WebhookPayload"];
    expect(payload).toMatchObject({ type: "webhook.test", data: { webhook_id: endpoint.webhook_id } });
    expect(Object.keys(payload).sort()).toEqual(["data", "timestamp", "type"]);
    expect(() => new Webhook(bystander.secret).verify(request!.body, request!.headers)).toThrow();

    const deliveries = await call("listWebhookDeliveries", `/v1/webhooks/${endpoint.webhook_id}/deliveries`, {
      token: owner.ownerToken,
    });
    expectStatus(deliveries, 200, JSON.stringify(deliveries.body));
    const delivery = deliveries.body.data.find((d) => d.delivery_id === res.body.data.delivery_id);
    expect(delivery).toMatchObject({
      event_type: "webhook.test",
      message_id: res.body.data.message_id,
      state: "delivered",
    });
    const others = ok(
      await call("listWebhookDeliveries", `/v1/webhooks/${bystander.webhook_id}/deliveries`, {
        token: owner.ownerToken,
      }),
    );
    expect(others.body.data).toEqual([]);
  });

  it("after a rotation, a real delivery carries both signatures and verifies with either secret", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken);
    const rotated = ok(
      await call("rotateWebhookSecret", `/v1/webhooks/${endpoint.webhook_id}/rotate-secret`, {
        token: owner.ownerToken,
      }),
    ).body.data;
    const received = await receiver(owner.companyId);
    expectStatus(
      await call("testWebhook", `/v1/webhooks/${endpoint.webhook_id}/test`, { token: owner.ownerToken }),
      202,
    );
    await drain(owner.companyId, () => received.length > 0);
    const [request] = received;
    expect(request!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    for (const secret of [rotated.secret, endpoint.secret]) {
      expect(new Webhook(secret).verify(request!.body, request!.headers)).toMatchObject({ type: "webhook.test" });
    }
  });

  it("is 400 for a disabled endpoint", async () => {
    const owner = await freshOwner();
    const endpoint = await createEndpoint(owner.ownerToken, { enabled: false });
    expectShapeB(
      await call("testWebhook", `/v1/webhooks/${endpoint.webhook_id}/test`, { token: owner.ownerToken }),
      400,
      /disabled: enable it/,
    );
  });
});

describe("the webhook event catalogue", () => {
  it("lists every type with a description and an example payload {type, timestamp, data}", async () => {
    const owner = await freshOwner();
    const res = await call("listWebhookEventTypes", "/v1/webhook-event-types", {
      token: await owner.token("webhooks:read"),
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data.map((e) => e.type)).toEqual([...EVENT_TYPES]);
    for (const entry of res.body.data) {
      expect(entry.description).toBeTypeOf("string");
      expect(Object.keys(entry.example).sort()).toEqual(["data", "timestamp", "type"]);
      expect(entry.example.type).toBe(entry.type);
      // The example is a valid WebhookPayload (the schema the document publishes).
      expect(WebhookPayloadSchema.safeParse(entry.example).success, entry.type).toBe(true);
    }
    const itemCreated = res.body.data.find((e) => e.type === "item.created");
    expect(Object.keys(itemCreated!.example.data).sort()).toEqual(
      [
        "item_id",
        "title",
        "item_type",
        "document_type",
        "document_type_id",
        "deptid",
        "expiry_date",
        "status",
        "folder_id",
        "active",
      ].sort(),
    );
    // Not owner-only: the catalogue is no secret.
    const member = await call("listWebhookEventTypes", "/v1/webhook-event-types", { token: owner.memberToken });
    expectStatus(member, 200);
  });

  it("is published in the OpenAPI document: the WebhookEventType enum and the WebhookPayload schemas", async () => {
    const doc = await openApiDocument();
    const schemas = doc.components.schemas;
    expect(schemas.WebhookEventType.enum).toEqual([...EVENT_TYPES]);
    expect(schemas.WebhookPayload.oneOf.map((s: OpenApiJson) => s.$ref)).toEqual(
      [
        "WebhookItemEvent",
        "WebhookItemChangeEvent",
        "WebhookItemActionEvent",
        "WebhookReminderSentEvent",
        "WebhookReminderBouncedEvent",
        "WebhookTaskEvent",
        "WebhookFileUploadedEvent",
        "WebhookContactUnsubscribedEvent",
        "WebhookChannelDisabledEvent",
        "WebhookTestEvent",
      ].map((n) => `#/components/schemas/${n}`),
    );
    expect(Object.keys(schemas.WebhookPayload.discriminator.mapping).sort()).toEqual([...EVENT_TYPES].sort());
    expect(schemas.WebhookItemEvent.properties.data.$ref).toBe("#/components/schemas/ItemListEntry");
    expect(schemas.WebhookTaskEvent.properties.data.$ref).toBe("#/components/schemas/Task");
  });
});

describe("webhook endpoints and company deletion", () => {
  it("deleting a company deletes its webhook endpoints in the same batch", async () => {
    const account = await createAccount({ companies: 5 });
    const { companyId, token } = await createExtraCompany(account, "whdel");
    await createEndpoint(token);
    await createEndpoint(token, { events: ["*"] });
    const deleted = await call("deleteCompany", `/v1/companies/${companyId}`, { token: account.ownerToken });
    expectStatus(deleted, 200, JSON.stringify(deleted.body));
    const n = await env.DB.prepare("SELECT count(*) AS n FROM webhook_endpoints WHERE company_id = ?")
      .bind(companyId)
      .first<{ n: number }>();
    expect(n!.n).toBe(0);
  });
});
