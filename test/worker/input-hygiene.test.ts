// Bad input the service refuses cheaply: body and URL limits, charset and strict UTF-8, text
// hygiene of the shared zod builders, bounded echo of input in error messages.
import { exports } from "cloudflare:workers";
import { Hono } from "hono";
import { beforeAll, describe, expect, it } from "vitest";
import type { AppBindings } from "../../src/env";
import {
  DEFAULT_BODY_LIMIT,
  MAX_JSON_DEPTH,
  MAX_URL_LENGTH,
  bodyRuleFor,
  parseContentType,
  requestGuard,
} from "../../src/lib/body";
import { MAX_ECHO_CHARS } from "../../src/lib/echo";
import { MAX_MESSAGE_CHARS, apiError, oauthError, renderError } from "../../src/lib/errors";
import {
  BASE,
  call,
  expectShapeA,
  expectShapeB,
  readResult,
  tokenFor,
  uniqueEmail,
  type Answer,
  type ApiError,
  type CallResult,
  type Operation,
  expectStatus,
  callRaw,
  ok,
  openApiDocument,
} from "./helpers";

const TOKEN_LIMIT = 8 * 1024;
const JSON_TYPE = { "Content-Type": "application/json" };
const encoder = new TextEncoder();

/** Sends a body of any kind (bytes, stream) with exactly the given headers. */
async function send(
  method: string,
  path: string,
  body: BodyInit | null,
  headers?: Record<string, string>,
): Promise<CallResult>;
async function send<O extends Operation>(
  method: string,
  path: string,
  body: BodyInit | null,
  headers: Record<string, string>,
  operation: O,
): Promise<Answer<O>>;
async function send(
  method: string,
  path: string,
  body: BodyInit | null,
  headers: Record<string, string> = {},
  operation?: Operation,
): Promise<CallResult> {
  const response = await exports.default.fetch(new Request(`${BASE}${path}`, { method, headers, body }));
  return operation ? readResult(response, operation) : readResult(response);
}

/** A stream of `chunk`-byte chunks, `total` bytes in all, that records how much was pulled from it. */
function countingStream(total: number, chunk = 1024, byte = 0x5b /* "[" */) {
  const state = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled >= total) return controller.close();
      const size = Math.min(chunk, total - state.pulled);
      state.pulled += size;
      controller.enqueue(new Uint8Array(size).fill(byte));
    },
  });
  return { stream, state };
}

const validContact = (extra: Record<string, unknown> = {}) => ({
  first_name: "Ada",
  last_name: "Lovelace",
  email: uniqueEmail(),
  ...extra,
});

async function postContact(rawBody: string, headers: Record<string, string> = JSON_TYPE) {
  return call("createContact", "/v1/contacts", { token: await tokenFor("demo-owner"), rawBody, headers });
}

/** A contact body as JSON text with `first_name` given as raw JSON (escapes kept as written). */
const withRawFirstName = (jsonString: string) =>
  `{"first_name":${jsonString},"last_name":"L","email":"${uniqueEmail()}"}`;

