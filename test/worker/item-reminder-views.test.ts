// GET /v1/items/{id} answers its reminders from item_reminder_views (src/company-clock/handoff/views.ts) only
// when the view is trustworthy; otherwise from the company's Durable Object, exactly as before.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { snapshotSql } from "../../src/company-clock/handoff/snapshots";
import { clockFor } from "../../src/company-clock/handoff/worker";
import {
  DELETE_COMPANY_VIEWS_SQL,
  DELETE_VIEWS_SQL,
  WRITE_VIEWS_SQL,
  writeViewsStatement,
} from "../../src/company-clock/handoff/views";
import {
  createItem as createItemRow,
  createItemQuery,
  itemDetailQuery,
  setItemStatus,
} from "../../src/records/items/queries";
import { CreateItemSchema } from "../../src/schemas/items";
import { addDays, todayIn } from "../../src/lib/time";
import { call, createAccount, createItem, env, fullScansOf, queryPlan, expectStatus, ok } from "./helpers";

const stubOf = (companyId: number) => clockFor(env, companyId);
const futureDate = (days: number) => addDays(todayIn("UTC"), days);

interface View {
  reminders: string | null;
  version: number;
  zone_version: number;
  gen: number;
  stale_at: number | null;
}

const viewOf = (companyId: number, itemId: number) =>
  env.DB.prepare(
    "SELECT reminders, version, zone_version, gen, stale_at FROM item_reminder_views WHERE company_id = ? AND item_id = ?",
  )
    .bind(companyId, itemId)
    .first<View>();

const outboxOf = (companyId: number, itemId: number) =>
  env.DB.prepare("SELECT version, synced_version FROM reminder_sync WHERE company_id = ? AND item_id = ?")
    .bind(companyId, itemId)
    .first<{ version: number; synced_version: number }>();

/** Overwrites the view row as a test fixture (no generation guard). */
async function putView(companyId: number, itemId: number, view: View) {
  await env.DB.prepare(
    `INSERT INTO item_reminder_views (company_id, item_id, reminders, version, zone_version, gen, stale_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (company_id, item_id) DO UPDATE SET reminders = excluded.reminders, version = excluded.version, zone_version = excluded.zone_version, gen = excluded.gen, stale_at = excluded.stale_at`,
  )
    .bind(companyId, itemId, view.reminders, view.version, view.zone_version, view.gen, view.stale_at)
    .run();
}

/** A view that looks trustworthy in every respect but says something the object never said. */
const FAKE = { queued: [], sent: [{ reminder_id: -1 }] };

async function getDetail(token: string, itemId: number) {
  const res = await call("getItem", `/v1/items/${itemId}`, { token });
  expectStatus(res, 200);
  return { reminders: res.body.data.reminders, etag: res.headers.get("ETag") };
}

/** The item's reminders straight from the object (the reference the view must equal). */
async function truth(token: string, itemId: number) {
  const res = await call("listItemReminders", `/v1/items/${itemId}/reminders`, { token });
  expectStatus(res, 200);
  return res.body.data;
}

/** A company with one item whose view was written by its sync (and is trusted). */
async function itemWithView(body: Record<string, unknown> = {}) {
  const account = await createAccount();
  const item = await createItem(account.ownerToken, { expiry_date: futureDate(100), ...body });
  const view = await viewOf(account.companyId, item.item_id);
  expect(view?.reminders, "the create's sync wrote the view").toBeTruthy();
  return { ...account, item, view: view! };
}

