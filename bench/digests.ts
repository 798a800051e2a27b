// `npm run bench -- --only digests [--rounds 3 --port 9160 --json [file]]`: a weekly digest run of a
// large company (docs/performance.md, "Digests"), under `wrangler dev` on a throw-away local D1,
// rate limits off. Each round (about 2 to 3 minutes) on a fresh state, since a contact's weekly
// digest is once per ISO week:
//   1. migrations + demo seed; for company 1 by SQL: CONTACTS contacts on a weekly digest on the
//      weekday of the coming run, each the contact of one item due within the digest's window;
//   2. `wrangler dev`; PATCH /v1/companies/1/settings: time zone UTC, digest_hour the coming minute
//      at least LEAD_MS away (the Worker asks the company clock to schedule the run);
//   3. at that minute the clock plans CONTACTS digests and sends them; GET /v1/digests until every
//      one is settled: the run's time is the last digest's `at` less the minute;
//   4. checks: CONTACTS digests, one per contact, each `sent` with 1 item; the email simulation holds
//      CONTACTS messages to the bench's addresses, one per address.
// The table: the run's time per round and its median; the target: every digest handed to the email
// binding within 120 s. Exits non-zero on errors (a failed check), not on a missed target.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import {
  benchSet,
  expect,
  median,
  multiRowInserts,
  prepareBenchState,
  printColumns,
  sleep,
  startBenchServer,
  stopServer,
  wranglerVersion,
  type SuiteOptions,
} from "./kit.ts";
import { executeSql } from "../scripts/lib/local.ts";

export type DigestsBenchOptions = SuiteOptions;

const CONTACTS = 10_000;
const FIRST_CONTACT = 100_001;
const FIRST_ITEM = 100_001;
const LEAD_MS = 25_000;
const SETTLE_MS = 600_000;
const TARGET_SECONDS = 120;
const VARS = ["--var", "RATE_LIMITS:off"];
const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const DOMAIN = "digests.bench.example";

function seedStatements(weekday: string, itemDate: string): string[] {
  const contacts = Array.from({ length: CONTACTS }, (_, i) => {
    const email = `reader${i}@${DOMAIN}`;
    return `(${FIRST_CONTACT + i}, 1, 1, 'Reader', '${i}', '${email}', '${email}', 'weekly', '${weekday}')`;
  });
  const items = Array.from(
    { length: CONTACTS },
    (_, i) => `(${FIRST_ITEM + i}, 1, 1, 'Permit ${i}', 'exp', '${itemDate}', 1, ${FIRST_CONTACT + i})`,
  );
  return [
    ...multiRowInserts(
      "INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, email_key, digest, digest_weekday) VALUES\n",
      contacts,
    ),
    ...multiRowInserts(
      "INSERT INTO items (id, company_id, dept_id, title, item_type, expiry_date, created_by, contact_id) VALUES\n",
      items,
    ),
  ];
}

type Digest = { contact: { contact_id: number }; state: string; items: number | null; at: string };

interface Round {
  round: number;
  seconds: number;
  sent: number;
  emails: number;
  loadBefore: number;
  loadAfter: number;
}

