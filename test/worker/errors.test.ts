import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { AppBindings } from "../../src/env";
import { apiError, oauthError, renderError } from "../../src/lib/errors";
import { requestContext } from "../../src/lib/request-context";
import { describeIssue, validationHook } from "../../src/lib/validation";
import {
  call,
  captureErrorLogs,
  expectNoStackTrace,
  expectShapeB,
  tokenFor,
  type ApiError,
  type CallResult,
  expectStatus,
  callRaw,
} from "./helpers";

const JSON_TYPE = { "Content-Type": "application/json" };
const VALID_CONTACT = { first_name: "Err", last_name: "Case", email: "err-case@example.com" };

/** Shape B, never a 500, never a stack trace. */
function expectClientError<R extends CallResult>(
  res: R,
  status: number,
  msg?: RegExp,
): asserts res is R & { body: ApiError } {
  expectShapeB(res, status, msg);
  expectNoStackTrace(res);
  expect(Object.keys(res.body).sort()).toEqual(["msg", "request_id", "success"]);
  expect(res.body.request_id).toBe(res.headers.get("X-Request-Id"));
}

const allowOf = (res: CallResult) =>
  (res.headers.get("Allow") ?? "")
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean)
    .sort();

describe("unknown routes: 404 Shape B", () => {
  for (const [method, path] of [
    ["GET", "/docs/"],
    ["GET", "/docs/no-such-asset.js"],
    ["GET", "/v1"],
    ["GET", "/v2/contacts"],
    ["GET", "/v1/nothing-here"],
    ["POST", "/v1/nothing-here"],
    ["GET", "/v1/contacts/1/nothing"],
    ["GET", "/v1/contact-groups/1/default/extra"],
    // Names no resource of the spec uses, so the list holds as resources are added.
    ["GET", "/v1/no-such-resource"],
    ["DELETE", "/v1/no-such-resource/1"],
  ] as const) {
    it(`${method} ${path}`, async () => {
      const res = await callRaw(method, path, { token: await tokenFor("demo-owner") });
      expectClientError(res, 404);
      expect(res.headers.get("Allow")).toBeNull();
    });
  }

  it("answers 404 without a token too (routing comes before authentication)", async () => {
    expectClientError(await callRaw("GET", "/v1/nothing-here"), 404, /nothing-here/);
  });

  it("treats a trailing slash as another path (404, not a 405 that lists the method itself)", async () => {
    const token = await tokenFor("demo-owner");
    expectClientError(await callRaw("GET", "/v1/contacts/", { token }), 404);
    expectClientError(await callRaw("GET", "/v1/contacts/1/", { token }), 404);
  });

  it("matches literal path segments exactly (a dot is not a wildcard)", async () => {
    expectClientError(await callRaw("GET", "/v1/openapiXjson"), 404);
    expectClientError(await callRaw("POST", "/v1/openapiXjson"), 404);
  });
});

describe("wrong method on a known path: 405 Shape B with Allow", () => {
  for (const [method, path, allowed] of [
    ["PUT", "/v1/contacts", ["GET", "HEAD", "POST"]],
    ["DELETE", "/v1/contacts", ["GET", "HEAD", "POST"]],
    ["PATCH", "/v1/contacts", ["GET", "HEAD", "POST"]],
    ["POST", "/v1/contacts/1", ["DELETE", "GET", "HEAD", "PATCH"]],
    ["PUT", "/v1/contacts/abc", ["DELETE", "GET", "HEAD", "PATCH"]],
    ["DELETE", "/v1/contact-groups", ["GET", "HEAD", "POST"]],
    ["PUT", "/v1/contact-groups/7", ["DELETE", "GET", "HEAD", "PATCH"]],
    ["GET", "/v1/contact-groups/7/default", ["PATCH"]],
    ["GET", "/v1/oauth/token", ["POST"]],
    ["DELETE", "/v1/oauth/me", ["GET", "HEAD"]],
    ["POST", "/v1/openapi.json", ["GET", "HEAD"]],
    ["POST", "/health", ["GET", "HEAD"]],
    ["POST", "/", ["GET", "HEAD"]],
  ] as const) {
    it(`${method} ${path} -> Allow: ${allowed.join(", ")}`, async () => {
      const res = await callRaw(method, path, { token: await tokenFor("demo-owner") });
      expectClientError(res, 405, new RegExp(method));
      expect(allowOf(res)).toEqual([...allowed]);
      expect(allowed).not.toContain(method);
    });
  }

  it("answers 405 before authentication", async () => {
    const res = await callRaw("PUT", "/v1/contacts");
    expectClientError(res, 405);
    expect(allowOf(res)).toEqual(["GET", "HEAD", "POST"]);
  });

  it("serves HEAD wherever GET works", async () => {
    const token = await tokenFor("demo-owner");
    const head = await callRaw("HEAD", "/v1/contacts", { token });
    expectStatus(head, 200);
    expect(head.body).toEqual({});
    expectStatus(await callRaw("HEAD", "/health"), 200);
  });
});