describe("body size limits", () => {
  beforeAll(() => {
    // A label for the runtime's own log lines, which the test runner prints and cannot filter.
    console.info(
      "[expected] workerd logs 'disconnected: read end of pipe was aborted' for each oversized streamed body below: the guard stops reading it.",
    );
  });

  it("refuses a declared Content-Length over the limit with 413 without reading the body", async () => {
    const { stream, state } = countingStream(1024 * 1024);
    const res = await send("POST", "/v1/contacts", stream, {
      ...JSON_TYPE,
      Authorization: `Bearer ${await tokenFor("demo-owner")}`,
      "Content-Length": String(1024 * 1024),
    });
    expectShapeB(res, 413, /64 KiB/);
    // The transport may buffer a chunk or two; the service reads nothing.
    expect(state.pulled).toBeLessThanOrEqual(8 * 1024);
  });

  it("refuses an undeclared (chunked) length with 413 once it passes the limit, reading little more", async () => {
    const { stream, state } = countingStream(1024 * 1024);
    const res = await send("POST", "/v1/contacts", stream, {
      ...JSON_TYPE,
      Authorization: `Bearer ${await tokenFor("demo-owner")}`,
    });
    expectShapeB(res, 413, /64 KiB \(65536 bytes\)/);
    expect(state.pulled).toBeGreaterThan(DEFAULT_BODY_LIMIT);
    expect(state.pulled).toBeLessThanOrEqual(DEFAULT_BODY_LIMIT + 16 * 1024);
  });

  it("refuses an oversized body before authentication and routing", async () => {
    const big = "x".repeat(DEFAULT_BODY_LIMIT + 1);
    expectShapeB(await call("createContact", "/v1/contacts", { rawBody: big, headers: JSON_TYPE }), 413);
    expectShapeB(await callRaw("POST", "/v1/nothing-here", { rawBody: big, headers: JSON_TYPE }), 413);
  });

  it("accepts a body of exactly the limit (it reaches validation)", async () => {
    const padded = JSON.stringify(validContact({ pad: "" }));
    const body = padded.replace('"pad":""', `"pad":"${"x".repeat(DEFAULT_BODY_LIMIT - padded.length)}"`);
    expect(encoder.encode(body).byteLength).toBe(DEFAULT_BODY_LIMIT);
    expectShapeB(await postContact(body), 400, /Unknown field: pad/);
  });

  it("answers the token endpoint's 413 in Shape A (8 KiB limit)", async () => {
    const body = JSON.stringify({
      grant_type: "client_credentials",
      client_id: "demo-owner",
      client_secret: "x".repeat(TOKEN_LIMIT),
    });
    const res = await call("issueToken", "/v1/oauth/token", { rawBody: body, headers: JSON_TYPE });
    expectShapeA(res, 413, "invalid_request");
    expect(res.body.error_description).toMatch(/8 KiB/);
    const form = await call("issueToken", "/v1/oauth/token", {
      rawBody: `grant_type=client_credentials&client_secret=${"x".repeat(TOKEN_LIMIT)}`,
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expectShapeA(form, 413, "invalid_request");
  });

  it("refuses a huge nested body to the token endpoint after reading about 8 KiB, and /health keeps answering", async () => {
    const { stream, state } = countingStream(100 * 1024 * 1024);
    const [res, health] = await Promise.all([
      send("POST", "/v1/oauth/token", stream, JSON_TYPE),
      call("getHealth", "/health"),
    ]);
    expectShapeA(res, 413, "invalid_request");
    expect(state.pulled).toBeLessThanOrEqual(TOKEN_LIMIT + 16 * 1024);
    expectStatus(health, 200);
    expectStatus(await call("getHealth", "/health"), 200);
  });

  it("still issues tokens from JSON and form bodies within the limit", async () => {
    const json = await call("issueToken", "/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: "demo-owner", client_secret: "demo-owner-secret" },
    });
    expectStatus(json, 200, JSON.stringify(json.body));
    const form = await call("issueToken", "/v1/oauth/token", {
      rawBody: "grant_type=client_credentials&client_id=demo-owner&client_secret=demo-owner-secret",
      headers: { "Content-Type": "application/x-www-form-urlencoded; charset=UTF-8" },
    });
    expectStatus(form, 200, JSON.stringify(form.body));
  });
});

describe("JSON nesting", () => {
  it(`answers 400 for nesting deeper than ${MAX_JSON_DEPTH} levels within the size limit`, async () => {
    const deep = "[".repeat(30_000) + "]".repeat(30_000);
    expectShapeB(await postContact(deep), 400, /nests deeper than/);
    expectShapeB(await postContact("[".repeat(60_000)), 400);
    expectShapeB(
      await postContact(withRawFirstName(`${"[".repeat(1000)}${"]".repeat(1000)}`)),
      400,
      /nests deeper than/,
    );
    expectShapeB(await postContact(`{"a":${'{"a":'.repeat(10_000)}1${"}".repeat(10_001)}`), 400, /nests deeper than/);
    const token = await call("issueToken", "/v1/oauth/token", {
      rawBody: "[".repeat(4000) + "]".repeat(4000),
      headers: JSON_TYPE,
    });
    expectShapeA(token, 400, "invalid_request");
  });

  it("does not count brackets inside strings", async () => {
    const res = await postContact(JSON.stringify(validContact({ first_name: "[".repeat(90) })));
    expectStatus(res, 201, JSON.stringify(res.body));
  });
});

describe("character encoding of bodies", () => {
  it("refuses a charset other than UTF-8 with 415 naming it", async () => {
    const latin1 = new Uint8Array([
      ...encoder.encode(`{"first_name":"Jos`),
      0xe9,
      ...encoder.encode(`","last_name":"L","email":"${uniqueEmail()}"}`),
    ]);
    const token = await tokenFor("demo-owner");
    for (const type of [
      "application/json; charset=latin1",
      'application/json; charset="ISO-8859-1"',
      "application/json;charset=utf-16",
      "application/json; charset=utf-8; charset=latin1",
    ]) {
      const res = await send("POST", "/v1/contacts", latin1, {
        "Content-Type": type,
        Authorization: `Bearer ${token}`,
      });
      expectShapeB(res, 415, /charset/i);
    }
    const named = await send("POST", "/v1/contacts", latin1, {
      "Content-Type": "application/json; charset=latin1",
      Authorization: `Bearer ${token}`,
    });
    expectShapeB(named, 415);
    expect(named.body.msg).toContain("latin1");
    const form = await call("issueToken", "/v1/oauth/token", {
      rawBody: "grant_type=client_credentials",
      headers: { "Content-Type": "application/x-www-form-urlencoded; charset=iso-8859-1" },
    });
    expectShapeA(form, 415, "invalid_request");
  });

  it("accepts charset=utf-8 in any case and quoted", async () => {
    for (const type of [
      "application/json; charset=UTF-8",
      'application/json; charset="utf-8"',
      "application/json;charset=utf8",
    ]) {
      const res = await postContact(JSON.stringify(validContact()), { "Content-Type": type });
      expectStatus(res, 201, `${type}: ${JSON.stringify(res.body)}`);
    }
  });

  it("refuses bytes that are not valid UTF-8 with 400", async () => {
    const token = await tokenFor("demo-owner");
    for (const bad of [
      [0xe9],
      [0xff, 0xfe],
      [0xed, 0xa0, 0x80] /* encoded surrogate */,
      [0xc0, 0xaf] /* overlong */,
      [0xe2, 0x82] /* truncated */,
    ]) {
      const bytes = new Uint8Array([
        ...encoder.encode(`{"first_name":"Jos`),
        ...bad,
        ...encoder.encode(`","last_name":"L","email":"${uniqueEmail()}"}`),
      ]);
      const res = await send("POST", "/v1/contacts", bytes, { ...JSON_TYPE, Authorization: `Bearer ${token}` });
      expectShapeB(res, 400, /not valid UTF-8/);
    }
    const untyped = await send("POST", "/v1/oauth/token", new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]));
    expectShapeA(untyped, 400, "invalid_request");
    expect(untyped.body.error_description).toMatch(/not valid UTF-8/);
  });
});

