import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { schedulerFor } from "../../src/reminders/scheduler";
import { localToInstant, todayIn, addDays } from "../../src/lib/time";
import { call, createAccount, createContact, createItem, env, expectShapeB } from "./helpers";

const stubOf = (companyId: number) => schedulerFor(env, companyId);

/** Moves a reminder's instant into the past inside the Durable Object (as if its minute had come). */
async function backdate(companyId: number, reminderId: number, msAgo = 1000) {
  await runInDurableObject(stubOf(companyId), (_i, state) => {
    state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE reminder_id = ?", Date.now() - msAgo, reminderId);
  });
}

function futureDate(days: number) {
  return addDays(todayIn("UTC"), days);
}

describe("reminders of an item", () => {
  it("queues the company's default sequence for a new item (30, 14, 7, 1 days before and on the day, 09:00)", async () => {
    const { ownerToken } = await createAccount();
    const date = futureDate(100);
    const item = await createItem(ownerToken, { expiry_date: date });
    expect(item.reminders.sent).toEqual([]);
    expect(item.reminders.queued.map((r: any) => [r.date, r.hour, r.sent])).toEqual([
      [addDays(date, -30), "09:00", false],
      [addDays(date, -14), "09:00", false],
      [addDays(date, -7), "09:00", false],
      [addDays(date, -1), "09:00", false],
      [date, "09:00", false],
    ]);
    const list = await call("GET", `/v1/items/${item.item_id}/reminders`, { token: ownerToken });
    expect(list.status).toBe(200);
    expect(list.body.data.queued).toEqual(item.reminders.queued);
  });

  it("skips steps whose time has passed, and queues nothing with seqid 0", async () => {
    const { ownerToken } = await createAccount();
    const soon = await createItem(ownerToken, { expiry_date: futureDate(3) });
    expect(soon.reminders.queued.map((r: any) => r.date)).toEqual([futureDate(2), futureDate(3)]);
    const none = await createItem(ownerToken, { expiry_date: futureDate(100), seqid: 0 });
    expect(none.reminders.queued).toEqual([]);
    expect(none.seqid).toBe(0);
    const bad = await call("POST", "/v1/items", { token: ownerToken, body: { title: "x", expiry_date: futureDate(5), seqid: 999999 } });
    expectShapeB(bad, 400, /seqid 999999/);
  });

  it("fires a reminder at its minute exactly once, lists it as triggered and emails the item's contact", async () => {
    const { companyId, ownerToken } = await createAccount();
    const contact = await createContact(ownerToken);
    const item = await createItem(ownerToken, { expiry_date: futureDate(20), seqid: 0, contact_id: contact.contact_id ?? contact.id });
    const at = new Date(Date.now() + 2 * 60_000);
    const hour = `${String(at.getUTCHours()).padStart(2, "0")}:${String(at.getUTCMinutes()).padStart(2, "0")}`;
    const created = await call("POST", `/v1/items/${item.item_id}/reminders`, { token: ownerToken, body: { date: at.toISOString().slice(0, 10), hour } });
    expect(created.status).toBe(201);
    expect(created.body.msg).toBe("Reminder queued");
    const id = created.body.data.reminder_id;
    expect(created.body.data).toMatchObject({ sent: false, state: "queued", origin: "manual", channels: ["email"], contact_id: 0 });
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 1 });

    await backdate(companyId, id);
    expect(await runDurableObjectAlarm(stubOf(companyId))).toBe(true);
    const after = await call("GET", `/v1/items/${item.item_id}/reminders`, { token: ownerToken });
    expect(after.body.data.queued).toEqual([]);
    expect(after.body.data.sent).toHaveLength(1);
    const sent = after.body.data.sent[0];
    expect(sent).toMatchObject({ reminder_id: id, sent: true, state: "sent" });
    expect(sent.deliveries).toEqual([expect.objectContaining({ channel: "email", state: "sent", attempts: 1 })]);
    expect(sent.deliveries[0].recipient).toMatch(/@/);

    const triggered = await call("GET", "/v1/reminders/triggered?limit=5", { token: ownerToken });
    expect(triggered.status).toBe(200);
    expect(triggered.body.data).toEqual([expect.objectContaining({ reminder_id: id, item_id: item.item_id, title: item.title })]);

    // A second alarm run finds nothing to send.
    await runDurableObjectAlarm(stubOf(companyId));
    const again = await call("GET", "/v1/reminders/triggered", { token: ownerToken });
    expect(again.body.data).toHaveLength(1);
    const detail = await call("GET", `/v1/items/${item.item_id}/reminders`, { token: ownerToken });
    expect(detail.body.data.sent[0].deliveries[0].attempts).toBe(1);
  });
});