describe("request bodies", () => {
  const post = async (rawBody: string | undefined, headers: Record<string, string> = JSON_TYPE) =>
    call("createContact", "/v1/contacts", { token: await tokenFor("demo-owner"), rawBody, headers });

  it("accepts a valid body (control for the cases below)", async () => {
    const res = await call("createContact", "/v1/contacts", {
      token: await tokenFor("demo-owner"),
      body: VALID_CONTACT,
    });
    expectStatus(res, 201, JSON.stringify(res.body));
  });

  it("answers 400 Shape B naming the problem for malformed JSON", async () => {
    for (const raw of ['{"first_name": "Ada",', "{first_name: 'Ada'}", "{", "nul", ""]) {
      expectClientError(await post(raw), 400, /malformed json/i);
    }
  });

  it("answers 400 Shape B for a JSON body that is not an object", async () => {
    for (const raw of ["[]", `[${JSON.stringify(VALID_CONTACT)}]`, '"a string"', "null", "42", "true"]) {
      expectClientError(await post(raw), 400, /JSON object/);
    }
  });

  it("answers 400 for an array body on PATCH too", async () => {
    const res = await call("updateContact", "/v1/contacts/1", {
      token: await tokenFor("demo-owner"),
      rawBody: '["first_name"]',
      headers: JSON_TYPE,
    });
    expectClientError(res, 400, /JSON object/);
  });

  it("answers 415 Shape B for a non-JSON Content-Type", async () => {
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/xml",
      "application/jsonx",
    ]) {
      const res = await post(JSON.stringify(VALID_CONTACT), { "Content-Type": type });
      expectClientError(res, 415, /application\/json/);
    }
  });

  it("answers 415 for a body sent without any Content-Type", async () => {
    expectClientError(await post(JSON.stringify(VALID_CONTACT), {}), 415);
  });

  it("accepts application/json with a charset parameter", async () => {
    const res = await post(JSON.stringify({ ...VALID_CONTACT, email: "charset@example.com" }), {
      "Content-Type": "application/json; charset=utf-8",
    });
    expectStatus(res, 201, JSON.stringify(res.body));
  });

  it("answers 415 on the group routes too", async () => {
    const res = await call("createContactGroup", "/v1/contact-groups", {
      token: await tokenFor("demo-owner"),
      rawBody: "group_name=x",
      headers: { "Content-Type": "text/plain" },
    });
    expectClientError(res, 415);
  });

  it("answers 400 naming the field for a wrong type", async () => {
    expectClientError(
      await post(JSON.stringify({ ...VALID_CONTACT, first_name: 5 })),
      400,
      /first_name must be a string/,
    );
    expectClientError(await post(JSON.stringify({ ...VALID_CONTACT, first_name: null })), 400, /first_name/);
    expectClientError(await post(JSON.stringify({ ...VALID_CONTACT, deptid: "1" })), 400, /deptid must be a number/);
    expectClientError(await post(JSON.stringify({ ...VALID_CONTACT, deptid: 1.5 })), 400, /deptid must be an integer/);
    expectClientError(await post(JSON.stringify({ ...VALID_CONTACT, email: ["a@example.com"] })), 400, /^email /);
  });

  it("answers 400 naming every missing field", async () => {
    const res = await post("{}");
    expectClientError(res, 400);
    for (const field of ["first_name", "last_name", "email"]) expect(res.body.msg).toContain(`${field} is required`);
  });

  it("answers 400 naming an unknown body field", async () => {
    expectClientError(
      await post(JSON.stringify({ ...VALID_CONTACT, nickname: "Addy" })),
      400,
      /Unknown field: nickname/,
    );
    expectClientError(await post(JSON.stringify({ ...VALID_CONTACT, firstname: "Ada" })), 400, /firstname/);
    expectClientError(
      await post(JSON.stringify({ ...VALID_CONTACT, __proto__x: 1, constructor: 1 })),
      400,
      /constructor/,
    );
  });

  it("rejects a __proto__ key as an unknown field instead of merging it", async () => {
    const res = await post(`{"__proto__":{"admin":true},"first_name":"P","last_name":"Q","email":"proto@example.com"}`);
    expectClientError(res, 400, /__proto__/);
  });

  it("answers 400 naming an unknown field on the group routes", async () => {
    const res = await call("createContactGroup", "/v1/contact-groups", {
      token: await tokenFor("demo-owner"),
      body: { group_name: "G", colour: "red" },
    });
    expectClientError(res, 400, /Unknown field: colour/);
  });
});

