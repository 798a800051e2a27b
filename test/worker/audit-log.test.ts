// The audit log (docs/audit-log.md): every write names its actor, request and operation, with the
// fields before and after; failed writes leave nothing; owner only; filters and keyset pages.
import { beforeAll, describe, expect, it } from "vitest";
import { call, createAccount, expectShapeA, expectShapeB, uniqueWord, type Json, type TestAccount } from "./helpers";

let account: TestAccount;

beforeAll(async () => {
  account = await createAccount();
});

async function entries(query: string, token = account.ownerToken): Promise<Json[]> {
  const res = await call("GET", `/v1/audit-log?${query}`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

describe("GET /v1/audit-log", () => {
  it("records an item's create, update and delete with actor, request id, operation and the changed fields", async () => {
    const created = await call("POST", "/v1/items", {
      token: account.ownerToken,
      headers: { "X-Request-Id": "req-audit-create-1" },
      body: { title: "Boiler", expiry_date: "2030-01-31", notes: "first" },
    });
    expect(created.status).toBe(201);
    const id = String(created.body.data.item_id);
    const patched = await call("PATCH", `/v1/items/${id}`, { token: account.memberToken, headers: { "X-Request-Id": "req-audit-patch-1" }, body: { notes: "second" } });
    expect(patched.status).toBe(200);
    expect((await call("DELETE", `/v1/items/${id}`, { token: account.ownerToken })).status).toBe(200);

    const log = await entries(`resource_type=item&resource_id=${id}`);
    expect(log.map((e) => e.action)).toEqual(["deleted", "updated", "created"]);
    const [deleted, updated, create] = log as [Json, Json, Json];
    expect(create).toMatchObject({
      actor: { client_id: expect.stringMatching(/-owner$/), user_id: expect.any(Number), company_id: account.companyId },
      company_id: account.companyId,
      request_id: "req-audit-create-1",
      operation_id: "createItem",
      resource_type: "item",
      resource_id: id,
      before: null,
    });
    expect(create.after).toMatchObject({ title: "Boiler", expiry_date: "2030-01-31", notes: "first", status: "pending" });
    expect(updated).toMatchObject({ request_id: "req-audit-patch-1", operation_id: "updateItem", before: { notes: "first" }, after: { notes: "second" } });
    expect(updated.actor.client_id).toMatch(/-member$/);
    expect(deleted).toMatchObject({ operation_id: "deleteItem", after: null });
    expect(deleted.before).toMatchObject({ title: "Boiler", notes: "second" });
    expect(Date.parse(create.at)).toBeLessThanOrEqual(Date.parse(deleted.at));
  });
});
