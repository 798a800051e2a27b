// Recurring items over HTTP (docs/recurrence.md): setting, reading, changing and removing a rule,
// the list filter, next_occurrences, and renewal on completion (atomic, once under concurrency).
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import type { ApiError } from "../../src/lib/errors";
import { RENEWAL_SETTLE_SECONDS, setItemStatus } from "../../src/records/items/queries";
import {
  call,
  createAccount,
  env,
  expectShapeB,
  type DataOf,
  type Fields,
  type TestAccount,
  expectStatus,
  ok,
} from "./helpers";

let account: TestAccount;
const token = () => account.ownerToken;

beforeAll(async () => {
  account = await createAccount();
});

async function item(body: Fields): Promise<number> {
  const res = await call("createItem", "/v1/items", { token: token(), body: { title: "Recurring", ...body } });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data.item_id;
}
async function get(id: number): Promise<DataOf<"getItem">> {
  const res = await call("getItem", `/v1/items/${id}`, { token: token() });
  expectStatus(res, 200);
  return res.body.data;
}
const complete = (id: number) =>
  call("setItemStatus", `/v1/items/${id}/status`, { token: token(), body: { status: "completed" } });

describe("a recurrence rule", () => {
  it("is set on create, shown with the next three dates, changed and removed by PATCH", async () => {
    const id = await item({
      expiry_date: "2031-01-31",
      recurrence: { every: 1, unit: "month", renew_on: "completed" },
    });
    let detail = await get(id);
    expect(detail.recurrence).toEqual({ every: 1, unit: "month", renew_on: "completed", until: null, count: null });
    expect(detail.next_occurrences).toEqual(["2031-02-28", "2031-03-31", "2031-04-30"]);

    let res = ok(
      await call("updateItem", `/v1/items/${id}`, {
        token: token(),
        body: { recurrence: { every: 1, unit: "month", renew_on: "completed", count: 2 } },
      }),
    );
    expectStatus(res, 200);
    expect(res.body.data.recurrence).toEqual({ every: 1, unit: "month", renew_on: "completed", until: null, count: 2 });
    expect(res.body.data.next_occurrences).toEqual(["2031-02-28", "2031-03-31"]);

    res = ok(
      await call("updateItem", `/v1/items/${id}`, {
        token: token(),
        body: { recurrence: { every: 2, unit: "week", renew_on: "expired", until: "2031-02-28" } },
      }),
    );
    expect(res.body.data.recurrence).toEqual({
      every: 2,
      unit: "week",
      renew_on: "expired",
      until: "2031-02-28",
      count: null,
    });
    expect(res.body.data.next_occurrences).toEqual(["2031-02-14", "2031-02-28"]);

    res = ok(await call("updateItem", `/v1/items/${id}`, { token: token(), body: { recurrence: null } }));
    expectStatus(res, 200);
    expect(res.body.data.recurrence).toBeNull();
    expect(res.body.data.next_occurrences).toEqual([]);
    detail = await get(id);
    expect(detail.recurrence).toBeNull();
  });

  it("items without one show recurrence null and no next dates", async () => {
    const detail = await get(await item({ expiry_date: "2031-05-01" }));
    expect(detail.recurrence).toBeNull();
    expect(detail.next_occurrences).toEqual([]);
  });

  it("is refused with 400 naming the field when it is not a rule", async () => {
    const base = { title: "x", expiry_date: "2031-01-01" };
    for (const [recurrence, msg] of [
      [{ unit: "month", renew_on: "completed" }, /recurrence\.every/],
      [{ every: 0, unit: "month", renew_on: "completed" }, /recurrence\.every must be an integer from 1 to 1000/],
      [{ every: 1001, unit: "month", renew_on: "completed" }, /recurrence\.every/],
      [{ every: 1.5, unit: "month", renew_on: "completed" }, /recurrence\.every/],
      [{ every: 1, unit: "hour", renew_on: "completed" }, /recurrence\.unit must be one of: day, week, month, year/],
      [{ every: 1, unit: "month" }, /recurrence\.renew_on/],
      [{ every: 1, unit: "month", renew_on: "paid" }, /recurrence\.renew_on must be one of: completed, expired/],
      [{ every: 1, unit: "month", renew_on: "expired", until: "2031-02-30" }, /recurrence\.until/],
      [
        { every: 1, unit: "month", renew_on: "expired", until: "2030-12-31" },
        /recurrence\.until must not be earlier than expiry_date/,
      ],
      [{ every: 1, unit: "month", renew_on: "expired", count: -1 }, /recurrence\.count/],
      [{ every: 1, unit: "month", renew_on: "expired", interval: 2 }, /interval/],
      ["monthly", /recurrence/],
    ] as const) {
      expectShapeB(await call("createItem", "/v1/items", { token: token(), body: { ...base, recurrence } }), 400, msg);
    }
    const id = await item({ expiry_date: "2031-06-15" });
    expectShapeB(
      await call("updateItem", `/v1/items/${id}`, {
        token: token(),
        body: { recurrence: { every: 1, unit: "year", renew_on: "expired", until: "2031-06-14" } },
      }),
      400,
      /recurrence\.until must not be earlier than the item's expiry_date 2031-06-15/,
    );
  });

  it("keeps its anchor when only its end changes, and restarts from a new date set by hand", async () => {
    const id = await item({
      expiry_date: "2032-01-31",
      recurrence: { every: 1, unit: "month", renew_on: "completed" },
    });
    expect(ok(await complete(id)).body.data.expiry_date).toBe("2032-02-29");
    let res = ok(
      await call("updateItem", `/v1/items/${id}`, {
        token: token(),
        body: { recurrence: { every: 1, unit: "month", renew_on: "completed", count: 5 } },
      }),
    );
    expect(res.body.data.next_occurrences).toEqual(["2032-03-31", "2032-04-30", "2032-05-31"]);
    res = ok(await call("updateItem", `/v1/items/${id}`, { token: token(), body: { expiry_date: "2032-03-10" } }));
    expect(res.body.data.next_occurrences).toEqual(["2032-04-10", "2032-05-10", "2032-06-10"]);
    res = ok(await call("renewItem", `/v1/items/${id}/renew`, { token: token(), body: { expiry_date: "2032-06-30" } }));
    expect(res.body.data.next_occurrences).toEqual(["2032-07-30", "2032-08-30", "2032-09-30"]);
    expect(res.body.data.recurrence!.count).toBe(5);
    expect(res.body.data.renewals.map((r) => [r.previous_date, r.new_date, r.reason, r.automatic])).toEqual([
      ["2032-01-31", "2032-02-29", "completed", true],
      ["2032-03-10", "2032-06-30", "manual", false],
    ]);
  });
});