describe("text fields", () => {
  const bad: Array<[string, RegExp]> = [
    ['"\\ud800"', /first_name must be well-formed Unicode/],
    ['"Ada\\udc00x"', /first_name must be well-formed Unicode/],
    ['"A\\u0000B"', /first_name must not contain control characters/],
    ['"Ada\\u0007"', /first_name must not contain control characters/],
    ['"Ada\\u007f"', /first_name must not contain control characters/],
    ['"Ada\\u0085"', /first_name must not contain control characters/],
    ['"Ada\\tLovelace"', /first_name must not contain control characters/],
    ['"Ada\\nLovelace"', /first_name must not contain control characters/],
    ['"\\u200b"', /first_name must not be empty/],
    ['"\\u200b\\u200c\\u200d\\u2060"', /first_name must not be empty/],
    ['"\\ufeff\\u200b\\ufeff"', /first_name must not be empty/],
    ['" \\ufeff\\u00a0\\u2060\\u3000 "', /first_name must not be empty/],
    ['"\\u3164"', /first_name must not be empty/],
    ['"\\u00ad\\u034f"', /first_name must not be empty/],
  ];
  for (const [raw, msg] of bad) {
    it(`refuses first_name ${raw} with 400 naming the field`, async () => {
      expectShapeB(await postContact(withRawFirstName(raw)), 400, msg);
    });
  }

  it("applies the same rules to other fields, updates, groups and the search query", async () => {
    const token = await tokenFor("demo-owner");
    expectShapeB(
      await postContact(JSON.stringify(validContact({ last_name: "\u200b" }))),
      400,
      /last_name must not be empty/,
    );
    expectShapeB(
      await postContact(JSON.stringify(validContact({ phone_number: "123\u0000" }))),
      400,
      /phone_number must not contain control characters/,
    );
    expectShapeB(
      await postContact(JSON.stringify(validContact({ email: "ada\u0000@example.com" }))),
      400,
      /email must not contain control characters/,
    );
    expectShapeB(
      await postContact(`{"first_name":"A","last_name":"L","email":"a\\ud800@example.com"}`),
      400,
      /email must be well-formed/,
    );
    const created = await call("createContact", "/v1/contacts", { token, body: validContact() });
    expectStatus(created, 201);
    const id = created.body.data.contact_id;
    expectShapeB(
      await call("updateContact", `/v1/contacts/${id}`, {
        token,
        rawBody: '{"first_name":"\\ud83d"}',
        headers: JSON_TYPE,
      }),
      400,
      /first_name/,
    );
    expectShapeB(
      await call("createContactGroup", "/v1/contact-groups", { token, body: { group_name: "\u200b\u200b" } }),
      400,
      /group_name must not be empty/,
    );
    expectShapeB(
      await call("createContactGroup", "/v1/contact-groups", { token, body: { group_name: "G\u0001" } }),
      400,
      /group_name must not contain control characters/,
    );
    expectShapeB(
      await call("listContacts", "/v1/contacts?q=a%00b", { token }),
      400,
      /q must not contain control characters/,
    );
    expectShapeB(
      await call("listContactGroups", "/v1/contact-groups?q=%0A", { token }),
      400,
      /q must not contain control characters/,
    );
  });

  it("stores and returns valid non-ASCII text intact, normalised to NFC", async () => {
    const token = await tokenFor("demo-owner");
    const cases: Array<[string, string]> = [
      ["José", "José"],
      ["Ä", "Ä"],
      ["A\u0308", "Ä"],
      ["Jose\u0301", "José"],
      ["😀 Smile", "😀 Smile"],
      ["👩‍💻", "👩‍💻"],
      ["محمد", "محمد"],
      ["\u1100\u1161", "\uac00"],
      ["Zoë\u200d", "Zoë\u200d"],
    ];
    for (const [sent, stored] of cases) {
      const created = await call("createContact", "/v1/contacts", {
        token,
        body: validContact({ first_name: sent, last_name: ` ${sent} ` }),
      });
      expectStatus(created, 201, JSON.stringify(created.body));
      expect(created.body.data.firstname).toBe(stored);
      expect(created.body.data.lastname).toBe(stored);
      const read = ok(await call("getContact", `/v1/contacts/${created.body.data.contact_id}`, { token }));
      expect(read.body.data.firstname).toBe(stored);
      expect(read.body.data.lastname).toBe(stored);
    }
    const group = await call("createContactGroup", "/v1/contact-groups", {
      token,
      body: { group_name: `Gr\u00fcn-${uniqueEmail().slice(0, 8)}`.normalize("NFD") },
    });
    expectStatus(group, 201, JSON.stringify(group.body));
    expect(group.body.data.group_name).toBe(group.body.data.group_name.normalize("NFC"));
    expect(group.body.data.group_name.startsWith("Grün-")).toBe(true);
  });

  it("accepts raw UTF-8 bytes of non-ASCII text", async () => {
    const body = encoder.encode(JSON.stringify(validContact({ first_name: "Åsa 😀" })));
    const res = await send(
      "POST",
      "/v1/contacts",
      body,
      { ...JSON_TYPE, Authorization: `Bearer ${await tokenFor("demo-owner")}` },
      "createContact",
    );
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.data.firstname).toBe("Åsa 😀");
  });
});

