// End to end, against the real `npm start` with rate limits on: the bursts of issue 31, sent as an
// outside probe sent them, where requests are really concurrent (separate connections, one server).
// - 99 wrong secrets and the right one at once over 50 addresses: at most 10 checked;
// - 400 requests with an invalid bearer token from one address: 429 once its units are spent;
// - 8 completions of one occurrence at once: one renewal;
// - 10 PATCHes with one If-Match at once: one 200, and every 412 carries the current ETag.
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEMO_CLIENTS } from "../../scripts/seed-data.ts";
import { cliField, operatorCli, startService, type Service } from "./support/service.ts";

const TOKEN_FAILURE_LIMIT = 10;
const ANONYMOUS_QUOTA = 300;

let service: Service | undefined;
let base = "";

beforeAll(async () => {
  service = await startService("expiry-e2e-bursts-");
  base = service.base;
}, 180_000);

afterAll(async () => {
  await service?.stop();
});

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function send(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

const count = (answers: Answer[]) =>
  answers.reduce<Record<number, number>>((n, a) => ({ ...n, [a.status]: (n[a.status] ?? 0) + 1 }), {});

async function tokenOf(clientId: string): Promise<string> {
  const client = DEMO_CLIENTS.find((c) => c.clientId === clientId)!;
  const res = await send(
    "POST",
    "/v1/oauth/token",
    {},
    { grant_type: "client_credentials", client_id: client.clientId, client_secret: client.secret },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.access_token;
}

it("checks at most 10 of 99 wrong secrets and the right one sent at once over 50 addresses; then refuses everything", async () => {
  const created = await operatorCli(
    service!.persistDir,
    "client",
    "create",
    "--company",
    "1",
    "--scopes",
    "*",
    "--name",
    "burst target",
  );
  expect(created.code, created.stderr).toBe(0);
  const clientId = cliField(created.stdout, "client_id");
  const secret = cliField(created.stdout, "client_secret");
  const attempt = (guess: string, i: number) =>
    send(
      "POST",
      "/v1/oauth/token",
      { "CF-Connecting-IP": `198.51.100.${i % 50}` },
      { grant_type: "client_credentials", client_id: clientId, client_secret: guess },
    );
  const answers = await Promise.all([...Array<string>(99).fill("cs_wrong"), secret].map(attempt));
  const n = count(answers);
  expect((n[401] ?? 0) + (n[200] ?? 0), JSON.stringify(n)).toBe(TOKEN_FAILURE_LIMIT);
  expect(n[429], JSON.stringify(n)).toBe(100 - TOKEN_FAILURE_LIMIT);
  for (const a of answers.filter((a) => a.status === 429)) {
    expect(a.body.error).toBe("too_many_requests");
    expect(Number(a.headers.get("Retry-After"))).toBeGreaterThan(800);
  }
  if (answers[99]!.status === 429) {
    expect((await attempt(secret, 7)).status).toBe(429);
    // And a second burst of 60 wrong secrets: nothing more is checked.
    expect(count(await Promise.all(Array.from({ length: 60 }, (_, i) => attempt("cs_wrong", i))))).toEqual({ 429: 60 });
  }
}, 60_000);

it("refuses an invalid bearer token with 429 and Retry-After once its address has spent its anonymous units", async () => {
  for (let attempt = 1; ; attempt++) {
    const minute = () => Math.floor(Date.now() / 60_000);
    const start = minute();
    const ip = `203.0.113.${attempt}`;
    const answers: Answer[] = [];
    for (let sent = 0; sent < 400; sent += 50) {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, () =>
            send("GET", "/v1/items?limit=1", { Authorization: "Bearer not.a.jwt", "CF-Connecting-IP": ip }),
          ),
        )),
      );
    }
    // A run that crossed the minute's boundary counted in two windows: run it again.
    if (minute() !== start && attempt < 3) continue;
    expect(count(answers)).toEqual({ 401: ANONYMOUS_QUOTA, 429: 400 - ANONYMOUS_QUOTA });
    const refused = answers.find((a) => a.status === 429)!;
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(refused.body.success).toBe(false);
    return;
  }
}, 60_000);

it("renews once when eight completions of one occurrence are sent at once", async () => {
  const token = await tokenOf("demo-owner");
  const auth = { Authorization: `Bearer ${token}` };
  for (let round = 0; round < 7; round++) {
    const created = await send("POST", "/v1/items", auth, {
      title: `burst ${round}`,
      expiry_date: "2027-01-05",
      recurrence: { every: 1, unit: "month", renew_on: "completed" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const path = `/v1/items/${created.body.data.item_id}`;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => send("PATCH", `${path}/status`, auth, { status: "completed" })),
    );
    expect(count(answers), `round ${round}`).toEqual({ 200: 1, 409: 7 });
    for (const a of answers.filter((a) => a.status === 409))
      expect(a.body.msg).toMatch(/2027-01-05 is done: the item was renewed on completion to 2027-02-05/);
    const detail = (await send("GET", path, auth)).body.data;
    expect(detail.expiry_date).toBe("2027-02-05");
    expect(detail.renewals).toHaveLength(1);
  }
}, 60_000);

it("answers one of ten PATCHes holding one ETag with 200 and every other with 412 carrying the current ETag", async () => {
  const token = await tokenOf("demo-member");
  const auth = { Authorization: `Bearer ${token}` };
  for (let round = 0; round < 8; round++) {
    const created = await send("POST", "/v1/items", auth, { title: `etag ${round}`, expiry_date: "2031-06-01" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const path = `/v1/items/${created.body.data.item_id}`;
    const etag = (await send("GET", path, auth)).headers.get("ETag")!;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        send("PATCH", path, { ...auth, "If-Match": etag }, { notes: `writer ${i}` }),
      ),
    );
    expect(count(answers), `round ${round}`).toEqual({ 200: 1, 412: 9 });
    const current = (await send("GET", path, auth)).headers.get("ETag");
    for (const a of answers.filter((a) => a.status === 412))
      expect(a.headers.get("ETag"), `round ${round}: ${a.body.msg}`).toBe(current);
  }
}, 60_000);