export async function runDigestsBench(options: DigestsBenchOptions): Promise<number> {
  const { started, base, log, scope, getJson, fetchToken } = benchSet("digests", options);
  const errors: string[] = [];
  const rounds: Round[] = [];
  const all = async (path: string, token: string): Promise<any[]> => {
    const rows: any[] = [];
    let cursor = "";
    for (;;) {
      const page = await getJson(
        `${path}${path.includes("?") ? "&" : "?"}limit=200${cursor ? `&cursor=${cursor}` : ""}`,
        token,
      );
      expect(page.status === 200, `GET ${path}: ${page.status} ${JSON.stringify(page.body).slice(0, 200)}`);
      rows.push(...page.body.data);
      if (!page.body.meta.next_cursor) return rows;
      cursor = page.body.meta.next_cursor;
    }
  };
  const emailsTo = async (): Promise<Map<string, number>> => {
    const counts = new Map<string, number>();
    let cursor = "";
    for (;;) {
      const page = await getJson(
        `/cdn-cgi/explorer/api/local/email/sending?per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      expect(page.status === 200, `email explorer: ${page.status}`);
      for (const m of page.body.result as Array<{ to: string[] }>)
        for (const to of m.to) if (to.endsWith(`@${DOMAIN}`)) counts.set(to, (counts.get(to) ?? 0) + 1);
      if (!page.body.result_info?.has_more) return counts;
      cursor = page.body.result_info.cursor;
    }
  };
  try {
    for (let round = 1; round <= options.rounds; round++) {
      const persistTo = join(scope.persistTo, `round-${round}`);
      mkdirSync(persistTo, { recursive: true });
      const loadBefore = await prepareBenchState(persistTo, log);
      // The run's minute is chosen once the server is up; its weekday is today's or, near midnight, tomorrow's.
      const soon = new Date(Date.now() + 120_000);
      const weekday = WEEKDAYS[(soon.getUTCDay() + 6) % 7]!;
      const itemDate = new Date(soon.getTime() + 5 * 86_400_000).toISOString().slice(0, 10);
      executeSql({ persistTo }, seedStatements(weekday, itemDate));
      log(`round ${round}: seeded ${CONTACTS} contacts on a weekly digest (${weekday}), one item each`);
      let child: ChildProcess | undefined;
      try {
        child = await startBenchServer(options.port, persistTo, VARS);
        scope.setServer(child);
        const token = await fetchToken();
        const minute = Math.ceil((Date.now() + LEAD_MS) / 60_000) * 60_000;
        const at = new Date(minute);
        expect(WEEKDAYS[(at.getUTCDay() + 6) % 7] === weekday, "the run's minute fell on another day: run again");
        const patched = await fetch(`${base}/v1/companies/1/settings`, {
          method: "PATCH",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ timezone: "UTC", digest_hour: at.toISOString().slice(11, 16) }),
        });
        expect(patched.status === 200, `PATCH settings: ${patched.status}`);
        log(`round ${round}: digest_hour ${at.toISOString().slice(11, 16)} UTC; waiting for the run`);
        await sleep(minute - Date.now());
        let listed: Digest[] = [];
        for (;;) {
          await sleep(3_000);
          const pending = await getJson("/v1/digests?state=pending&limit=1", token);
          expect(pending.status === 200, `GET /v1/digests: ${pending.status}`);
          if (pending.body.data.length === 0) {
            listed = await all("/v1/digests", token);
            if (listed.length >= CONTACTS) break;
          }
          expect(Date.now() < minute + SETTLE_MS, `the run did not settle within ${SETTLE_MS / 1000} s`);
        }
        const loadAfter = loadavg()[0]!;
        const sent = listed.filter((d) => d.state === "sent" && d.items === 1);
        if (sent.length !== CONTACTS)
          errors.push(`round ${round}: ${sent.length} of ${CONTACTS} digests sent with 1 item`);
        if (new Set(listed.map((d) => d.contact.contact_id)).size !== listed.length)
          errors.push(`round ${round}: a contact has more than one digest`);
        const seconds = (Math.max(...listed.map((d) => Date.parse(d.at))) - minute) / 1000;
        const emails = await emailsTo();
        const twice = [...emails.values()].filter((n) => n > 1).length;
        if (emails.size !== CONTACTS)
          errors.push(`round ${round}: emails to ${emails.size} addresses, expected ${CONTACTS}`);
        if (twice > 0) errors.push(`round ${round}: ${twice} addresses got more than one digest`);
        rounds.push({ round, seconds, sent: sent.length, emails: emails.size, loadBefore, loadAfter });
        log(
          `round ${round}: ${sent.length} digests sent, the last ${seconds.toFixed(1)} s after the minute; ${emails.size} addresses mailed, ${twice} twice; load ${loadBefore.toFixed(2)} -> ${loadAfter.toFixed(2)}`,
        );
      } finally {
        if (child) await stopServer(child);
      }
    }
    const med = median(rounds.map((r) => r.seconds));
    console.log(
      `\nDigests ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, RATE_LIMITS=off; ${CONTACTS} contacts on a weekly digest at one hour, ${options.rounds} round(s)\n`,
    );
    printColumns(
      ["round", "last digest after the minute (s)", "sent", "addresses mailed", "load before -> after"],
      rounds.map((r) => [
        String(r.round),
        r.seconds.toFixed(1),
        String(r.sent),
        String(r.emails),
        `${r.loadBefore.toFixed(2)} -> ${r.loadAfter.toFixed(2)}`,
      ]),
    );
    console.log(
      `every digest handed to the email binding: median ${med.toFixed(1)} s (target <= ${TARGET_SECONDS} s) -> ${med <= TARGET_SECONDS ? "MET" : "MISSED"}`,
    );
    for (const message of errors) console.error(`ERROR ${message}`);
    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      writeFileSync(
        options.json,
        `${JSON.stringify({ started: new Date(started).toISOString(), options, rounds, medianSeconds: med, errors }, null, 2)}\n`,
      );
      log(`results written to ${options.json}`);
    }
    return errors.length > 0 ? 1 : 0;
  } finally {
    await scope.close();
  }
}