describe("GET /v1/items?recurring=", () => {
  it("lists only items with a rule (true) or without one (false), and refuses other values", async () => {
    const a = await createAccount();
    const mk = async (body: Fields) =>
      ok(await call("createItem", "/v1/items", { token: a.ownerToken, body: { title: "x", ...body } })).body.data
        .item_id;
    const plain = await mk({ expiry_date: "2031-01-01" });
    const monthly = await mk({
      expiry_date: "2031-02-01",
      recurrence: { every: 1, unit: "month", renew_on: "expired" },
    });
    const yearly = await mk({
      expiry_date: "2031-03-01",
      recurrence: { every: 1, unit: "year", renew_on: "completed" },
    });
    const ids = async (q: string) => ok(await call("listItems", `/v1/items?${q}`, { token: a.ownerToken })).body;
    expect((await ids("recurring=true")).data.map((i) => i.item_id)).toEqual([monthly, yearly]);
    expect((await ids("recurring=true")).meta.total).toBe(2);
    expect((await ids("recurring=false")).data.map((i) => i.item_id)).toEqual([plain]);
    expect((await ids("")).data).toHaveLength(3);
    expectShapeB(
      await call("listItems", "/v1/items?recurring=yes", { token: a.ownerToken }),
      400,
      /recurring must be true or false/,
    );
  });
});

