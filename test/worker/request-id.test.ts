// Request ids and the one structured log line per request (src/lib/request-context.ts).
import { afterEach, describe, expect, it, vi } from "vitest";
import { call, callWithEnv, tokenFor, expectStatus, callRaw, type ErrorBody } from "./helpers";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("X-Request-Id", () => {
  it("is on every response, successes and both error shapes, and equals the error body's request_id", async () => {
    const token = await tokenFor("demo-owner");
    const cases = [
      await call("getHealth", "/health"),
      await call("listContacts", "/v1/contacts", { token }),
      await callRaw("GET", "/v1/nowhere"),
      await call("listContacts", "/v1/contacts"),
      await call("createContact", "/v1/contacts", { token, body: { first_name: "" } }),
      await call("issueToken", "/v1/oauth/token", { body: {} }),
      await call("createContact", "/v1/contacts", {
        token,
        rawBody: "x".repeat(70_000),
        headers: { "Content-Type": "application/json" },
      }),
    ];
    for (const res of cases) {
      const id = res.headers.get("X-Request-Id");
      expect(id, `${res.status}`).toMatch(UUID);
      if (res.status >= 400) expect((res.body as ErrorBody).request_id, `${res.status}`).toBe(id);
    }
    expect(new Set(cases.map((r) => r.headers.get("X-Request-Id"))).size).toBe(cases.length);
  });

  it("keeps the client's own id when it is sane, and replaces one that is not", async () => {
    for (const own of ["req_123", "5f2c7e3a-9b1d-4c8e-a6f0-2d4b8e1c9a77", "1-5f84c7a9-1b2c3d4e", "a".repeat(128)]) {
      const res = await callRaw("GET", "/v1/nowhere", { headers: { "X-Request-Id": own } });
      expect(res.headers.get("X-Request-Id")).toBe(own);
      expect((res.body as ErrorBody).request_id).toBe(own);
    }
    for (const insane of ["a".repeat(129), "has space", 'quote"d', "semi;colon", "-leading-dash", "<script>"]) {
      const res = await call("getHealth", "/health", { headers: { "X-Request-Id": insane } });
      expect(res.headers.get("X-Request-Id"), insane).toMatch(UUID);
    }
  });
});

describe("the request log line", () => {
  afterEach(() => vi.restoreAllMocks());

  function captureLines() {
    const lines: Array<Record<string, unknown>> = [];
    vi.spyOn(console, "info").mockImplementation((line: unknown) => {
      if (typeof line === "string" && line.startsWith("{")) lines.push(JSON.parse(line));
    });
    return lines;
  }

  it("writes one JSON line per request: id, company, client, operationId, status, duration", async () => {
    const token = await tokenFor("demo-owner");
    const lines = captureLines();
    const res = await callWithEnv({ REQUEST_LOGS: "on" }, "getContact", "/v1/contacts/999999999", {
      token,
      headers: { "X-Request-Id": "trace-me-1" },
    });
    expectStatus(res, 404);
    const requests = lines.filter((l) => l.msg === "request");
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      level: "info",
      request_id: "trace-me-1",
      method: "GET",
      path: "/v1/contacts/999999999",
      status: 404,
      company_id: 1,
      client_id: "demo-owner",
      operation: "getContact",
    });
    expect(typeof requests[0]!.duration_ms).toBe("number");
  });

  it("logs unauthenticated requests too, without a company or client", async () => {
    const lines = captureLines();
    await callWithEnv({ REQUEST_LOGS: "on" }, "getHealth", "/health");
    expect(lines.filter((l) => l.msg === "request")[0]).toMatchObject({
      status: 200,
      operation: "getHealth",
      company_id: null,
      client_id: null,
    });
  });
});
