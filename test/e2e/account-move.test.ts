// End to end: `account move` (scripts/lib/account-move.ts, docs/scale.md "Moving an account") moves
// an account from DB to DB_1 while the real service (`node scripts/start.ts`) runs, and its client
// keeps working over HTTP with the token it had: same data, same counters, same calendar feed
// (same ETag: nothing was re-announced), search, writes on the new shard, nothing left behind.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, queryRows } from "../../scripts/lib/local.ts";
import { startService, type Service } from "./support/service.ts";

let service: Service | undefined;

beforeAll(async () => {
  // Cached client rows and directory answers expire within 1 s, so the move's settle and clean-up waits can be short.
  service = await startService("expiry-e2e-move-", [
    "--var",
    "CLIENT_STATUS_TTL_SECONDS:1",
    "--var",
    "DIRECTORY_TTL_SECONDS:1",
  ]);
});

afterAll(async () => {
  await service?.stop();
});

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, "scripts", "admin.ts"), ...args, "--persist-to", service!.persistDir],
      { cwd: ROOT, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const field = (output: string, name: string) => new RegExp(`^\\s*${name}:\\s+(\\S+)`, "m").exec(output)![1]!;

/**
 * One call. A write carries an Idempotency-Key and is sent again once when the connection was closed
 * under it: after a long pause (the CLI's D1 reads), the server may close the idle keep-alive
 * connection just as the next request goes out ("other side closed"), which fetch retries only for GETs.
 */
async function http(method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
  const key: Record<string, string> = method === "GET" ? {} : { "Idempotency-Key": crypto.randomUUID() };
  const send = () =>
    fetch(`${service!.base}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...key,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const res = await send().catch((error: unknown) => {
    if (!String((error as { cause?: unknown }).cause ?? error).includes("other side closed")) throw error;
    return send();
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text.startsWith("{") ? JSON.parse(text) : text };
}

describe("account move (docs/scale.md)", () => {
  it("moves an account from DB to DB_1 under a running service: old token, data, counters, feed, search and writes all carry over", async () => {
    const account = await cli(
      "account",
      "create",
      "--name",
      "Mover",
      "--owner-email",
      "ops@mover.example",
      "--company",
      "Mover Ltd",
    );
    expect(account.code, account.stderr).toBe(0);
    const accountId = field(account.stdout, "account_id");
    const companyId = Number(field(account.stdout, "company_id"));
    expect(companyId).toBeLessThan(500_000);
    const client = await cli("client", "create", "--company", String(companyId), "--scopes", "*");
    expect(client.code, client.stderr).toBe(0);
    const credentials = {
      grant_type: "client_credentials",
      client_id: field(client.stdout, "client_id"),
      client_secret: field(client.stdout, "client_secret"),
    };
    const tokenAnswer = await fetch(`${service!.base}/v1/oauth/token`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(credentials),
    });
    const token = ((await tokenAnswer.json()) as { access_token: string }).access_token;

    const contact = await http("POST", "/v1/contacts", token, {
      first_name: "Marta",
      last_name: "Mover",
      email: "marta@mover.example",
    });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const item = await http("POST", "/v1/items", token, {
      title: "Boiler inspection",
      expiry_date: "2031-03-01",
      contact_id: contact.body.data.contact_id,
    });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    expect(
      (await http("POST", "/v1/items", token, { title: "Insurance policy", expiry_date: "2031-05-01" })).status,
    ).toBe(201);
    expect(
      (await http("PUT", `/v1/items/${item.body.data.item_id}/tags`, token, { tags: ["urgent", "boiler"] })).status,
    ).toBe(200);
    expect(
      (await http("POST", "/v1/tasks", token, { title: "Call the inspector", due_at: "2031-01-10 09:00:00" })).status,
    ).toBe(201);
    const feed = await http("POST", "/v1/calendar-feeds", token, {});
    // The object decides the reminders from shard 0 and, after the move, from shard 1.
    const remindersBefore = await http("GET", `/v1/items/${item.body.data.item_id}/reminders`, token);
    expect(feed.status, JSON.stringify(feed.body)).toBe(201);
    const feedPath = new URL(feed.body.data.url).pathname;

    const reads = [
      "/v1/items",
      `/v1/items/${item.body.data.item_id}`,
      "/v1/items?q=boil",
      "/v1/contacts",
      "/v1/tags",
      "/v1/tasks",
      `/v1/companies/${companyId}`,
    ];
    const look = async () => Promise.all(reads.map(async (path) => (await http("GET", path, token)).body));
    const before = await look();
    const feedBefore = await fetch(`${service!.base}${feedPath}`);
    const etag = feedBefore.headers.get("ETag");
    const feedBody = await feedBefore.text();
    expect(etag).toBeTruthy();

    const move = await cli(
      "account",
      "move",
      "--account",
      accountId,
      "--to",
      "1",
      "--settle",
      "2",
      "--cleanup-after",
      "2",
    );
    expect(move.code, move.stderr + move.stdout).toBe(0);
    expect(move.stdout).toMatch(/counts match[\s\S]*Directory flipped[\s\S]*Deleted account/);

    // The token from before the move: the same answers, now from shard 1.
    const after = await http("GET", reads[0]!, token);
    expect(after.headers.get("X-D1-Bookmark")).toMatch(/^1:/);
    expect(await look()).toEqual(before);
    // The feed is the same document with the same ETag: the copy bumped no revision.
    const feedAfter = await fetch(`${service!.base}${feedPath}`, { headers: { "If-None-Match": etag! } });
    expect(feedAfter.status).toBe(304);
    expect(await (await fetch(`${service!.base}${feedPath}`)).text()).toBe(feedBody);

    // Nothing was queued again on the new shard, and nothing of the account is left on the old one.
    const onShard = (binding: string, sql: string) =>
      queryRows<{ n: number }>({ persistTo: service!.persistDir, binding }, sql)[0]!.n;
    expect(onShard("DB_1", `SELECT count(*) AS n FROM webhook_events WHERE company_id = ${companyId}`)).toBe(0);
    expect(
      onShard(
        "DB_1",
        `SELECT count(*) AS n FROM reminder_sync WHERE company_id = ${companyId} AND synced_version < version`,
      ),
    ).toBe(0);
    expect(onShard("DB_1", `SELECT count(*) AS n FROM reminder_sequences WHERE company_id = ${companyId}`)).toBe(1);
    expect(onShard("DB", `SELECT count(*) AS n FROM items WHERE company_id = ${companyId}`)).toBe(0);
    expect(onShard("DB", `SELECT count(*) AS n FROM accounts WHERE id = ${accountId}`)).toBe(0);

    // Writes go to shard 1 (ids from its block), the counters move on from the copied values.
    const newer = await http("POST", "/v1/contacts", token, {
      first_name: "Nina",
      last_name: "New",
      email: "nina@mover.example",
    });
    expect(newer.status, JSON.stringify(newer.body)).toBe(201);
    expect(newer.body.data.contact_id).toBeGreaterThanOrEqual(2 ** 25);
    const company = await http("GET", `/v1/companies/${companyId}`, token);
    expect(company.body.data.company.contacts_used).toBe(before[6].data.company.contacts_used + 1);
    expect((await http("GET", "/v1/contacts?q=nina", token)).body.data).toHaveLength(1);
    // The company's reminder object carries on: the moved item's reminders unchanged, a new item's queued from shard 1.
    expect(remindersBefore.status).toBe(200);
    expect(remindersBefore.body.data.queued.length).toBeGreaterThan(0);
    expect((await http("GET", `/v1/items/${item.body.data.item_id}/reminders`, token)).body).toEqual(
      remindersBefore.body,
    );
    const later = await http("POST", "/v1/items", token, {
      title: "Fire extinguishers",
      expiry_date: "2031-03-01",
      contact_id: contact.body.data.contact_id,
    });
    expect(later.status, JSON.stringify(later.body)).toBe(201);
    expect(later.body.data.item_id).toBeGreaterThanOrEqual(2 ** 25);
    const laterReminders = await http("GET", `/v1/items/${later.body.data.item_id}/reminders`, token);
    const dates = (body: { data: { queued: Array<{ date: string }> } }) => body.data.queued.map((r) => r.date);
    expect(dates(laterReminders.body)).toEqual(dates(remindersBefore.body));
    // A new token is issued for shard 1.
    const fresh = await fetch(`${service!.base}/v1/oauth/token`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(credentials),
    });
    expect(fresh.status).toBe(200);
    const freshToken = ((await fresh.json()) as { access_token: string }).access_token;
    expect((await http("GET", "/v1/items?q=insur", freshToken)).body.data).toHaveLength(1);

    // Running it again is harmless; moving back down is refused.
    const again = await cli("account", "move", "--account", accountId, "--to", "1");
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/already on shard 1/);
    const down = await cli("account", "move", "--account", accountId, "--to", "0");
    expect(down.code).toBe(1);
    const list = await cli("shard", "list");
    expect(list.stdout).toMatch(/shard 1 +DB_1 +accounts 2 +companies 2/);
  }, 240_000);
});