describe("renewal on completion", () => {
  it("renews, records it as automatic, stays pending, requeues the sequence and counts down to a plain item", async () => {
    const id = await item({
      expiry_date: "2033-02-28",
      recurrence: { every: 1, unit: "year", renew_on: "completed", count: 1 },
    });
    const before = await get(id);
    const res = await complete(id);
    expectStatus(res, 200);
    expect(res.body.msg).toBe("Item completed and renewed until 2034-02-28");
    expect(res.body.data).toMatchObject({ expiry_date: "2034-02-28", status: "pending" });
    expect(res.body.data.recurrence!.count).toBe(0);
    expect(res.body.data.next_occurrences).toEqual([]);
    expect(res.body.data.renewals).toEqual([
      {
        previous_date: "2033-02-28",
        new_date: "2034-02-28",
        renewed_at: expect.any(String),
        automatic: true,
        reason: "completed",
      },
    ]);
    const queued = res.body.data.reminders.queued.map((r) => r.date);
    expect(queued.length).toBe(before.reminders.queued.length);
    expect(queued.every((d: string) => d > "2033-02-28")).toBe(true);
    // A bare completion right after is taken for a repeat of the first (409); one naming the new
    // occurrence completes it, and the rule has ended: it only completes.
    expectShapeB(await complete(id), 409, /2033-02-28 is done: the item was renewed on completion to 2034-02-28/);
    const again = ok(
      await call("setItemStatus", `/v1/items/${id}/status`, {
        token: token(),
        body: { status: "completed", expiry_date: "2034-02-28" },
      }),
    );
    expect(again.body.msg).toBe("Item marked completed");
    expect(again.body.data).toMatchObject({ expiry_date: "2034-02-28", status: "completed" });
  });

  it("does not renew an archived item (the rule is paused) nor an item whose rule renews at expiry", async () => {
    const paused = await item({
      expiry_date: "2033-05-01",
      recurrence: { every: 1, unit: "month", renew_on: "completed" },
    });
    await call("archiveItem", `/v1/items/${paused}/archive`, { token: token(), body: { archived: true } });
    expect(ok(await complete(paused)).body.data).toMatchObject({ expiry_date: "2033-05-01", status: "completed" });
    const atExpiry = await item({
      expiry_date: "2033-05-01",
      recurrence: { every: 1, unit: "month", renew_on: "expired" },
    });
    expect(ok(await complete(atExpiry)).body.data).toMatchObject({ expiry_date: "2033-05-01", status: "completed" });
  });

  const monthly = () =>
    item({ expiry_date: "2027-01-05", recurrence: { every: 1, unit: "month", renew_on: "completed" } });
  const statusOf = (id: number, body: Fields, headers: Record<string, string> = {}) =>
    call("setItemStatus", `/v1/items/${id}/status`, { token: token(), body, headers });
  const RENEWED = /2027-01-05 is done: the item was renewed on completion to 2027-02-05/;

  it("renews once when eight completions of one occurrence are sent together; the other seven are 409 naming the new date (issue 31.3)", async () => {
    for (let round = 0; round < 7; round++) {
      const id = await monthly();
      const results = await Promise.all(Array.from({ length: 8 }, () => complete(id)));
      expect(results.map((r) => r.status).sort(), `round ${round}`).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      expect(results.find((r) => r.status === 200)!.body.msg).toBe("Item completed and renewed until 2027-02-05");
      for (const r of results.filter((r) => r.status === 409)) expectShapeB(r, 409, RENEWED);
      const detail = await get(id);
      expect(detail).toMatchObject({ expiry_date: "2027-02-05", status: "pending" });
      expect(detail.renewals).toHaveLength(1);
    }
  });

  it("binds a completion to the date it names, whatever else races it", async () => {
    const id = await monthly();
    const results = await Promise.all(
      Array.from({ length: 8 }, () => statusOf(id, { status: "completed", expiry_date: "2027-01-05" })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
    // The old date again, later: 409 naming the new one, nothing written.
    expectShapeB(await statusOf(id, { status: "completed", expiry_date: "2027-01-05" }), 409, RENEWED);
    // The new date: completes the new occurrence at once.
    const next = await statusOf(id, { status: "completed", expiry_date: "2027-02-05" });
    expectStatus(next, 200, JSON.stringify(next.body));
    expect(next.body.data).toMatchObject({ expiry_date: "2027-03-05", status: "pending" });
    expect(next.body.data.renewals).toHaveLength(2);
    // A date the item never had, and an invalid one.
    expectShapeB(
      await statusOf(id, { status: "completed", expiry_date: "2030-01-01" }),
      409,
      /is dated 2027-03-05, not 2030-01-01/,
    );
    expectShapeB(await statusOf(id, { status: "completed", expiry_date: "2027-02-30" }), 400, /expiry_date/);
    expect((await get(id)).renewals).toHaveLength(2);
  });

  it("refuses a bare completion that finds the item just renewed by a completion, unless If-Match names the new state", async () => {
    const id = await monthly();
    expectStatus(await complete(id), 200);
    // Sent one after the other, the second would complete 2027-02-05 unseen: refused, nothing written.
    expectShapeB(await complete(id), 409, RENEWED);
    expectShapeB(await statusOf(id, { status: "completed" }, { "If-Match": "*" }), 409, RENEWED);
    expect((await get(id)).renewals).toHaveLength(1);
    // If-Match with the item's current ETag says which occurrence: it is completed.
    const etag = (await call("getItem", `/v1/items/${id}`, { token: token() })).headers.get("ETag")!;
    const bound = await Promise.all(
      Array.from({ length: 8 }, () => statusOf(id, { status: "completed" }, { "If-Match": etag })),
    );
    expect(bound.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    expect(bound.find((r) => r.status === 200)!.body.data.expiry_date).toBe("2027-03-05");
    const current = (await call("getItem", `/v1/items/${id}`, { token: token() })).headers.get("ETag");
    for (const r of bound.filter((r) => r.status === 412)) expect(r.headers.get("ETag")).toBe(current);
  });

  it(`lets a bare completion renew again once the last completion renewal is ${RENEWAL_SETTLE_SECONDS / 60} minutes old`, async () => {
    const id = await monthly();
    expectStatus(await complete(id), 200);
    expectStatus(await complete(id), 409);
    await env.DB.prepare(
      `UPDATE item_renewals SET created_at = datetime(created_at, '-${RENEWAL_SETTLE_SECONDS + 1} seconds') WHERE item_id = ?`,
    )
      .bind(id)
      .run();
    const later = await complete(id);
    expectStatus(later, 200, JSON.stringify(later.body));
    expect(later.body.data.expiry_date).toBe("2027-03-05");
  });

  it("keeps a bound reopen to its date too, and leaves plain items' bare completions as they were", async () => {
    const plain = await item({ expiry_date: "2027-01-05" });
    const results = await Promise.all(Array.from({ length: 4 }, () => complete(plain)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expectShapeB(
      await statusOf(plain, { status: "pending", expiry_date: "2027-01-06" }),
      409,
      /is dated 2027-01-05, not 2027-01-06/,
    );
    expect((await get(plain)).status).toBe("completed");
    expect(ok(await statusOf(plain, { status: "pending", expiry_date: "2027-01-05" })).body.data.status).toBe(
      "pending",
    );
  });

  it("is one records-level function: eight completions bound to one date renew once, called without HTTP", async () => {
    const id = await monthly();
    const db = database(env.DB);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () => setItemStatus(db, account.companyId, 1, id, "completed", { date: "2027-01-05" })),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const o of outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected"))
      expectStatus(o.reason as ApiError, 409);
    expect((await get(id)).renewals).toHaveLength(1);
  });
});
