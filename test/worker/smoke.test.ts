import { describe, expect, it } from "vitest";
import { call, tokenFor } from "./helpers";

describe("smoke", () => {
  it("health", async () => {
    const res = await call("GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, status: "ok" });
  });
  it("token + create + list", async () => {
    const token = await tokenFor("demo-owner");
    const created = await call("POST", "/v1/contacts", { token, body: { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const list = await call("GET", "/v1/contacts?q=ada", { token });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.meta.total).toBe(1);
  });
});
