// Renewal at expiry by the company clock (docs/recurrence.md): the instant, catch-up, pause and
// resume, a real alarm, and exactly once across a lost acknowledgement and concurrent runs.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import { addDays, addMonths, startOfDayAfter, todayIn } from "../../src/lib/time";
import { call, createAccount, env, type Fields, expectStatus, ok } from "./helpers";

const stubOf = (companyId: number) => clockFor(env, companyId);
const today = () => todayIn("UTC");

/** The PATCH operations these tests send, by the path after the item's. */
const PATCHES = { "": "updateItem", "/archive": "archiveItem", "/status": "setItemStatus" } as const;

async function setup(zone = "UTC") {
  const account = await createAccount();
  if (zone !== "UTC") {
    const res = await call("updateCompanySettings", `/v1/companies/${account.companyId}/settings`, {
      token: account.ownerToken,
      body: { timezone: zone },
    });
    expectStatus(res, 200);
  }
  const token = account.ownerToken;
  const create = async (body: Fields) => {
    const res = await call("createItem", "/v1/items", { token, body: { title: "Monthly check", ...body } });
    expectStatus(res, 201, JSON.stringify(res.body));
    return res.body.data.item_id;
  };
  const get = async (id: number) => ok(await call("getItem", `/v1/items/${id}`, { token })).body.data;
  const patch = async <P extends keyof typeof PATCHES>(id: number, path: P, body: Fields) =>
    call(PATCHES[path], `/v1/items/${id}${path}`, { token, body });
  return { ...account, token, create, get, patch };
}

/** The clock's renewal rows (item, date, instant, held). */
async function renewalRows(companyId: number) {
  let rows: Array<{ item_id: number; date: string; due_at: number; held: number }> = [];
  await runInDurableObject(stubOf(companyId), (_i, state) => {
    rows = state.storage.sql
      .exec<{ item_id: number; date: string; due_at: number; held: number }>(
        "SELECT item_id, date, due_at, held FROM renewals ORDER BY item_id",
      )
      .toArray();
  });
  return rows;
}

const historyCount = async (itemId: number) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM item_renewals WHERE item_id = ?")
    .bind(itemId)
    .first<{ n: number }>())!.n;

describe("the renewal instant", () => {
  it("is the start of the day after the date in the company's zone, and moves with a zone change", async () => {
    const s = await setup("Pacific/Kiritimati");
    const date = addDays(today(), 40);
    const id = await s.create({ expiry_date: date, recurrence: { every: 1, unit: "month", renew_on: "expired" } });
    expect(await renewalRows(s.companyId)).toEqual([
      { item_id: id, date, due_at: startOfDayAfter(date, "Pacific/Kiritimati"), held: 0 },
    ]);
    await call("updateCompanySettings", `/v1/companies/${s.companyId}/settings`, {
      token: s.token,
      body: { timezone: "Pacific/Pago_Pago" },
    });
    await s.get(id); // the change reaches the clock with the next call for the company
    await call("listItemReminders", `/v1/items/${id}/reminders`, { token: s.token });
    expect((await renewalRows(s.companyId))[0]!.due_at).toBe(startOfDayAfter(date, "Pacific/Pago_Pago"));
    expect(startOfDayAfter(date, "Pacific/Pago_Pago") - startOfDayAfter(date, "Pacific/Kiritimati")).toBe(
      25 * 3600_000,
    );
  });

  it("only rules that renew at expiry and have renewals left have one", async () => {
    const s = await setup();
    const date = addDays(today(), 40);
    await s.create({ expiry_date: date, recurrence: { every: 1, unit: "month", renew_on: "completed" } });
    await s.create({ expiry_date: date, recurrence: { every: 1, unit: "month", renew_on: "expired", count: 0 } });
    await s.create({ expiry_date: date });
    const kept = await s.create({
      expiry_date: date,
      recurrence: { every: 1, unit: "month", renew_on: "expired", count: 3 },
    });
    expect((await renewalRows(s.companyId)).map((r) => r.item_id)).toEqual([kept]);
    await s.patch(kept, "", { recurrence: null });
    expect(await renewalRows(s.companyId)).toEqual([]);
  });
});