describe("bounded echo of input in messages", () => {
  const bounded = (res: CallResult) => expect((res.body as ApiError).msg.length).toBeLessThan(MAX_ECHO_CHARS * 2 + 100);

  it("bounds the path in 404 and 405 messages", async () => {
    const long = `/v1/${"a".repeat(5000)}`;
    const notFound = await callRaw("GET", long);
    expectShapeB(notFound, 404, /5004 characters/);
    bounded(notFound);
    const notAllowed = await callRaw("PUT", `/v1/contacts/${"9".repeat(5000)}`);
    expectShapeB(notAllowed, 405);
    bounded(notAllowed);
  });

  it("bounds unknown field names and how many are listed", async () => {
    const huge = await postContact(JSON.stringify(validContact({ ["k".repeat(10_000)]: 1 })));
    expectShapeB(huge, 400, /Unknown field: k+… \(10000 characters\)/);
    bounded(huge);
    const many = await postContact(
      JSON.stringify(validContact(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`extra_${i}`, i])))),
    );
    expectShapeB(many, 400, /Unknown fields: extra_0, .* and 95 more$/);
    bounded(many);
  });
});

describe("the message backstop (unit)", () => {
  const app = new Hono<AppBindings>();
  app.get("/b", () => {
    throw apiError(400, `x${"y".repeat(50_000)}`);
  });
  app.get("/a", () => {
    throw oauthError(400, "invalid_request", "z".repeat(50_000));
  });
  app.onError(renderError);

  it(`cuts any error message to ${MAX_MESSAGE_CHARS} characters`, async () => {
    const b = await readResult(await app.request("/b"));
    expectShapeB(b, 400, /… \(50001 characters\)$/);
    expect(b.body.msg.length).toBeLessThan(MAX_MESSAGE_CHARS + 40);
    const a = await readResult(await app.request("/a"));
    expectShapeA(a, 400, "invalid_request");
    expect(a.body.error_description.length).toBeLessThan(MAX_MESSAGE_CHARS + 40);
  });
});