describe("the item's reminder view", () => {
  it("is written by the create's sync, matches the object, and is what GET answers (a planted view shows through)", async () => {
    const { companyId, ownerToken, item, view } = await itemWithView();
    const outbox = await outboxOf(companyId, item.item_id);
    expect(view.version).toBe(outbox!.version);
    expect(outbox!.synced_version).toBe(outbox!.version);
    expect(JSON.parse(view.reminders!)).toEqual(await truth(ownerToken, item.item_id));
    expect(view.stale_at).toBe(Date.parse(item.reminders.queued[0]!.due_at));
    // Control: a trustworthy view is used as it is (so the tests below that expect the truth can fail).
    await putView(companyId, item.item_id, { ...view, reminders: JSON.stringify(FAKE) });
    expect((await getDetail(ownerToken, item.item_id)).reminders).toEqual(FAKE);
  });

  it("gives the same body and ETag from the view as from the object", async () => {
    const { companyId, ownerToken, item } = await itemWithView();
    await env.DB.prepare("DELETE FROM item_reminder_views WHERE company_id = ? AND item_id = ?")
      .bind(companyId, item.item_id)
      .run();
    const fromObject = await getDetail(ownerToken, item.item_id);
    const refilled = await viewOf(companyId, item.item_id);
    expect(refilled?.reminders, "the fallback wrote the view").toBeTruthy();
    const fromView = await getDetail(ownerToken, item.item_id);
    expect(fromView.etag).toBe(fromObject.etag);
    const notModified = await call("getItem", `/v1/items/${item.item_id}`, {
      token: ownerToken,
      headers: { "If-None-Match": fromObject.etag! },
    });
    expectStatus(notModified, 304);
  });

  describe("is not trusted", () => {
    const cases: Array<[string, (view: View, outbox: { version: number }) => View]> = [
      ["past its stale_at", (v) => ({ ...v, stale_at: Date.now() - 1000 })],
      ["within a second of its stale_at", (v) => ({ ...v, stale_at: Date.now() + 500 })],
      ["for another version of the item", (v, o) => ({ ...v, version: o.version - 1 })],
      ["for another time-zone version", (v) => ({ ...v, zone_version: v.zone_version + 1 })],
      ["when invalidated", (v) => ({ ...v, reminders: null })],
    ];
    for (const [label, spoil] of cases) {
      it(label, async () => {
        const { companyId, ownerToken, item, view } = await itemWithView();
        const outbox = (await outboxOf(companyId, item.item_id))!;
        await putView(companyId, item.item_id, {
          ...spoil(view, outbox),
          reminders: spoil(view, outbox).reminders === null ? null : JSON.stringify(FAKE),
        });
        expect((await getDetail(ownerToken, item.item_id)).reminders).toEqual(await truth(ownerToken, item.item_id));
      });
    }

    it("while a change of the item is pending (and the GET applies it first)", async () => {
      const { companyId, ownerToken, item, view } = await itemWithView();
      await putView(companyId, item.item_id, { ...view, reminders: JSON.stringify(FAKE) });
      // A title change in D1 whose sync "failed": version > synced_version.
      await env.DB.prepare("UPDATE items SET title = 'Changed behind the object' WHERE id = ?")
        .bind(item.item_id)
        .run();
      const detail = await getDetail(ownerToken, item.item_id);
      expect(detail.reminders).toEqual(await truth(ownerToken, item.item_id));
      const outbox = await outboxOf(companyId, item.item_id);
      expect(outbox!.synced_version).toBe(outbox!.version);
    });

    it("while a change of the company's settings is pending", async () => {
      const { companyId, ownerToken, item, view } = await itemWithView();
      await putView(companyId, item.item_id, { ...view, reminders: JSON.stringify(FAKE) });
      await env.DB.prepare(
        "UPDATE companies SET settings = json_set(settings, '$.timezone', 'Europe/Berlin') WHERE id = ?",
      )
        .bind(companyId)
        .run();
      expect((await getDetail(ownerToken, item.item_id)).reminders).not.toEqual(FAKE);
    });

    it("when it is another company's (even with the same item id and matching versions)", async () => {
      const { companyId, ownerToken, item, view } = await itemWithView();
      const other = await createAccount();
      await env.DB.prepare("DELETE FROM item_reminder_views WHERE company_id = ? AND item_id = ?")
        .bind(companyId, item.item_id)
        .run();
      await putView(other.companyId, item.item_id, { ...view, reminders: JSON.stringify(FAKE) });
      expect((await getDetail(ownerToken, item.item_id)).reminders).toEqual(await truth(ownerToken, item.item_id));
      // And the fallback wrote the item's own row, leaving the other company's alone.
      expect((await viewOf(other.companyId, item.item_id))!.reminders).toBe(JSON.stringify(FAKE));
      expect(JSON.parse((await viewOf(companyId, item.item_id))!.reminders!)).toEqual(
        await truth(ownerToken, item.item_id),
      );
    });
  });

  describe("follows every change", () => {
    async function expectFresh(token: string, itemId: number) {
      const detail = await getDetail(token, itemId);
      expect(detail.reminders).toEqual(await truth(token, itemId));
      return detail.reminders;
    }

    it("item writes: PATCH (rescheduled), renew, status, archive, delete", async () => {
      const { ownerToken, item } = await itemWithView();
      const id = item.item_id;
      const before = await expectFresh(ownerToken, id);
      const date = futureDate(200);
      const patched = await call("updateItem", `/v1/items/${id}`, {
        token: ownerToken,
        body: { expiry_date: date, reschedule_reminders: true },
      });
      expectStatus(patched, 200);
      const afterPatch = await expectFresh(ownerToken, id);
      expect(afterPatch.queued.at(-1)!.date).toBe(date);
      expect(afterPatch).not.toEqual(before);
      expect(patched.body.data.reminders).toEqual(afterPatch);

      const renewed = await call("renewItem", `/v1/items/${id}/renew`, {
        token: ownerToken,
        body: { expiry_date: futureDate(300) },
      });
      expectStatus(renewed, 200);
      expect((await expectFresh(ownerToken, id)).queued.at(-1)!.date).toBe(futureDate(300));

      expectStatus(
        await call("setItemStatus", `/v1/items/${id}/status`, { token: ownerToken, body: { status: "completed" } }),
        200,
      );
      expect((await expectFresh(ownerToken, id)).queued.every((r: { state: string }) => r.state === "held")).toBe(true);
      expectStatus(
        await call("setItemStatus", `/v1/items/${id}/status`, { token: ownerToken, body: { status: "pending" } }),
        200,
      );
      expect((await expectFresh(ownerToken, id)).queued.every((r: { state: string }) => r.state === "queued")).toBe(
        true,
      );

      expectStatus(
        await call("archiveItem", `/v1/items/${id}/archive`, { token: ownerToken, body: { archived: true } }),
        200,
      );
      expect((await expectFresh(ownerToken, id)).queued.every((r: { state: string }) => r.state === "held")).toBe(true);

      expectStatus(await call("deleteItem", `/v1/items/${id}`, { token: ownerToken }), 200);
      expectStatus(await call("getItem", `/v1/items/${id}`, { token: ownerToken }), 404);
    });

    it("reminder writes: add, update, delete (the view is replaced, by a later generation)", async () => {
      const { companyId, ownerToken, item, view } = await itemWithView({ seqid: 0 });
      const id = item.item_id;
      const added = await call("createItemReminder", `/v1/items/${id}/reminders`, {
        token: ownerToken,
        body: { date: futureDate(10), hour: "08:15" },
      });
      expectStatus(added, 201);
      const afterAdd = await expectFresh(ownerToken, id);
      expect(afterAdd.queued.map((r: { reminder_id: number }) => r.reminder_id)).toEqual([added.body.data.reminder_id]);
      const written = (await viewOf(companyId, id))!;
      expect(written.gen).toBeGreaterThan(view.gen);
      expect(JSON.parse(written.reminders!)).toEqual(afterAdd);

      const rid = added.body.data.reminder_id;
      expectStatus(
        await call("updateItemReminder", `/v1/items/${id}/reminders/${rid}`, {
          token: ownerToken,
          body: { hour: "10:45" },
        }),
        200,
      );
      expect((await expectFresh(ownerToken, id)).queued[0]!.hour).toBe("10:45");

      expectStatus(await call("deleteItemReminder", `/v1/items/${id}/reminders/${rid}`, { token: ownerToken }), 200);
      expect((await expectFresh(ownerToken, id)).queued).toEqual([]);
    });

    it("a reminder change invalidates the view before it is made: a refused one leaves no old view behind", async () => {
      const { companyId, ownerToken, item, view } = await itemWithView({ seqid: 0 });
      const refused = await call("updateItemReminder", `/v1/items/${item.item_id}/reminders/999999`, {
        token: ownerToken,
        body: { hour: "10:45" },
      });
      expectStatus(refused, 404);
      expect((await viewOf(companyId, item.item_id))!.gen).toBeGreaterThan(view.gen);
    });

    it("firing: after the alarm sends a reminder, GET lists it under sent", async () => {
      const { companyId, ownerToken, item } = await itemWithView({ seqid: 0 });
      const added = ok(
        await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
          token: ownerToken,
          body: { date: futureDate(5), hour: "09:00" },
        }),
      );
      const rid = added.body.data.reminder_id;
      expect((await getDetail(ownerToken, item.item_id)).reminders.queued).toHaveLength(1);
      // Its minute comes (moved inside the object, which the view's stale_at cannot know: only the
      // alarm's invalidation tells the readers).
      await runInDurableObject(stubOf(companyId), (_i, state) => {
        state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE reminder_id = ?", Date.now() - 1000, rid);
      });
      expect(await runDurableObjectAlarm(stubOf(companyId))).toBe(true);
      const after = await getDetail(ownerToken, item.item_id);
      expect(after.reminders.queued).toEqual([]);
      expect(after.reminders.sent.map((r: { reminder_id: number }) => r.reminder_id)).toEqual([rid]);
      expect(after.reminders).toEqual(await truth(ownerToken, item.item_id));
    });
  });

  it("an item write returns the snapshot its own batch read (what sync applies without reading D1 again)", async () => {
    const { companyId } = await createAccount();
    const db = database(env.DB);
    const input = CreateItemSchema.parse({ title: "Snapshot", expiry_date: futureDate(50) });
    const { row, snapshot } = await createItemRow(db, companyId, 1, input);
    expect(snapshot?.company).toMatchObject({ exists: true, timezone: "UTC" });
    expect(snapshot?.items).toEqual([
      expect.objectContaining({
        itemId: row.id,
        present: true,
        title: "Snapshot",
        anchor: input.expiry_date,
        epoch: 1,
        held: false,
        version: 1,
      }),
    ]);
    expect(snapshot!.items[0]!.steps).toHaveLength(5);
    const completed = await setItemStatus(db, companyId, 1, row.id, "completed");
    expect(completed.snapshot?.items).toEqual([expect.objectContaining({ itemId: row.id, held: true, version: 2 })]);
  });

  it("a burst of creates (bookkeeping merged into shared D1 batches) leaves every item synced with its own view", async () => {
    const { companyId, ownerToken } = await createAccount();
    const created = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        call("createItem", "/v1/items", {
          token: ownerToken,
          body: { title: `Burst ${i}`, expiry_date: futureDate(40 + i) },
        }),
      ),
    );
    for (const res of created) {
      expectStatus(res, 201);
      const id = res.body.data.item_id;
      const outbox = (await outboxOf(companyId, id))!;
      expect(outbox.synced_version).toBe(outbox.version);
      const view = (await viewOf(companyId, id))!;
      expect(view.version).toBe(outbox.version);
      expect(JSON.parse(view.reminders!)).toEqual(await truth(ownerToken, id));
      expect(JSON.parse(view.reminders!).queued.at(-1).date).toBe(res.body.data.expiry_date);
    }
  });

  it("a write of an older generation never replaces a newer view", async () => {
    const { companyId } = await createAccount();
    const row = (gen: number, text: string) => ({
      itemId: 424242,
      reminders: text,
      version: 1,
      zoneVersion: 0,
      gen,
      staleAt: null,
    });
    await writeViewsStatement(env.DB, companyId, [row(5, "five")]).run();
    await writeViewsStatement(env.DB, companyId, [row(3, "three")]).run();
    expect((await viewOf(companyId, 424242))!.reminders).toBe("five");
    await writeViewsStatement(env.DB, companyId, [row(6, "six")]).run();
    expect((await viewOf(companyId, 424242))!.reminders).toBe("six");
  });
});