describe("path ids", () => {
  const bad = [
    "abc",
    "0",
    "-1",
    "1.5",
    "99999999999999999999",
    "9007199254740992",
    "%20",
    "1a",
    "0x10",
    "1e3",
    "+5",
    "%205",
    "007",
  ];
  for (const id of bad) {
    it(`answers 400 Shape B for /v1/contacts/${id} and /v1/contact-groups/${id}`, async () => {
      const token = await tokenFor("demo-owner");
      expectClientError(
        await call("getContact", `/v1/contacts/${id}`, { token }),
        400,
        /contact_id must be a positive integer/,
      );
      expectClientError(await call("deleteContact", `/v1/contacts/${id}`, { token }), 400, /contact_id/);
      expectClientError(
        await call("updateContact", `/v1/contacts/${id}`, { token, body: { first_name: "X" } }),
        400,
        /contact_id/,
      );
      expectClientError(
        await call("getContactGroup", `/v1/contact-groups/${id}`, { token }),
        400,
        /group_id must be a positive integer/,
      );
      expectClientError(
        await call("setDefaultContactGroup", `/v1/contact-groups/${id}/default`, { token }),
        400,
        /group_id/,
      );
    });
  }

  it("answers 404, not 400, for a well-formed id that does not exist (control)", async () => {
    const token = await tokenFor("demo-owner");
    expectClientError(await call("getContact", "/v1/contacts/9007199254740991", { token }), 404);
    expectClientError(await call("getContactGroup", "/v1/contact-groups/123456", { token }), 404);
  });
});

describe("query parameters", () => {
  it("answers 400 Shape B naming a bad query parameter", async () => {
    const token = await tokenFor("demo-owner");
    for (const query of ["limit=abc", "limit=0", "limit=201", "offset=-1", "groupid=x", "deptid=0"]) {
      const name = query.split("=")[0]!;
      expectClientError(await call("listContacts", `/v1/contacts?${query}`, { token }), 400, new RegExp(name));
    }
  });
});