describe("URL and query string", () => {
  it(`refuses a URL longer than ${MAX_URL_LENGTH} characters with 414`, async () => {
    const token = await tokenFor("demo-owner");
    expectShapeB(await call("listContacts", `/v1/contacts?q=${"a".repeat(MAX_URL_LENGTH)}`, { token }), 414, /8192/);
    expectShapeB(await callRaw("GET", `/v1/${"a".repeat(64 * 1024)}`), 414);
    expectShapeA(
      await call("issueToken", `/v1/oauth/token?${"a".repeat(MAX_URL_LENGTH)}`, { rawBody: "{}", headers: JSON_TYPE }),
      414,
      "invalid_request",
    );
  });

  it("answers 400 naming a query parameter given twice", async () => {
    const token = await tokenFor("demo-owner");
    for (const query of [
      "limit=1&limit=2",
      "offset=0&offset=1",
      "q=a&q=b",
      "groupid=1&groupid=2",
      "deptid=1&deptid=1",
    ]) {
      const name = query.split("=")[0]!;
      expectShapeB(
        await call("listContacts", `/v1/contacts?${query}`, { token }),
        400,
        new RegExp(`^${name} must be given only once$`),
      );
    }
    expectShapeB(
      await call("listContactGroups", "/v1/contact-groups?limit=1&limit=2", { token }),
      400,
      /limit must be given only once/,
    );
  });

  it("answers 400 for absurdly long query values within the URL limit", async () => {
    const token = await tokenFor("demo-owner");
    expectShapeB(await call("listContacts", `/v1/contacts?limit=${"1".repeat(5000)}`, { token }), 400, /^limit/);
    expectShapeB(await call("listContacts", `/v1/contacts?offset=${"9".repeat(5000)}`, { token }), 400, /^offset/);
    expectShapeB(
      await call("listContacts", `/v1/contacts?q=${"é".repeat(1000)}`, { token }),
      400,
      /^q must be at most 200/,
    );
  });

  it("answers 400 for percent-escapes that are not UTF-8", async () => {
    const token = await tokenFor("demo-owner");
    expectShapeB(
      await call("listContacts", "/v1/contacts?q=%ED%A0%80", { token }),
      400,
      /query string is not valid UTF-8/,
    );
    expectShapeB(
      await call("listContacts", "/v1/contacts?q=Jos%E9", { token }),
      400,
      /query string is not valid UTF-8/,
    );
    const ok = await call("listContacts", `/v1/contacts?q=${encodeURIComponent("José")}&limit=5`, { token });
    expectStatus(ok, 200, JSON.stringify(ok.body));
    expectStatus(await call("listContacts", "/v1/contacts?q=50%", { token }), 200);
  });
});

