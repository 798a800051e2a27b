// Acknowledgement and snooze of an item's current occurrence (docs/reminders.md, "Acknowledgement
// and snooze"): the records' actions a recipient's page calls (src/records/items/actions.ts) and the
// API's routes over them, their guards under concurrent calls, the audit entry naming the contact
// and `via`, the detail and the list filter.
import { beforeAll, describe, expect, it } from "vitest";
import { recipientDb } from "./support/recipient";
import {
  acknowledgeItem,
  itemActionState,
  snoozeItem,
  unacknowledgeItem,
  unsnoozeItem,
} from "../../src/records/items/actions";
import { renewItem } from "../../src/records/items/queries";
import { addDays, todayIn } from "../../src/lib/time";
import { WebhookPayloadSchema } from "../../src/schemas/webhooks";
import {
  call,
  createAccount,
  createContact,
  createItem,
  env,
  expectShapeB,
  expectStatus,
  ok,
  type TestAccount,
} from "./helpers";

let account: TestAccount;
beforeAll(async () => {
  account = await createAccount();
});

const entriesOf = async (requestId: string) =>
  ok(
    await call("listAuditLog", `/v1/audit-log?resource_type=item&limit=200`, { token: account.ownerToken }),
  ).body.data.filter((e) => e.request_id === requestId);

describe("the records' actions (a recipient's page)", () => {
  it("acknowledges once, names the contact and via in the audit entry, and answers unchanged after", async () => {
    const contact = await createContact(account.ownerToken);
    const item = await createItem(account.ownerToken, { contact_id: contact.contact_id });
    const state = await itemActionState(recipientDb(contact.contact_id), account.companyId, item.item_id);
    expect(state).toMatchObject({
      item_id: item.item_id,
      status: "pending",
      archived: false,
      acknowledgement: null,
      snoozed_until: null,
      epoch: 1,
    });

    const requestId = crypto.randomUUID();
    const by = { type: "contact" as const, id: contact.contact_id };
    const first = await acknowledgeItem(recipientDb(contact.contact_id, requestId), account.companyId, item.item_id, {
      by,
      via: "link",
      occurrence: 1,
      note: "on it",
    });
    expect(first.outcome).toBe("applied");
    expect(first.item.acknowledgement).toMatchObject({ by, via: "link", note: "on it" });
    expect(first.snapshot?.items[0]).toMatchObject({ itemId: item.item_id, acknowledged: true });

    const again = await acknowledgeItem(recipientDb(contact.contact_id), account.companyId, item.item_id, {
      by,
      via: "link",
      occurrence: 1,
    });
    expect(again.outcome).toBe("unchanged");
    expect(again.item.acknowledgement).toEqual(first.item.acknowledgement);

    const [entry] = await entriesOf(requestId);
    expect(entry).toMatchObject({
      actor: { client_id: null, user_id: null, contact_id: contact.contact_id, via: "link" },
      operation_id: "recipientAction",
      action: "updated",
      before: { acknowledgement: null },
      after: { acknowledgement: { by, via: "link", note: "on it" } },
    });
  });

  it("changes nothing for an occurrence the item has left, or a completed item", async () => {
    const contact = await createContact(account.ownerToken);
    const item = await createItem(account.ownerToken, { contact_id: contact.contact_id });
    expectStatus(await call("renewItem", `/v1/items/${item.item_id}/renew`, { token: account.ownerToken }), 200);
    const by = { type: "contact" as const, id: contact.contact_id };
    const stale = await acknowledgeItem(recipientDb(contact.contact_id), account.companyId, item.item_id, {
      by,
      via: "link",
      occurrence: 1,
    });
    expect(stale).toMatchObject({ outcome: "moved_on", reason: "renewed", item: { epoch: 2, acknowledgement: null } });
    const snooze = await snoozeItem(recipientDb(contact.contact_id), account.companyId, item.item_id, {
      by,
      via: "link",
      occurrence: 1,
      until: addDays(todayIn("UTC"), 3),
    });
    expect(snooze).toMatchObject({ outcome: "moved_on", reason: "renewed", item: { snoozed_until: null } });

    expectStatus(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, {
        token: account.ownerToken,
        body: { status: "completed" },
      }),
      200,
    );
    const done = await acknowledgeItem(recipientDb(contact.contact_id), account.companyId, item.item_id, {
      by,
      via: "link",
      occurrence: 2,
    });
    expect(done).toMatchObject({ outcome: "moved_on", reason: "completed" });
  });

  it("of 8 concurrent acknowledgements one applies, with one audit entry and one webhook event's worth of change", async () => {
    const contact = await createContact(account.ownerToken);
    const item = await createItem(account.ownerToken, { contact_id: contact.contact_id });
    const requestId = crypto.randomUUID();
    const by = { type: "contact" as const, id: contact.contact_id };
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        acknowledgeItem(recipientDb(contact.contact_id, requestId), account.companyId, item.item_id, {
          by,
          via: "link",
          occurrence: 1,
        }),
      ),
    );
    expect(results.filter((r) => r.outcome === "applied")).toHaveLength(1);
    expect(results.filter((r) => r.outcome === "unchanged")).toHaveLength(7);
    expect(await entriesOf(requestId)).toHaveLength(1);
  });

  it("takes an acknowledgement back and ends a snooze, each once", async () => {
    const contact = await createContact(account.ownerToken);
    const item = await createItem(account.ownerToken, { contact_id: contact.contact_id });
    const by = { type: "contact" as const, id: contact.contact_id };
    const db = recipientDb(contact.contact_id);
    expect((await unacknowledgeItem(db, account.companyId, item.item_id, { by, via: "link" })).outcome).toBe(
      "unchanged",
    );
    await acknowledgeItem(db, account.companyId, item.item_id, { by, via: "link" });
    expect((await unacknowledgeItem(db, account.companyId, item.item_id, { by, via: "link" })).outcome).toBe("applied");
    expect((await unacknowledgeItem(db, account.companyId, item.item_id, { by, via: "link" })).outcome).toBe(
      "unchanged",
    );

    const until = addDays(todayIn("UTC"), 5);
    expect(await snoozeItem(db, account.companyId, item.item_id, { by, via: "link", until })).toMatchObject({
      outcome: "applied",
      item: { snoozed_until: until },
    });
    expect((await snoozeItem(db, account.companyId, item.item_id, { by, via: "link", until })).outcome).toBe(
      "unchanged",
    );
    expect((await unsnoozeItem(db, account.companyId, item.item_id, { by, via: "link" })).outcome).toBe("applied");
    expect((await unsnoozeItem(db, account.companyId, item.item_id, { by, via: "link" })).outcome).toBe("unchanged");
  });
});

