// End to end (issue 34, digests): a company's contacts on a weekly digest at the coming minute; the
// whole server is killed (SIGKILL) while the run is sending. Started again on the same state, every
// contact has exactly one digest for the period, sent, and exactly one email in wrangler's local
// email simulation; no digest is repeated.
import { afterAll, expect, it } from "vitest";
import { listEmails } from "./support/recipient.ts";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

const CONTACTS = 400;
/** The set-up makes 600 writes in seconds: more than a client's burst allows. */
const VARS = ["--var", "RATE_LIMITS:off"];
const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

let service: Service | undefined;
afterAll(async () => {
  await service?.stop();
});

type Digest = { contact: { contact_id: number }; state: string; period: string; items: number | null; at: string };

async function digests(base: string, token: string): Promise<Digest[]> {
  const all: Digest[] = [];
  let cursor = "";
  for (;;) {
    const page = await callApi(base, "GET", `/v1/digests?limit=200${cursor ? `&cursor=${cursor}` : ""}`, token);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    all.push(...page.body.data);
    if (!page.body.meta.next_cursor) return all;
    cursor = page.body.meta.next_cursor;
  }
}

it("a server killed while digests go out leaves every contact exactly one digest, sent once", async () => {
  service = await startService("expiry-e2e-digest-crash-", VARS);
  const token = await ownerToken(service.base);
  const run = crypto.randomUUID().slice(0, 8);
  // The run at the coming minute (at least 40 s away: the contacts and items are made first), UTC.
  const at = new Date(Math.ceil((Date.now() + 40_000) / 60_000) * 60_000);
  const day = at.toISOString().slice(0, 10);
  const weekday = WEEKDAYS[(at.getUTCDay() + 6) % 7]!;
  const settings = await callApi(service.base, "PATCH", "/v1/companies/1/settings", token, {
    timezone: "UTC",
    digest_hour: at.toISOString().slice(11, 16),
  });
  expect(settings.status, JSON.stringify(settings.body)).toBe(200);
  const addresses = new Set<string>();
  for (let i = 0; i < CONTACTS; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, CONTACTS - i) }, async (_, k) => {
        const email = `digest-${run}-${i + k}@crash.example`;
        const contact = await callApi(service!.base, "POST", "/v1/contacts", token, {
          first_name: "Digest",
          last_name: String(i + k),
          email,
          digest: "weekly",
          digest_weekday: weekday,
        });
        expect(contact.status, JSON.stringify(contact.body)).toBe(201);
        addresses.add(email);
        const item = await callApi(service!.base, "POST", "/v1/items", token, {
          title: `Digest crash ${run} ${i + k}`,
          expiry_date: day,
          contact_id: contact.body.data.contact_id,
          seqid: 0,
        });
        expect(item.status, JSON.stringify(item.body)).toBe(201);
      }),
    );
  }
  expect(Date.now()).toBeLessThan(at.getTime());

  // Killed as soon as the first digest email is out (the run sends a few hundred in a second or so),
  // or 1.5 s after the run's minute: on a loaded machine the listing answers too late to see the run
  // before it ends.
  const first = service;
  let killedAt = 0;
  const deadline = at.getTime() + 120_000;
  for (;;) {
    // The simulation's own listing (the company's clock answers only between its batches).
    const killBy = at.getTime() + 1500;
    const sent = await Promise.race([
      callApi(first.base, "GET", "/cdn-cgi/explorer/api/local/email/sending?per_page=1"),
      sleep(Math.max(0, killBy - Date.now())).then(() => null),
    ]);
    if ((sent?.status === 200 && sent.body.result.length > 0) || Date.now() >= killBy) {
      killedAt = Date.now();
      await first.kill();
      break;
    }
    expect(Date.now()).toBeLessThan(deadline);
    await sleep(5);
  }

  service = await startService("expiry-e2e-digest-crash-", VARS, { persistDir: first.persistDir });
  const token2 = await ownerToken(service.base);
  const atRestart = await digests(service.base, token2);
  // Digests whose outcome was recorded before the kill (the restarted run may have sent more already).
  const sentBeforeKill = atRestart.filter((d) => d.state === "sent" && Date.parse(d.at) <= killedAt).length;
  expect(sentBeforeKill, "every digest went out before the kill: nothing was interrupted").toBeLessThan(CONTACTS);
  // Digests leased by the killed run go again once their lease (60 s) ends; the sweep wakes the clock.
  let listed = atRestart;
  const settleBy = Date.now() + 150_000;
  while ((listed.length < CONTACTS || listed.some((d) => d.state === "pending")) && Date.now() < settleBy) {
    await fetch(`${service.base}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}`).catch(
      () => undefined,
    );
    await sleep(2000);
    listed = await digests(service.base, token2);
  }
  expect(listed).toHaveLength(CONTACTS);
  expect(new Set(listed.map((d) => d.contact.contact_id)).size).toBe(CONTACTS);
  for (const d of listed) expect(d).toMatchObject({ state: "sent", items: 1 });

  // What the recipients got: one email each (the simulation keeps the messages of both runs).
  const emails = (await listEmails(service.base)).filter((m) => m.to.some((to) => addresses.has(to)));
  const perAddress = new Map<string, number>();
  for (const m of emails) for (const to of m.to) perAddress.set(to, (perAddress.get(to) ?? 0) + 1);
  const repeated = [...perAddress].filter(([, n]) => n > 1);
  console.log(
    `digest-crash: ${sentBeforeKill} of ${CONTACTS} digests sent before the kill; ${emails.length} emails listed after the restart, ${repeated.length} addresses with more than one`,
  );
  expect(repeated).toEqual([]);
  // The simulation may not keep the killed run's messages; those it keeps count above.
  expect(emails.length).toBeGreaterThanOrEqual(CONTACTS - sentBeforeKill);
}, 420_000);
