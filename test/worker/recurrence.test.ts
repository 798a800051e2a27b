// Recurring items over HTTP (docs/recurrence.md): setting, reading, changing and removing a rule,
// the list filter, next_occurrences, and renewal on completion (atomic, once under concurrency).
import { beforeAll, describe, expect, it } from "vitest";
import { call, createAccount, expectShapeB, type Json, type TestAccount } from "./helpers";

let account: TestAccount;
const token = () => account.ownerToken;

beforeAll(async () => {
  account = await createAccount();
});

async function item(body: Json): Promise<number> {
  const res = await call("POST", "/v1/items", { token: token(), body: { title: "Recurring", ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.item_id;
}
async function get(id: number): Promise<Json> {
  const res = await call("GET", `/v1/items/${id}`, { token: token() });
  expect(res.status).toBe(200);
  return res.body.data;
}
const complete = (id: number) => call("PATCH", `/v1/items/${id}/status`, { token: token(), body: { status: "completed" } });

describe("a recurrence rule", () => {
  it("is set on create, shown with the next three dates, changed and removed by PATCH", async () => {
    const id = await item({ expiry_date: "2031-01-31", recurrence: { every: 1, unit: "month", renew_on: "completed" } });
    let detail = await get(id);
    expect(detail.recurrence).toEqual({ every: 1, unit: "month", renew_on: "completed", until: null, count: null });
    expect(detail.next_occurrences).toEqual(["2031-02-28", "2031-03-31", "2031-04-30"]);

    let res = await call("PATCH", `/v1/items/${id}`, { token: token(), body: { recurrence: { every: 1, unit: "month", renew_on: "completed", count: 2 } } });
    expect(res.status).toBe(200);
    expect(res.body.data.recurrence).toEqual({ every: 1, unit: "month", renew_on: "completed", until: null, count: 2 });
    expect(res.body.data.next_occurrences).toEqual(["2031-02-28", "2031-03-31"]);

    res = await call("PATCH", `/v1/items/${id}`, { token: token(), body: { recurrence: { every: 2, unit: "week", renew_on: "expired", until: "2031-02-28" } } });
    expect(res.body.data.recurrence).toEqual({ every: 2, unit: "week", renew_on: "expired", until: "2031-02-28", count: null });
    expect(res.body.data.next_occurrences).toEqual(["2031-02-14", "2031-02-28"]);

    res = await call("PATCH", `/v1/items/${id}`, { token: token(), body: { recurrence: null } });
    expect(res.status).toBe(200);
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
      [{ every: 1, unit: "month", renew_on: "expired", until: "2030-12-31" }, /recurrence\.until must not be earlier than expiry_date/],
      [{ every: 1, unit: "month", renew_on: "expired", count: -1 }, /recurrence\.count/],
      [{ every: 1, unit: "month", renew_on: "expired", interval: 2 }, /interval/],
      ["monthly", /recurrence/],
    ] as const) {
      expectShapeB(await call("POST", "/v1/items", { token: token(), body: { ...base, recurrence } }), 400, msg);
    }
    const id = await item({ expiry_date: "2031-06-15" });
    expectShapeB(
      await call("PATCH", `/v1/items/${id}`, { token: token(), body: { recurrence: { every: 1, unit: "year", renew_on: "expired", until: "2031-06-14" } } }),
      400,
      /recurrence\.until must not be earlier than the item's expiry_date 2031-06-15/,
    );
  });

  it("keeps its anchor when only its end changes, and restarts from a new date set by hand", async () => {
    const id = await item({ expiry_date: "2032-01-31", recurrence: { every: 1, unit: "month", renew_on: "completed" } });
    expect((await complete(id)).body.data.expiry_date).toBe("2032-02-29");
    let res = await call("PATCH", `/v1/items/${id}`, { token: token(), body: { recurrence: { every: 1, unit: "month", renew_on: "completed", count: 5 } } });
    expect(res.body.data.next_occurrences).toEqual(["2032-03-31", "2032-04-30", "2032-05-31"]);
    res = await call("PATCH", `/v1/items/${id}`, { token: token(), body: { expiry_date: "2032-03-10" } });
    expect(res.body.data.next_occurrences).toEqual(["2032-04-10", "2032-05-10", "2032-06-10"]);
    res = await call("POST", `/v1/items/${id}/renew`, { token: token(), body: { expiry_date: "2032-06-30" } });
    expect(res.body.data.next_occurrences).toEqual(["2032-07-30", "2032-08-30", "2032-09-30"]);
    expect(res.body.data.recurrence.count).toBe(5);
    expect(res.body.data.renewals.map((r: Json) => [r.previous_date, r.new_date, r.reason, r.automatic])).toEqual([
      ["2032-01-31", "2032-02-29", "completed", true],
      ["2032-03-10", "2032-06-30", "manual", false],
    ]);
  });
});

describe("GET /v1/items?recurring=", () => {
  it("lists only items with a rule (true) or without one (false), and refuses other values", async () => {
    const a = await createAccount();
    const mk = async (body: Json) => (await call("POST", "/v1/items", { token: a.ownerToken, body: { title: "x", ...body } })).body.data.item_id;
    const plain = await mk({ expiry_date: "2031-01-01" });
    const monthly = await mk({ expiry_date: "2031-02-01", recurrence: { every: 1, unit: "month", renew_on: "expired" } });
    const yearly = await mk({ expiry_date: "2031-03-01", recurrence: { every: 1, unit: "year", renew_on: "completed" } });
    const ids = async (q: string) => (await call("GET", `/v1/items?${q}`, { token: a.ownerToken })).body;
    expect((await ids("recurring=true")).data.map((i: Json) => i.item_id)).toEqual([monthly, yearly]);
    expect((await ids("recurring=true")).meta.total).toBe(2);
    expect((await ids("recurring=false")).data.map((i: Json) => i.item_id)).toEqual([plain]);
    expect((await ids("")).data).toHaveLength(3);
    expectShapeB(await call("GET", "/v1/items?recurring=yes", { token: a.ownerToken }), 400, /recurring must be true or false/);
  });
});

describe("renewal on completion", () => {
  it("renews, records it as automatic, stays pending, requeues the sequence and counts down to a plain item", async () => {
    const id = await item({ expiry_date: "2033-02-28", recurrence: { every: 1, unit: "year", renew_on: "completed", count: 1 } });
    const before = await get(id);
    const res = await complete(id);
    expect(res.status).toBe(200);
    expect(res.body.msg).toBe("Item completed and renewed until 2034-02-28");
    expect(res.body.data).toMatchObject({ expiry_date: "2034-02-28", status: "pending" });
    expect(res.body.data.recurrence.count).toBe(0);
    expect(res.body.data.next_occurrences).toEqual([]);
    expect(res.body.data.renewals).toEqual([{ previous_date: "2033-02-28", new_date: "2034-02-28", renewed_at: expect.any(String), automatic: true, reason: "completed" }]);
    const queued = res.body.data.reminders.queued.map((r: Json) => r.date);
    expect(queued.length).toBe(before.reminders.queued.length);
    expect(queued.every((d: string) => d > "2033-02-28")).toBe(true);
    // The rule has ended: the next completion only completes.
    const again = await complete(id);
    expect(again.body.msg).toBe("Item marked completed");
    expect(again.body.data).toMatchObject({ expiry_date: "2034-02-28", status: "completed" });
  });

  it("does not renew an archived item (the rule is paused) nor an item whose rule renews at expiry", async () => {
    const paused = await item({ expiry_date: "2033-05-01", recurrence: { every: 1, unit: "month", renew_on: "completed" } });
    await call("PATCH", `/v1/items/${paused}/archive`, { token: token(), body: { archived: true } });
    expect((await complete(paused)).body.data).toMatchObject({ expiry_date: "2033-05-01", status: "completed" });
    const atExpiry = await item({ expiry_date: "2033-05-01", recurrence: { every: 1, unit: "month", renew_on: "expired" } });
    expect((await complete(atExpiry)).body.data).toMatchObject({ expiry_date: "2033-05-01", status: "completed" });
  });

  it("renews exactly once when completions race; the losers are 409", async () => {
    let raced = 0;
    for (let round = 0; round < 5; round++) {
      const id = await item({ expiry_date: "2034-01-15", recurrence: { every: 1, unit: "month", renew_on: "completed" } });
      const results = await Promise.all(Array.from({ length: 4 }, () => complete(id)));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200).length, JSON.stringify(statuses)).toBeGreaterThanOrEqual(1);
      expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
      for (const r of results.filter((r) => r.status === 409)) expectShapeB(r, 409, /changed while it was being completed/);
      const detail = await get(id);
      // Every 200 renewed it (each one saw the date the previous one left), a 409 did nothing:
      // the history has one row per 200 and the date moved that many months.
      const wins = statuses.filter((s) => s === 200).length;
      expect(detail.renewals).toHaveLength(wins);
      expect(detail.expiry_date).toBe(["2034-02-15", "2034-03-15", "2034-04-15", "2034-05-15"][wins - 1]);
      if (wins === 1) raced++;
    }
    // The requests did overlap (here every round has one winner and three 409s).
    expect(raced).toBeGreaterThan(0);
  });
});