describe("the API's routes", () => {
  it("acknowledges (200, twice the same), shows it on the detail, filters the list, and takes it back", async () => {
    const item = await createItem(account.ownerToken);
    const path = `/v1/items/${item.item_id}/acknowledge`;
    const first = await call("acknowledgeItem", path, {
      token: account.ownerToken,
      body: { note: "Booked the inspector" },
    });
    expectStatus(first, 200, JSON.stringify(first.body));
    expect(first.body).toMatchObject({
      msg: "Item acknowledged",
      data: {
        item_id: item.item_id,
        acknowledgement: { by: { type: "client" }, via: "api", note: "Booked the inspector" },
      },
    });
    const second = await call("acknowledgeItem", path, { token: account.ownerToken });
    expect(second.body).toMatchObject({
      msg: "Item was already acknowledged",
      data: { acknowledgement: first.body.data.acknowledgement },
    });

    const detail = ok(await call("getItem", `/v1/items/${item.item_id}`, { token: account.ownerToken }));
    expect(detail.body.data.acknowledgement).toEqual(first.body.data.acknowledgement);
    expect(detail.body.data.snoozed_until).toBeNull();

    const acknowledged = ok(
      await call("listItems", "/v1/items?acknowledged=true&limit=200", { token: account.ownerToken }),
    );
    expect(acknowledged.body.data.map((i: { item_id: number }) => i.item_id)).toContain(item.item_id);
    const open = ok(await call("listItems", "/v1/items?acknowledged=false&limit=200", { token: account.ownerToken }));
    expect(open.body.data.map((i: { item_id: number }) => i.item_id)).not.toContain(item.item_id);

    const back = await call("unacknowledgeItem", path, { token: account.ownerToken });
    expect(back.body).toMatchObject({ msg: "Acknowledgement taken back", data: { acknowledgement: null } });
    expect(
      ok(await call("getItem", `/v1/items/${item.item_id}`, { token: account.ownerToken })).body.data.acknowledgement,
    ).toBeNull();
  });

  it("refuses a completed item (409), a bad note, and an unknown item (404)", async () => {
    const item = await createItem(account.ownerToken);
    await call("setItemStatus", `/v1/items/${item.item_id}/status`, {
      token: account.ownerToken,
      body: { status: "completed" },
    });
    expectShapeB(
      await call("acknowledgeItem", `/v1/items/${item.item_id}/acknowledge`, { token: account.ownerToken }),
      409,
      /is completed/,
    );
    expectShapeB(
      await call("acknowledgeItem", `/v1/items/${item.item_id}/acknowledge`, {
        token: account.ownerToken,
        body: { note: "x".repeat(501) },
      }),
      400,
      /note/,
    );
    expectShapeB(await call("acknowledgeItem", `/v1/items/999999999/acknowledge`, { token: account.ownerToken }), 404);
  });

  it("snoozes until a date after today and at most a year ahead", async () => {
    const item = await createItem(account.ownerToken);
    const path = `/v1/items/${item.item_id}/snooze`;
    const today = todayIn("UTC");
    expectShapeB(
      await call("snoozeItem", path, { token: account.ownerToken, body: { until: today } }),
      400,
      /after today/,
    );
    expectShapeB(
      await call("snoozeItem", path, { token: account.ownerToken, body: { until: addDays(today, -1) } }),
      400,
      /after today/,
    );
    expectShapeB(
      await call("snoozeItem", path, { token: account.ownerToken, body: { until: addDays(today, 366) } }),
      400,
      /at most 365 days/,
    );
    expectShapeB(
      await call("snoozeItem", path, { token: account.ownerToken, body: { until: "2027-02-30" } }),
      400,
      /until/,
    );
    const until = addDays(today, 2);
    const snoozed = await call("snoozeItem", path, { token: account.ownerToken, body: { until } });
    expect(snoozed.body).toMatchObject({ msg: `Item snoozed until ${until}`, data: { snoozed_until: until } });
    expect(
      ok(await call("getItem", `/v1/items/${item.item_id}`, { token: account.ownerToken })).body.data.snoozed_until,
    ).toBe(until);
    expect(ok(await call("unsnoozeItem", path, { token: account.ownerToken })).body).toMatchObject({
      msg: "Snooze ended",
      data: { snoozed_until: null },
    });
  });

  it("a renewal starts the next occurrence unacknowledged and unsnoozed", async () => {
    const item = await createItem(account.ownerToken);
    await call("acknowledgeItem", `/v1/items/${item.item_id}/acknowledge`, { token: account.ownerToken });
    await call("snoozeItem", `/v1/items/${item.item_id}/snooze`, {
      token: account.ownerToken,
      body: { until: addDays(todayIn("UTC"), 2) },
    });
    await call("renewItem", `/v1/items/${item.item_id}/renew`, { token: account.ownerToken });
    const detail = ok(await call("getItem", `/v1/items/${item.item_id}`, { token: account.ownerToken })).body.data;
    expect(detail).toMatchObject({ acknowledgement: null, snoozed_until: null });
  });
});