describe("the central error handler (unit)", () => {
  const errorLogs = captureErrorLogs();

  const app = new Hono<AppBindings>();
  app.use("*", requestContext());
  app.get("/boom", () => {
    throw new Error("secret detail at /work/main/src/x.ts:1:1");
  });
  app.get("/type-error", (c) => c.json((undefined as unknown as { x: { y: number } }).x.y));
  app.get("/http-415", () => {
    throw new HTTPException(415, { message: "Unsupported Media Type" });
  });
  app.get("/http-400", () => {
    throw new HTTPException(400, { message: "Malformed JSON in request body" });
  });
  app.get("/shape-a", () => {
    throw oauthError(403, "insufficient_scope", "needs x", {
      requiredScope: "x",
      headers: { "WWW-Authenticate": "Bearer" },
    });
  });
  app.get("/shape-b", () => {
    throw apiError(409, "duplicate", { "X-Extra": "1" });
  });
  app.onError(renderError);

  async function get(path: string): Promise<CallResult> {
    const response = await app.request(path);
    return {
      status: response.status,
      body: (await response.json()) as Record<string, unknown>,
      headers: response.headers,
    };
  }

  it("turns an unexpected error into a bare 500 Shape B without a stack trace or the message", async () => {
    for (const path of ["/boom", "/type-error"]) {
      const res = await get(path);
      expectStatus(res, 500);
      expect(res.body).toEqual({
        success: false,
        msg: "Internal server error",
        request_id: res.headers.get("X-Request-Id"),
      });
      expectNoStackTrace(res);
    }
    // Logged for the operator (captured here rather than printed), with the path.
    expect(errorLogs).toHaveLength(2);
    expect(errorLogs[0]).toMatch(/"path":"\/boom"/);
  });

  it("keeps the status of Hono's HTTP exceptions and renders them as Shape B", async () => {
    expectClientError(await get("/http-415"), 415, /application\/json/);
    expectClientError(await get("/http-400"), 400, /Malformed JSON/);
  });

  it("renders ApiErrors in their own shape, with their headers", async () => {
    const a = await get("/shape-a");
    expectStatus(a, 403);
    expect(a.body).toEqual({
      error: "insufficient_scope",
      error_description: "needs x",
      required_scope: "x",
      request_id: a.headers.get("X-Request-Id"),
    });
    expect(a.headers.get("WWW-Authenticate")).toBe("Bearer");
    const b = await get("/shape-b");
    expectStatus(b, 409);
    expect(b.body).toEqual({ success: false, msg: "duplicate", request_id: b.headers.get("X-Request-Id") });
    expect(b.headers.get("X-Extra")).toBe("1");
  });
});

describe("validation messages (unit)", () => {
  const schema = z.strictObject({
    name: z.string(),
    count: z.number().int(),
    nested: z.strictObject({ flag: z.boolean() }).optional(),
    tagged: z.string().min(3, { error: "tagged must be at least 3 characters" }).optional(),
  });

  function messageFor(input: unknown): string {
    const result = schema.safeParse(input);
    if (result.success) throw new Error("expected a failure");
    try {
      validationHook({ success: false, error: result.error, data: input }, undefined as never);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error("validationHook did not throw");
  }

  it("names missing, mistyped and unknown fields, nested ones by their dotted path", () => {
    expect(messageFor({ count: 1 })).toBe("name is required");
    expect(messageFor({ name: 1, count: 1 })).toBe("name must be a string");
    expect(messageFor({ name: "a", count: 1.5 })).toMatch(/^count/);
    expect(messageFor({ name: "a", count: "1" })).toBe("count must be a number");
    expect(messageFor({ name: "a", count: 1, nested: { flag: "yes" } })).toBe("nested.flag must be a boolean");
    expect(messageFor({ name: "a", count: 1, nested: { flag: true, x: 1 } })).toBe("Unknown field: nested.x");
    expect(messageFor({ name: "a", count: 1, a: 1, b: 2 })).toBe("Unknown fields: a, b");
    expect(messageFor({ name: "a", count: 1, tagged: "x" })).toBe("tagged must be at least 3 characters");
    expect(messageFor([])).toBe("Request body must be a JSON object");
  });

  it("passes successes through", () => {
    expect(validationHook({ success: true }, undefined as never)).toBeUndefined();
  });

  it("describes a single issue without the zod default wording for known types", () => {
    const result = z.object({ when: z.array(z.string()) }).safeParse({ when: "now" });
    expect(result.success).toBe(false);
    if (!result.success) expect(describeIssue(result.error.issues[0]!, { when: "now" })).toBe("when must be an array");
  });
});
