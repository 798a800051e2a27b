// `bash scripts/dev.sh smoke-check <url>`: does a deployment answer? /health, the links of GET /
// and the discovery metadata on the same origin, a token for an API client, then one item written,
// read back (with its X-D1-Bookmark, as read replication needs) and deleted. The client's id comes
// from --client-id or SMOKE_CLIENT_ID, its secret from SMOKE_CLIENT_SECRET only (never an
// argument: the process list and shell history would show it); the client needs items:write.
// Stops at the first step that fails. Exit 0: every step passed; 1: a step failed, named; 2: usage.
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

const USAGE =
  "usage: SMOKE_CLIENT_SECRET=cs_... bash scripts/dev.sh smoke-check " +
  "<https://your-worker.example> --client-id ck_...";

let base: string;
let clientId: string;
let clientSecret: string;
try {
  const { values, positionals } = parseArgs({ options: { "client-id": { type: "string" } }, allowPositionals: true });
  if (positionals.length !== 1) throw new Error("give the deployment's URL, once");
  const url = new URL(positionals[0]!);
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error(`${positionals[0]} is not an http(s) URL`);
  base = url.origin;
  clientId = values["client-id"] ?? process.env.SMOKE_CLIENT_ID ?? "";
  clientSecret = process.env.SMOKE_CLIENT_SECRET ?? "";
  if (!clientId) throw new Error("no client id: --client-id or SMOKE_CLIENT_ID");
  if (!clientSecret) throw new Error("no client secret: set SMOKE_CLIENT_SECRET");
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function request(
  method: string,
  path: string,
  init: { headers?: Record<string, string>; json?: unknown } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { Accept: "application/json", ...init.headers };
  if (init.json !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
    redirect: "manual",
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the message
  }
  return { status: res.status, headers: res.headers, body };
}

class StepFailed extends Error {}

/** Fails the step unless `ok`, showing the answer. */
function expectThat(ok: boolean, why: string, answer?: Answer): asserts ok {
  if (!ok)
    throw new StepFailed(answer ? `${why}; got ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}` : why);
}

let step = 0;
// biome-ignore lint/suspicious/noConfusingVoidType: a check answers a note, or nothing
async function check(name: string, run: () => Promise<string | void>): Promise<void> {
  step++;
  const started = performance.now();
  try {
    const detail = await run();
    console.log(`ok ${step}  ${name}${detail ? `: ${detail}` : ""} (${Math.round(performance.now() - started)} ms)`);
  } catch (error) {
    const why =
      error instanceof StepFailed
        ? error.message
        : `${(error as Error).message}${(error as Error).cause ? ` (${String((error as Error).cause)})` : ""}`;
    console.log(`FAILED ${step}  ${name}: ${why}`);
    console.log(`Smoke check of ${base} FAILED at step ${step}.`);
    process.exit(1);
  }
}

console.log(`Smoke check of ${base}`);
await check("GET /health", async () => {
  const res = await request("GET", "/health");
  expectThat(res.status === 200 && res.body?.status === "ok", 'expected 200 {status: "ok"}', res);
});
await check("GET / (links on this origin)", async () => {
  const res = await request("GET", "/");
  expectThat(
    res.status === 200 && typeof res.body?.token_endpoint === "string",
    "expected 200 with the service's links",
    res,
  );
  expectThat(
    new URL(res.body.token_endpoint).origin === base,
    `token_endpoint ${res.body.token_endpoint} is not on ${base} (a proxy rewriting Host?)`,
  );
});
await check("GET /.well-known/oauth-authorization-server", async () => {
  const res = await request("GET", "/.well-known/oauth-authorization-server");
  expectThat(res.status === 200 && res.body?.issuer === base, `expected issuer ${base}`, res);
});
let token = "";
await check(`POST /v1/oauth/token (client ${clientId})`, async () => {
  const res = await request("POST", "/v1/oauth/token", {
    json: { grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret },
  });
  expectThat(
    res.status === 200 && typeof res.body?.access_token === "string",
    "expected 200 with an access_token",
    res,
  );
  token = res.body.access_token;
  return `scope "${res.body.scope}", expires in ${res.body.expires_in} s`;
});
const auth = () => ({ Authorization: `Bearer ${token}` });
const expiry = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
const title = `Smoke check ${new Date().toISOString()}`;
let itemId = 0;
let bookmark = "";
await check("POST /v1/items (one item)", async () => {
  const res = await request("POST", "/v1/items", {
    headers: { ...auth(), "Idempotency-Key": randomUUID() },
    json: { title, expiry_date: expiry },
  });
  expectThat(
    res.status === 201 && Number.isInteger(res.body?.data?.item_id),
    "expected 201 with data.item_id (the client needs items:write)",
    res,
  );
  itemId = res.body.data.item_id;
  bookmark = res.headers.get("X-D1-Bookmark") ?? "";
  return `item ${itemId}`;
});
await check(`GET /v1/items/${itemId} (read back, X-D1-Bookmark)`, async () => {
  const res = await request("GET", `/v1/items/${itemId}`, {
    headers: { ...auth(), ...(bookmark ? { "X-D1-Bookmark": bookmark } : {}) },
  });
  expectThat(res.status === 200 && res.body?.data?.title === title, `expected 200 with the title "${title}"`, res);
  bookmark = res.headers.get("X-D1-Bookmark") ?? bookmark;
});
await check(`DELETE /v1/items/${itemId}`, async () => {
  const res = await request("DELETE", `/v1/items/${itemId}`, {
    headers: { ...auth(), ...(bookmark ? { "X-D1-Bookmark": bookmark } : {}) },
  });
  expectThat(res.status === 200, "expected 200", res);
  bookmark = res.headers.get("X-D1-Bookmark") ?? bookmark;
});
await check(`GET /v1/items/${itemId} (gone)`, async () => {
  const res = await request("GET", `/v1/items/${itemId}`, {
    headers: { ...auth(), ...(bookmark ? { "X-D1-Bookmark": bookmark } : {}) },
  });
  expectThat(res.status === 404, "expected 404", res);
});
console.log(`Smoke check of ${base} passed: ${step} steps.`);