describe("webhook events and keyed requests", () => {
  it("records item.acknowledged, item.unacknowledged, item.snoozed and item.unsnoozed with by and via, and nothing for a renewal's clearing", async () => {
    const owner = await createAccount();
    const hook = await call("createWebhook", "/v1/webhooks", {
      token: owner.ownerToken,
      body: { url: "http://127.0.0.1:9/hook", events: ["*"] },
    });
    expectStatus(hook, 201, JSON.stringify(hook.body));
    const contact = await createContact(owner.ownerToken);
    const item = await createItem(owner.ownerToken, { contact_id: contact.contact_id });
    // The records' actions alone (no sync), so the events wait in D1's outbox where the test reads them.
    const db = recipientDb(contact.contact_id);
    const by = { type: "contact" as const, id: contact.contact_id };
    await env.DB.prepare("DELETE FROM webhook_events WHERE company_id = ?").bind(owner.companyId).run();
    const until = addDays(todayIn("UTC"), 4);
    await acknowledgeItem(db, owner.companyId, item.item_id, { by, via: "link", note: "ok" });
    await acknowledgeItem(db, owner.companyId, item.item_id, { by, via: "link" });
    await snoozeItem(db, owner.companyId, item.item_id, { by, via: "link", until });
    await unsnoozeItem(db, owner.companyId, item.item_id, { by, via: "link" });
    await unacknowledgeItem(db, owner.companyId, item.item_id, { by, via: "link" });
    await acknowledgeItem(db, owner.companyId, item.item_id, { by, via: "link" });
    await renewItem(db, owner.companyId, 0, item.item_id);
    const { results } = await env.DB.prepare("SELECT type, data FROM webhook_events WHERE company_id = ? ORDER BY id")
      .bind(owner.companyId)
      .all<{ type: string; data: string }>();
    expect(results.map((e) => e.type)).toEqual([
      "item.acknowledged",
      "item.snoozed",
      "item.unsnoozed",
      "item.unacknowledged",
      "item.acknowledged",
      "item.renewed",
    ]);
    const payloads = results.map((e) => ({
      type: e.type,
      timestamp: "2027-01-01T00:00:00.000Z",
      data: JSON.parse(e.data),
    }));
    for (const payload of payloads)
      expect(WebhookPayloadSchema.safeParse(payload).success, JSON.stringify(payload)).toBe(true);
    expect(payloads[0]!.data).toMatchObject({
      item_id: item.item_id,
      acknowledgement: { by, via: "link", note: "ok" },
      snoozed_until: null,
      by,
      via: "link",
    });
    expect(payloads[1]!.data).toMatchObject({ snoozed_until: until, acknowledgement: { note: "ok" }, by, via: "link" });
    expect(payloads[3]!.data).toMatchObject({ acknowledgement: null, by, via: "link" });
  });

  it("honours Idempotency-Key: the same acknowledgement again is the stored answer; another body with the key is 422", async () => {
    const item = await createItem(account.ownerToken);
    const key = crypto.randomUUID();
    const path = `/v1/items/${item.item_id}/acknowledge`;
    const first = await call("acknowledgeItem", path, {
      token: account.ownerToken,
      body: { note: "a" },
      headers: { "Idempotency-Key": key },
    });
    expectStatus(first, 200);
    const again = await call("acknowledgeItem", path, {
      token: account.ownerToken,
      body: { note: "a" },
      headers: { "Idempotency-Key": key },
    });
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expectShapeB(
      await call("acknowledgeItem", path, {
        token: account.ownerToken,
        body: { note: "b" },
        headers: { "Idempotency-Key": key },
      }),
      422,
    );
  });

  it("honours If-Match: a stale ETag is 412 and changes nothing", async () => {
    const item = await createItem(account.ownerToken);
    const etag = (await call("getItem", `/v1/items/${item.item_id}`, { token: account.ownerToken })).headers.get(
      "ETag",
    )!;
    await call("updateItem", `/v1/items/${item.item_id}`, { token: account.ownerToken, body: { notes: "changed" } });
    expectShapeB(
      await call("acknowledgeItem", `/v1/items/${item.item_id}/acknowledge`, {
        token: account.ownerToken,
        headers: { "If-Match": etag },
      }),
      412,
    );
    expect(
      ok(await call("getItem", `/v1/items/${item.item_id}`, { token: account.ownerToken })).body.data.acknowledgement,
    ).toBeNull();
  });
});