describe("catch-up", () => {
  it("a rule set on a long-past date moves the item to the first occurrence not yet expired, once, before the request answers", async () => {
    const s = await setup();
    const id = await s.create({ expiry_date: "2019-03-31" });
    const res = await s.patch(id, "", { recurrence: { every: 1, unit: "month", renew_on: "expired", count: 10 } });
    expectStatus(res, 200);
    const t = today();
    // Month ends keep the anchor (31st): the first occurrence on or after today.
    let expected = "2019-03-31";
    for (let k = 1; expected < t; k++) expected = addMonths("2019-03-31", k);
    expect(res.body.data.expiry_date).toBe(expected);
    expect(res.body.data.status).toBe("pending");
    expect(res.body.data.recurrence!.count).toBe(9);
    expect(res.body.data.renewals).toEqual([
      {
        previous_date: "2019-03-31",
        new_date: expected,
        renewed_at: expect.any(String),
        automatic: true,
        reason: "expired",
      },
    ]);
    // No stale reminder: everything queued lies ahead.
    for (const r of res.body.data.reminders.queued) expect(Date.parse(r.due_at)).toBeGreaterThan(Date.now());
    expect(await historyCount(id)).toBe(1);
  });

  it("a create with such a rule answers the caught-up date; an on-time date is left for its instant", async () => {
    const s = await setup();
    const yesterday = addDays(today(), -1);
    let res = ok(
      await call("createItem", "/v1/items", {
        token: s.token,
        body: { title: "Daily", expiry_date: yesterday, recurrence: { every: 1, unit: "day", renew_on: "expired" } },
      }),
    );
    expectStatus(res, 201);
    expect(res.body.data.expiry_date).toBe(today());
    expect((await s.get(res.body.data.item_id)).renewals).toHaveLength(1);
    res = ok(
      await call("createItem", "/v1/items", {
        token: s.token,
        body: { title: "Daily", expiry_date: today(), recurrence: { every: 1, unit: "day", renew_on: "expired" } },
      }),
    );
    expect(res.body.data.expiry_date).toBe(today());
    expect((await s.get(res.body.data.item_id)).renewals).toHaveLength(0);
  });

  it("a rule whose until has passed leaves the item as it is", async () => {
    const s = await setup();
    const id = await s.create({
      expiry_date: "2019-03-31",
      recurrence: { every: 1, unit: "month", renew_on: "expired", until: "2020-01-31" },
    });
    const item = await s.get(id);
    expect(item.expiry_date).toBe("2019-03-31");
    expect(item.next_occurrences).toEqual(["2019-04-30", "2019-05-31", "2019-06-30"]);
    expect(await historyCount(id)).toBe(0);
    expect(await renewalRows(s.companyId)).toEqual([]);
  });
});

describe("archive pauses, restore resumes", () => {
  it("no renewal while archived; restoring renews once to the first occurrence not yet expired", async () => {
    const s = await setup();
    const id = await s.create({ expiry_date: addDays(today(), -10) });
    await s.patch(id, "/archive", { archived: true });
    const set = ok(await s.patch(id, "", { recurrence: { every: 1, unit: "week", renew_on: "expired" } }));
    expect(set.body.data.expiry_date).toBe(addDays(today(), -10));
    expect((await renewalRows(s.companyId))[0]).toMatchObject({ item_id: id, held: 1 });
    expect(await runDurableObjectAlarm(stubOf(s.companyId))).toBeTypeOf("boolean");
    expect(await historyCount(id)).toBe(0);
    const restored = ok(await s.patch(id, "/archive", { archived: false }));
    expect(restored.body.data.expiry_date).toBe(addDays(today(), 4));
    expect(restored.body.data.active).toBe(true);
    expect(await historyCount(id)).toBe(1);
  });
});

