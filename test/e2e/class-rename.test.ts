// End to end: local state survives the class rename ReminderScheduler -> CompanyClock (wrangler.toml
// migration v2). `wrangler dev` does not apply renamed_classes to local state, so `npm start`
// carries it (scripts/lib/do-rename.ts). The old state is made by the runtime itself: the service
// is started as it was before the rename (its clock exported and bound as ReminderScheduler,
// migrations up to v1) and given an item with queued sequence reminders, a manual reminder far
// ahead and one due about a minute later (manual reminders exist only in the Durable Object). It is
// stopped, then started as `npm start` starts it. The reminder that fell due meanwhile must be
// delivered by the carried alarm, before anything calls the object, and the item's reminders must
// be the same ones (same ids, the manual ones included), not queued again from D1.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { classDir } from "../../scripts/lib/do-rename.ts";
import { ensureDevVars, ROOT, writeWorkerVariant } from "../../scripts/lib/local.ts";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

const WORKER = "expiry-reminder-api";

let service: Service | undefined;
const workDir = mkdtempSync(join(tmpdir(), "expiry-e2e-rename-worker-"));

afterAll(async () => {
  await service?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

/** The service as deployed before the rename: the same code, its clock class named ReminderScheduler. */
function preRenameConfig(): string {
  ensureDevVars(); // the variant gets a copy of .dev.vars: make sure there is one, as start.ts would
  const entry = `import worker, { CompanyClock, ImportWorkflow } from ${JSON.stringify(join(ROOT, "src", "index.ts"))};
// The company clock under its name before the rename (wrangler.toml migration v1).
export class ReminderScheduler extends CompanyClock {}
export { ImportWorkflow };
export default worker;
`;
  return writeWorkerVariant(workDir, "pre-rename-entry.js", entry, (toml) => {
    const before = toml
      .replace(/^class_name = "CompanyClock"$/m, 'class_name = "ReminderScheduler"')
      .replace(/^\[\[migrations\]\]\ntag = "v2"\nrenamed_classes = .*\n/m, "");
    if (!before.includes('class_name = "ReminderScheduler"') || before.includes("renamed_classes"))
      throw new Error("wrangler.toml no longer has the shape this test rewrites");
    return before;
  });
}

const api = (method: string, path: string, token?: string, body?: unknown) =>
  callApi(service!.base, method, path, token, body);

/** Messages the local email simulation holds for `to` (read without calling the Durable Object). */
async function emailsTo(to: string): Promise<Array<{ to: string[]; subject: string }>> {
  const page = await api("GET", "/cdn-cgi/explorer/api/local/email/sending?per_page=100");
  expect(page.status).toBe(200);
  return (page.body.result as Array<{ to: string[]; subject: string }>).filter((m) => m.to.includes(to));
}

const objectFiles = (dir: string) =>
  existsSync(dir) ? readdirSync(dir).filter((f) => /^[0-9a-f]{64}\.sqlite$/.test(f)) : [];

it("`npm start` on state from before the rename keeps each company clock's reminders and alarm", async () => {
  service = await startService("expiry-e2e-rename-", ["--config", preRenameConfig()]);
  const persistDir = service.persistDir;
  let bearer = await ownerToken(service!.base);
  const email = `rename-${Date.now()}@example.com`;
  const contact = await api("POST", "/v1/contacts", bearer, { first_name: "Rename", last_name: "Tester", email });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  const item = await api("POST", "/v1/items", bearer, {
    title: "Renamed clock permit",
    expiry_date: "2031-05-01",
    contact_id: contact.body.data.contact_id,
  });
  expect(item.status, JSON.stringify(item.body)).toBe(201);
  const itemId = item.body.data.item_id as number;
  // The next whole minute at least 50 s ahead, in the demo company's zone (UTC): after the restart.
  const soon = new Date(Math.ceil((Date.now() + 50_000) / 60_000) * 60_000).toISOString();
  const dueSoon = await api("POST", `/v1/items/${itemId}/reminders`, bearer, {
    date: soon.slice(0, 10),
    hour: soon.slice(11, 16),
  });
  expect(dueSoon.status, JSON.stringify(dueSoon.body)).toBe(201);
  const later = await api("POST", `/v1/items/${itemId}/reminders`, bearer, { date: "2030-06-01", hour: "10:00" });
  expect(later.status, JSON.stringify(later.body)).toBe(201);
  const before = (await api("GET", `/v1/items/${itemId}/reminders`, bearer)).body.data;
  const queuedIds = before.queued.map((r: { reminder_id: number }) => r.reminder_id);
  expect(queuedIds).toEqual(expect.arrayContaining([dueSoon.body.data.reminder_id, later.body.data.reminder_id]));
  expect(before.queued.filter((r: { origin: string }) => r.origin === "sequence").length).toBeGreaterThan(0);
  expect(before.sent).toEqual([]);
  await service.halt();

  // What a checkout from before the rename leaves: the objects under the old class only.
  const oldDir = classDir(persistDir, WORKER, "ReminderScheduler");
  const newDir = classDir(persistDir, WORKER, "CompanyClock");
  expect(objectFiles(oldDir).length).toBeGreaterThan(0);
  expect(objectFiles(newDir)).toEqual([]);

  const restarted = Date.now();
  service = await startService("expiry-e2e-rename-", [], { persistDir });
  expect(service.output()).toMatch(
    /Carried \d+ local Durable Object\(s\) from class ReminderScheduler to CompanyClock/,
  );
  expect(objectFiles(newDir).length).toBe(objectFiles(oldDir).length);

  // The carried alarm fires the reminder that fell due: nothing has called the object yet.
  let sent: Array<{ subject: string }> = [];
  const deadline = Math.max(Date.parse(soon), Date.now()) + 60_000;
  while (Date.now() < deadline && sent.length === 0) {
    sent = await emailsTo(email);
    if (sent.length === 0) await sleep(500);
  }
  expect(
    sent.length,
    `no reminder email by ${new Date(deadline).toISOString()}\n${service.output().slice(-2000)}`,
  ).toBe(1);
  expect(sent[0]!.subject).toContain("Renamed clock permit");

  // The same reminders, not new ones from D1: the manual ones (only the object had them) and the ids.
  bearer = await ownerToken(service!.base);
  const after = (await api("GET", `/v1/items/${itemId}/reminders`, bearer)).body.data;
  expect(after.queued).toEqual(
    before.queued.filter((r: { reminder_id: number }) => r.reminder_id !== dueSoon.body.data.reminder_id),
  );
  expect(after.sent).toEqual([
    expect.objectContaining({
      reminder_id: dueSoon.body.data.reminder_id,
      origin: "manual",
      state: "sent",
      deliveries: [expect.objectContaining({ channel: "email", state: "sent", recipient: email })],
    }),
  ]);
  expect(Date.parse(after.sent[0].sent_at)).toBeGreaterThanOrEqual(restarted);
}, 240_000);
