// End to end: more reminder emails fall due at once than one alarm run delivers (DELIVERY_BATCH),
// and the real `wrangler dev` runtime must chain the alarm runs by itself until all are out: no
// manual alarm call, no cron sweep (wrangler dev runs it only on /__scheduled). Progress is read from
// the local email simulation only: a call to the company's Durable Object could arm its alarm again
// and hide a lost re-arm.
import { afterAll, beforeAll, expect, it } from "vitest";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

// The Worker's DELIVERY_BATCH (src/company-clock/reminder-delivery.ts) and MAX_STEPS (src/schemas/reminder-sequences.ts):
// copied, since the e2e files are type-checked as Node code that cannot import the Worker's modules.
const DELIVERY_BATCH = 200;
const MAX_STEPS = 20;
/** ITEMS × STEPS reminders (one email each) fall due together: three alarm runs of DELIVERY_BATCH. */
const STEPS = MAX_STEPS;
const ITEMS = 25;

let service: Service | undefined;

beforeAll(async () => {
  service = await startService("expiry-e2e-alarm-");
});

afterAll(async () => {
  await service?.stop();
});

const api = (method: string, path: string, token?: string, body?: unknown) =>
  callApi(service!.base, method, path, token, body);

/** Every message the local email simulation holds, oldest first (pages of 100). */
async function sentEmails(): Promise<Array<{ to: string[]; subject: string }>> {
  const all: Array<{ to: string[]; subject: string }> = [];
  let cursor = "";
  for (;;) {
    const page = await api(
      "GET",
      `/cdn-cgi/explorer/api/local/email/sending?per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    expect(page.status).toBe(200);
    all.push(...page.body.result);
    if (!page.body.result_info?.has_more) return all;
    cursor = page.body.result_info.cursor;
  }
}

const hhmm = (at: Date) => at.toISOString().slice(11, 16);

it("a backlog of due emails larger than one alarm run is delivered by alarms the runtime chains by itself", async () => {
  expect(ITEMS * STEPS).toBeGreaterThan(2 * DELIVERY_BATCH);
  const token = await ownerToken(service!.base);
  const email = `chain-${Date.now()}@example.com`;
  const contact = await api("POST", "/v1/contacts", token, { first_name: "Chain", last_name: "Tester", email });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);

  // STEPS minutes on one day about 2 h ahead in the company's zone (UTC): in the future now, and
  // 14 h in the past once the zone becomes Pacific/Kiritimati (UTC+14), which keeps each waiting
  // reminder's local date and hour: then all of them are due at once.
  const start = new Date(Math.ceil((Date.now() + 2 * 3_600_000) / 60_000) * 60_000);
  const crossesMidnight = start.getUTCHours() * 60 + start.getUTCMinutes() + STEPS > 24 * 60;
  const first = crossesMidnight
    ? new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 1))
    : start;
  const day = first.toISOString().slice(0, 10);
  const steps = Array.from({ length: STEPS }, (_, k) => ({
    period: 0,
    unit: "day",
    type: 1,
    hour: hhmm(new Date(first.getTime() + k * 60_000)),
  }));
  const sequence = await api("POST", "/v1/reminder-sequences", token, { name: "Chain test", reminders: steps });
  expect(sequence.status, JSON.stringify(sequence.body)).toBe(201);

  const items: Array<{ id: number; title: string }> = [];
  for (let i = 0; i < ITEMS; i++) {
    const title = `Chain permit ${String(i).padStart(2, "0")}`;
    const item = await api("POST", "/v1/items", token, {
      title,
      expiry_date: day,
      seqid: sequence.body.data.seqid,
      contact_id: contact.body.data.contact_id,
    });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    items.push({ id: item.body.data.item_id, title });
  }
  expect(await sentEmails()).toEqual([]);

  const started = Date.now();
  const rezoned = await api("PATCH", "/v1/companies/1/settings", token, { timezone: "Pacific/Kiritimati" });
  expect(rezoned.status, JSON.stringify(rezoned.body)).toBe(200);

  let emails: Array<{ to: string[]; subject: string }> = [];
  const deadline = started + 30_000;
  while (Date.now() < deadline) {
    emails = (await sentEmails()).filter((m) => m.to.includes(email));
    if (emails.length >= ITEMS * STEPS) break;
    await sleep(500);
  }
  expect(emails.length, `emails out after ${Date.now() - started} ms\n${service!.output().slice(-2000)}`).toBe(
    ITEMS * STEPS,
  );
  // Exactly once: STEPS messages per item, and the API shows every reminder sent with one attempt.
  for (const item of items) expect(emails.filter((m) => m.subject.includes(item.title)).length, item.title).toBe(STEPS);
  for (const item of items) {
    const list = await api("GET", `/v1/items/${item.id}/reminders`, token);
    expect(list.body.data.queued).toEqual([]);
    expect(list.body.data.sent).toHaveLength(STEPS);
    for (const sent of list.body.data.sent)
      expect(sent.deliveries).toEqual([
        expect.objectContaining({ channel: "email", state: "sent", attempts: 1, recipient: email }),
      ]);
  }
}, 120_000);