describe("the request guard (unit)", () => {
  it("parses Content-Type parameters", () => {
    expect(parseContentType('Application/JSON; Charset="UTF-8"; a=b')).toEqual({
      mediaType: "application/json",
      params: [
        ["charset", "UTF-8"],
        ["a", "b"],
      ],
    });
    expect(parseContentType("text/plain;;charset=latin1").params).toEqual([["charset", "latin1"]]);
    expect(parseContentType("application/json").params).toEqual([]);
  });

  it("publishes the limits it enforces in the OpenAPI description", async () => {
    const description: string = (await openApiDocument()).info.description;
    expect(description).toContain(`${DEFAULT_BODY_LIMIT} bytes`);
    expect(description).toContain(`${bodyRuleFor("POST", "/v1/oauth/token").limit} bytes`);
    expect(description).toContain(`${MAX_URL_LENGTH} characters`);
    expect(description).toMatch(new RegExp(`deeper\\s+than ${MAX_JSON_DEPTH} levels`));
  });

  it("finds the rule of a route, with defaults", () => {
    expect(bodyRuleFor("post", "/v1/oauth/token")).toMatchObject({ limit: 8 * 1024, shape: "oauth", mode: "buffer" });
    expect(bodyRuleFor("PATCH", "/v1/contacts/1")).toMatchObject({
      limit: DEFAULT_BODY_LIMIT,
      shape: "api",
      mode: "buffer",
    });
    const rules = [{ method: "PUT", path: "/v1/items/:id/raw", limit: 10 }];
    expect(bodyRuleFor("PUT", "/v1/items/7/raw", rules).limit).toBe(10);
    expect(bodyRuleFor("PUT", "/v1/items//raw", rules).limit).toBe(DEFAULT_BODY_LIMIT);
    expect(bodyRuleFor("POST", "/v1/items/7/raw", rules).limit).toBe(DEFAULT_BODY_LIMIT);
  });

  // A route with its own streamed limit, as the upload route will have.
  const app = new Hono<AppBindings>();
  app.use("*", requestGuard([{ method: "PUT", path: "/upload", limit: 100 * 1024, mode: "stream" }]));
  app.put("/upload", async (c) => {
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    return c.json({ size: bytes.byteLength, type: c.req.header("Content-Type") ?? null });
  });
  app.post("/echo", async (c) =>
    c.json({ size: (await c.req.raw.arrayBuffer()).byteLength, text: await c.req.text() }),
  );
  app.onError(renderError);

  it("leaves a streamed route's raw bytes to it, counted against its own limit", async () => {
    const ok = await readResult(
      await app.request("/upload", {
        method: "PUT",
        body: countingStream(90 * 1024, 4096, 0xff).stream,
        headers: { "Content-Type": "application/octet-stream" },
      }),
    );
    expectStatus(ok, 200, JSON.stringify(ok.body));
    expect(ok.body).toEqual({ size: 90 * 1024, type: "application/octet-stream" });

    const { stream, state } = countingStream(10 * 1024 * 1024, 4096, 0xff);
    const over = await readResult(
      await app.request("/upload", {
        method: "PUT",
        body: stream,
        headers: { "Content-Type": "application/octet-stream" },
      }),
    );
    expectShapeB(over, 413, /100 KiB/);
    expect(state.pulled).toBeLessThanOrEqual(100 * 1024 + 16 * 1024);

    const declared = await readResult(
      await app.request("/upload", {
        method: "PUT",
        body: new Uint8Array(16),
        headers: { "Content-Length": String(200 * 1024), "Content-Type": "application/octet-stream" },
      }),
    );
    expectShapeB(declared, 413);
  });

  it("keeps a buffered body readable through c.req and c.req.raw", async () => {
    const res = await readResult(await app.request("/echo", { method: "POST", body: '{"a":"é"}', headers: JSON_TYPE }));
    expect(res.body).toEqual({ size: 10, text: '{"a":"é"}' });
  });
});