describe("exactly once", () => {
  it("a real alarm renews the item at its instant, end to end", async () => {
    const s = await setup();
    const date = addDays(today(), 30);
    const id = await s.create({ expiry_date: date, recurrence: { every: 1, unit: "month", renew_on: "expired" } });
    // The instant is a local midnight; here it is brought to 1.5 s from now inside the clock
    // (the date math is covered in recurrence-dates.test.ts), and the runtime's alarm runs it.
    const at = Date.now() + 1500;
    await runInDurableObject(stubOf(s.companyId), async (_i, state) => {
      state.storage.sql.exec("UPDATE renewals SET due_at = ? WHERE item_id = ?", at, id);
      await state.storage.setAlarm(at);
    });
    let item = await s.get(id);
    expect(item.expiry_date).toBe(date);
    for (let i = 0; i < 50 && item.expiry_date === date; i++) {
      await new Promise((r) => setTimeout(r, 200));
      item = await s.get(id);
    }
    expect(item.expiry_date).toBe(addMonths(date, 1));
    expect(item.renewals).toEqual([
      {
        previous_date: date,
        new_date: addMonths(date, 1),
        renewed_at: expect.any(String),
        automatic: true,
        reason: "expired",
      },
    ]);
    expect(item.reminders.queued.length).toBeGreaterThan(0);
    expect(item.reminders.queued.every((r) => r.date > date)).toBe(true);
    expect(await renewalRows(s.companyId)).toEqual([
      { item_id: id, date: addMonths(date, 1), due_at: startOfDayAfter(addMonths(date, 1), "UTC"), held: 0 },
    ]);
  });

  it("a renewal written to D1 whose acknowledgement was lost (a crash) is not written again", async () => {
    const s = await setup();
    const date = addDays(today(), 30);
    const id = await s.create({ expiry_date: date, recurrence: { every: 1, unit: "month", renew_on: "expired" } });
    const [before] = await renewalRows(s.companyId);
    let saved: Record<string, unknown> = {};
    await runInDurableObject(stubOf(s.companyId), (_i, state) => {
      saved = state.storage.sql.exec("SELECT * FROM renewals WHERE item_id = ?", id).one();
      state.storage.sql.exec("UPDATE renewals SET due_at = ? WHERE item_id = ?", Date.now() - 1000, id);
    });
    await runDurableObjectAlarm(stubOf(s.companyId));
    expect(await historyCount(id)).toBe(1);
    // The object forgets what it learnt (as if it had crashed after the D1 write), and its alarm runs again, twice at once.
    await runInDurableObject(stubOf(s.companyId), (_i, state) => {
      state.storage.sql.exec(
        "UPDATE renewals SET date = ?, state = ?, due_at = ? WHERE item_id = ?",
        saved.date,
        saved.state,
        Date.now() - 1000,
        id,
      );
    });
    await Promise.all([
      runDurableObjectAlarm(stubOf(s.companyId)),
      call("listItemReminders", `/v1/items/${id}/reminders`, { token: s.token }),
    ]);
    await runDurableObjectAlarm(stubOf(s.companyId));
    expect(await historyCount(id)).toBe(1);
    const item = await s.get(id);
    expect(item.expiry_date).toBe(addMonths(date, 1));
    expect(before!.date).toBe(date);
    expect((await renewalRows(s.companyId))[0]).toMatchObject({ date: addMonths(date, 1) });
  });

  it("a completion racing the renewal at expiry: the item moves one period, once", async () => {
    const s = await setup();
    const date = addDays(today(), 30);
    const id = await s.create({ expiry_date: date, recurrence: { every: 1, unit: "month", renew_on: "expired" } });
    await runInDurableObject(stubOf(s.companyId), (_i, state) => {
      state.storage.sql.exec("UPDATE renewals SET due_at = ? WHERE item_id = ?", Date.now() - 1000, id);
    });
    await Promise.all([
      runDurableObjectAlarm(stubOf(s.companyId)),
      runDurableObjectAlarm(stubOf(s.companyId)),
      s.patch(id, "/status", { status: "completed" }),
    ]);
    expect(await historyCount(id)).toBe(1);
    expect((await s.get(id)).expiry_date).toBe(addMonths(date, 1));
  });
});
