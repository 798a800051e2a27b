import { describe, expect, it } from "vitest";
import { call, tokenFor, expectStatus } from "./helpers";

describe("smoke", () => {
  it("health", async () => {
    const res = await call("getHealth", "/health");
    expectStatus(res, 200);
    expect(res.body).toEqual({ success: true, status: "ok" });
  });
  it("token + create + list", async () => {
    const token = await tokenFor("demo-owner");
    const created = await call("createContact", "/v1/contacts", {
      token,
      body: { first_name: "Ada", last_name: "Lovelace", email: "ada@example.com" },
    });
    expectStatus(created, 201, JSON.stringify(created.body));
    const list = await call("listContacts", "/v1/contacts?q=ada", { token });
    expectStatus(list, 200, JSON.stringify(list.body));
    expect(list.body.meta.total).toBe(1);
  });
});
