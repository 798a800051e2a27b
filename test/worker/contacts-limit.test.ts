import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  contactCounts,
  createContact,
  env,
  expectShapeB,
  tokenFor,
  uniqueEmail,
  expectStatus,
  ok,
} from "./helpers";

// companies.contacts_limit. This file lowers company 1's limit, so it has its own storage
// (isolated per file) and restores the seeded limit at the end anyway.

let owner: string;
let other: string;
let seededLimit: number;

async function setLimit(companyId: number, limit: number) {
  await env.DB.prepare("UPDATE companies SET contacts_limit = ? WHERE id = ?").bind(limit, companyId).run();
}

async function tryCreate(token: string) {
  return call("createContact", "/v1/contacts", {
    token,
    body: { first_name: "Lim", last_name: "It", email: uniqueEmail() },
  });
}

beforeAll(async () => {
  owner = await tokenFor("demo-owner");
  other = await tokenFor("demo-other");
  const row = await env.DB.prepare("SELECT contacts_limit AS n FROM companies WHERE id = 1").first<{ n: number }>();
  seededLimit = row!.n;
});

afterAll(async () => {
  await setLimit(1, seededLimit);
});

describe("contacts_limit", () => {
  it("refuses the create that would exceed the limit with 400 naming the limit, and counts stay right", async () => {
    await createContact(owner);
    const { used } = await contactCounts(1);
    await setLimit(1, used + 2);

    expectStatus(await tryCreate(owner), 201);
    expectStatus(await tryCreate(owner), 201);
    const refused = await tryCreate(owner);
    expectShapeB(refused, 400, /limit/i);
    expect(refused.body.msg).toContain(String(used + 2));

    const counts = await contactCounts(1);
    expect(counts).toEqual({ used: used + 2, actual: used + 2 });
    const list = ok(await call("listContacts", "/v1/contacts?limit=1", { token: owner }));
    expect(list.body.meta.total).toBe(used + 2);
  });

  it("a delete frees a slot for exactly one more contact", async () => {
    const { used } = await contactCounts(1);
    await setLimit(1, used);
    expectShapeB(await tryCreate(owner), 400, /limit/i);

    const victim = ok(await call("listContacts", "/v1/contacts?limit=1", { token: owner })).body.data[0];
    expectStatus(await call("deleteContact", `/v1/contacts/${victim!.contact_id}`, { token: owner }), 200);
    expect((await contactCounts(1)).used).toBe(used - 1);

    expectStatus(await tryCreate(owner), 201);
    expectShapeB(await tryCreate(owner), 400, /limit/i);
    expect(await contactCounts(1)).toEqual({ used, actual: used });
  });

  it("concurrent creates never go past the limit", async () => {
    const { used } = await contactCounts(1);
    await setLimit(1, used + 3);
    const results = await Promise.all(Array.from({ length: 8 }, () => tryCreate(owner)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of results.filter((r) => r.status !== 201)) expectShapeB(r, 400, /limit/i);
    expect(await contactCounts(1)).toEqual({ used: used + 3, actual: used + 3 });
  });

  it("a limit of 0 refuses every create", async () => {
    await setLimit(1, 0);
    expectShapeB(await tryCreate(owner), 400, /limit/i);
  });

  it("the validation of a refused create still comes first (400 for the field, not the limit)", async () => {
    await setLimit(1, 0);
    const res = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B" },
    });
    expectShapeB(res, 400, /email/);
  });

  it("is per company: company 1 at its limit does not stop company 2", async () => {
    const { used } = await contactCounts(1);
    await setLimit(1, used);
    expectShapeB(await tryCreate(owner), 400, /limit/i);
    expectStatus(await tryCreate(other), 201);
  });

  it("updates and deletes still work at the limit", async () => {
    await setLimit(1, seededLimit);
    const c = await createContact(owner);
    const { used } = await contactCounts(1);
    await setLimit(1, used);
    const patched = await call("updateContact", `/v1/contacts/${c.contact_id}`, {
      token: owner,
      body: { first_name: "Still" },
    });
    expectStatus(patched, 200);
    expectStatus(await call("deleteContact", `/v1/contacts/${c.contact_id}`, { token: owner }), 200);
    await setLimit(1, seededLimit);
  });
});
