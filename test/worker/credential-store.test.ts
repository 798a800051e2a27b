import { describe, expect, it } from "vitest";
import { call, callWithEnv, captureErrorLogs, env, expectShapeA, tokenFor, expectStatus } from "./helpers";

// Storage is isolated per test file, so this file may take the credential store away.
// Every test puts it back, so the order of the tests does not matter.

const CREDS = { grant_type: "client_credentials", client_id: "demo-owner", client_secret: "demo-owner-secret" };

async function withoutCredentialStore(run: () => Promise<void>) {
  await env.DB.exec("ALTER TABLE api_clients RENAME TO api_clients_unavailable");
  try {
    await run();
  } finally {
    await env.DB.exec("ALTER TABLE api_clients_unavailable RENAME TO api_clients");
  }
}

describe("credential store unavailable", () => {
  const errorLogs = captureErrorLogs();

  it("issues tokens while the store is there (control)", async () => {
    const res = await call("issueToken", "/v1/oauth/token", { body: CREDS });
    expectStatus(res, 200);
  });

  it("answers 503 service_unavailable (Shape A, Retry-After) at the token endpoint", async () => {
    await withoutCredentialStore(async () => {
      const res = await call("issueToken", "/v1/oauth/token", { body: CREDS });
      expectShapeA(res, 503, "service_unavailable");
      expect(res.headers.get("Retry-After")).toBe("5");
      expect(res.body).not.toHaveProperty("success");
      // The D1 error text stays in the log, not in the body.
      expect(JSON.stringify(res.body)).not.toMatch(/api_clients|SQLITE|no such table/i);
      expect(errorLogs.join("\n")).toMatch(/credential store unavailable/);
    });
  });

  it("answers 503 for HTTP Basic and form requests too", async () => {
    await withoutCredentialStore(async () => {
      const basic = await call("issueToken", "/v1/oauth/token", {
        body: { grant_type: "client_credentials" },
        headers: { Authorization: `Basic ${btoa("demo-owner:demo-owner-secret")}` },
      });
      expectShapeA(basic, 503, "service_unavailable");
      const form = await call("issueToken", "/v1/oauth/token", {
        rawBody: new URLSearchParams(CREDS).toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      });
      expectShapeA(form, 503, "service_unavailable");
    });
  });

  it("still validates the request first: a bad grant_type is 400, not 503", async () => {
    await withoutCredentialStore(async () => {
      expectShapeA(
        await call("issueToken", "/v1/oauth/token", { body: { ...CREDS, grant_type: "password" } }),
        400,
        "unsupported_grant_type",
      );
    });
  });

  it("answers 503 when an authenticated request has to look its client up", async () => {
    const token = await tokenFor("demo-owner");
    await withoutCredentialStore(async () => {
      const me = await call("getTokenInfo", "/v1/oauth/me", { token });
      expectShapeA(me, 503, "service_unavailable");
      expect(me.headers.get("Retry-After")).toBe("5");
      expectShapeA(await call("listContacts", "/v1/contacts", { token }), 503, "service_unavailable");
    });
  });

  it("reports a missing signing key before touching the store", async () => {
    await withoutCredentialStore(async () => {
      expectShapeA(
        await callWithEnv({ JWT_SIGNING_KEYS: undefined }, "issueToken", "/v1/oauth/token", { body: CREDS }),
        500,
        "server_error",
      );
    });
  });

  it("recovers as soon as the store is back", async () => {
    await withoutCredentialStore(async () => {
      expectStatus(await call("issueToken", "/v1/oauth/token", { body: CREDS }), 503);
    });
    const res = await call("issueToken", "/v1/oauth/token", { body: CREDS });
    expectStatus(res, 200);
    expectStatus(await call("getTokenInfo", "/v1/oauth/me", { token: res.body.access_token }), 200);
  });
});