describe("query plans of the view and snapshot statements", () => {
  const db = database(env.DB);
  const raw = (statement: string, ...params: unknown[]) => ({ toSQL: () => ({ sql: statement, params }) });
  const tables = [
    "items",
    "reminder_sync",
    "zone_sync",
    "item_reminder_views",
    "reminder_sequences",
    "webhook_events",
    "companies",
    "document_types",
  ];
  const expectNoScan = (plan: string) => {
    for (const table of tables) expect(fullScansOf(table, plan), plan).toEqual([]);
  };

  it("the item read joins its view and outbox rows by primary key", async () => {
    const plan = await queryPlan(itemDetailQuery(db, 1, 12));
    expectNoScan(plan);
    expect(plan, plan).toMatch(/SEARCH item_reminder_views USING PRIMARY KEY \(company_id=\? AND item_id=\?\)/);
    expect(plan, plan).toMatch(
      /SEARCH zone_sync USING INDEX sqlite_autoindex_reminder_sync_1 \(company_id=\? AND item_id=\?\)/,
    );
  });

  it("the snapshot statements (by ids and of the row just inserted) read by key", async () => {
    for (const source of [[1, 2, 3], "inserted" as const]) {
      for (const query of snapshotSql(1, source)) expectNoScan(await queryPlan(query));
    }
  });

  it("the create's INSERT looks its references up by key", async () => {
    for (const body of [
      {},
      { deptid: 2, folder_id: 3, contact_id: 4 },
      { document_type_id: 5 },
      { document_type: "Permit" },
      { seqid: 7 },
    ]) {
      const input = CreateItemSchema.parse({ title: "t", expiry_date: "2030-01-01", ...body });
      const plan = await queryPlan(createItemQuery(1, 1, input)!);
      for (const table of [...tables, "departments", "folders", "contacts"])
        expect(fullScansOf(table, plan), plan).toEqual([]);
      // The aliases of the subqueries (t, d, s, f, k, c) are tables too.
      for (const alias of ["t", "d", "s", "f", "k", "c"]) expect(fullScansOf(alias, plan), plan).toEqual([]);
    }
  });

  it("view writes and deletes find rows by primary key", async () => {
    expectNoScan(await queryPlan(raw(WRITE_VIEWS_SQL, 1, "[[1, null, 1, 0, 1, null]]")));
    const del = await queryPlan(raw(DELETE_VIEWS_SQL, 1, "[1]"));
    expectNoScan(del);
    expect(del, del).toMatch(/SEARCH item_reminder_views USING PRIMARY KEY \(company_id=\? AND item_id=\?\)/);
    const all = await queryPlan(raw(DELETE_COMPANY_VIEWS_SQL, 1));
    expect(all, all).toMatch(/SEARCH item_reminder_views USING PRIMARY KEY \(company_id=\?\)/);
  });
});
