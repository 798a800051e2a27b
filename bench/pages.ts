// `npm run bench -- --only pages`: what a recipient's page costs (docs/performance.md, "Recipient
// pages"), under `wrangler dev` on a throw-away local D1, rate limits off, the request log on:
//   1. migrations + demo seed; for company 1 by SQL: one contact and ITEMS items of theirs (no
//      reminder sequence: the clock has nothing to queue), and a link token per item, minted here
//      with src/lib/link-token.ts and the key given to the server (--var LINK_SIGNING_KEYS);
//   2. checks: a page answers 200 with the item's title, an unknown token 404, a POST acknowledges;
//   3. per round (--rounds, default 3): GET /health, GET /r/{token} (round robin over the items),
//      POST /r/{token} `action=acknowledge` and POST /v1/items/{id}/acknowledge (each request a
//      fresh item, so every one writes; the page takes the first half, the API the second), each
//      for --duration seconds with --connections;
//   4. a group of GROUP contacts made through the API and a reminder to the group at the coming
//      minute: how long after its minute the last of its deliveries was handed to the email binding
//      (its delivered_at), and that each contact got exactly one;
//   5. a table of medians and the targets: the page GET at least 0.45 of /health, the acknowledge
//      POST through the page at least 0.25, the API's at least 0.30; the group's last delivery
//      within 10 s of its minute.
// Exits non-zero on errors (a status other than the route's, socket errors, failed setup), not on a missed target.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import {
  expect,
  sleep,
  median,
  multiRowInserts,
  pct,
  prepareBenchState,
  printColumns,
  sqlText,
  wranglerVersion,
  type RouteResult,
  type RouteSpec,
  type SuiteOptions,
  startBenchServer,
  benchSet,
} from "./kit.ts";
import { executeSql } from "../scripts/lib/local.ts";
import { signClaims } from "../src/lib/link-token.ts";

export type PagesBenchOptions = SuiteOptions;

/** Enough fresh items that no acknowledge of the measured runs repeats one (about 3 rounds of 10 s at 500/s, with warm-ups). */
const ITEMS = 40_000;
const FIRST_ID = 1_001;
const CONTACT = 1_001;
const LINK_SECRET = "bench-link-signing-key-0123456789abcdef";
const VARS = ["--var", "RATE_LIMITS:off", "--var", `LINK_SIGNING_KEYS:bench:${LINK_SECRET}`];
const TARGETS = { page: 0.45, acknowledge: 0.25, "api-acknowledge": 0.3 };
/** Recipients of the group reminder (the most a group step sends to), and how late its last delivery may be. */
const GROUP = 200;
const GROUP_TARGET_MS = 10_000;

function seedStatements(): string[] {
  const today = new Date();
  const items = Array.from({ length: ITEMS }, (_, i) => {
    const expiry = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() + 40 + (i % 300)))
      .toISOString()
      .slice(0, 10);
    return `(${FIRST_ID + i}, 1, 1, ${CONTACT}, ${sqlText(`Boiler inspection, building ${i}`)}, ${sqlText(i % 3 ? "" : "Call the city office first.")}, 'exp', '${expiry}', 1)`;
  });
  return [
    `INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, email_key) VALUES (${CONTACT}, 1, 1, 'Bench', 'Pages', 'bench@pages.example', 'bench@pages.example')`,
    ...multiRowInserts(
      "INSERT INTO items (id, company_id, dept_id, contact_id, title, notes, " +
        "item_type, expiry_date, created_by) VALUES\n",
      items,
    ),
  ];
}

/** One page path per item, `/r/{token}`, bound to the item's first occurrence. */
async function pagePaths(): Promise<string[]> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(LINK_SECRET),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const expiresOn = new Date(Date.now() + 400 * 86_400_000).toISOString().slice(0, 10);
  const paths: string[] = [];
  for (let i = 0; i < ITEMS; i++)
    paths.push(
      `/r/${await signClaims(key, { companyId: 1, itemId: FIRST_ID + i, contactId: CONTACT, epoch: 1, expiresOn })}`,
    );
  return paths;
}

export async function runPagesBench(options: PagesBenchOptions): Promise<number> {
  const { started, base, log, measure, scope, postJson, getJson, fetchToken } = benchSet("pages", options);
  let child: ChildProcess | undefined;
  const errors: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    let t = Date.now();
    executeSql({ persistTo: scope.persistTo }, seedStatements());
    const paths = await pagePaths();
    log(
      `seeded ${ITEMS} items of contact ${CONTACT} for company 1, minted their links (${((Date.now() - t) / 1000).toFixed(1)} s)`,
    );
    t = Date.now();
    child = await startBenchServer(options.port, scope.persistTo, VARS);
    scope.setServer(child);
    log(
      `wrangler dev up on ${base} (${((Date.now() - t) / 1000).toFixed(1)} s): RATE_LIMITS=off (--var), the request log on, --log-level warn, X_LOCAL_OBSERVABILITY=false`,
    );

    // ---- checks (on the last items: the measured POSTs take them from the first)
    const page = await fetch(base + paths[ITEMS - 1]!);
    const html = await page.text();
    expect(
      page.status === 200 && html.includes(`Boiler inspection, building ${ITEMS - 1}`),
      `GET page: ${page.status}`,
    );
    const unknown = await fetch(`${base}/r/${paths[0]!.slice(3, -4)}AAAA`);
    expect(unknown.status === 404, `GET unknown token: ${unknown.status}`);
    const form = {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "action=acknowledge",
    };
    const acknowledged = await fetch(base + paths[ITEMS - 2]!, form);
    const ackHtml = await acknowledged.text();
    expect(
      acknowledged.status === 200 && ackHtml.includes('class="outcome applied"'),
      `POST acknowledge: ${acknowledged.status}`,
    );
    log("checks ok: a page answers 200 with its item, an unknown token 404, a POST acknowledges");

    // ---- measurements: each acknowledge takes the next fresh item (the page's from the first half, the API's from the second)
    const token = await fetchToken();
    const half = Math.floor((ITEMS - 2) / 2);
    const fresh = paths.slice(0, half);
    const freshForApi = Array.from({ length: half }, (_, i) => FIRST_ID + half + i);
    const viaApi = await postJson(`/v1/items/${FIRST_ID + ITEMS - 3}/acknowledge`, token, { note: "bench check" });
    expect(
      viaApi.status === 200 && viaApi.body?.data?.acknowledgement?.via === "api",
      `POST /v1/items/{id}/acknowledge: ${viaApi.status}`,
    );
    const routes: Array<RouteSpec & { status: number }> = [
      { key: "health", label: "GET /health", path: "/health", status: 200 },
      {
        key: "page",
        label: "GET /r/{token} (the page)",
        path: paths[0]!,
        requests: paths.map((path) => ({ path, headers: {} })),
        status: 200,
      },
      {
        key: "acknowledge",
        label: "POST /r/{token} action=acknowledge",
        path: fresh[0]!,
        post: "action=acknowledge",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        requests: fresh.map((path) => ({ path, headers: {} })),
        status: 200,
      },
      {
        key: "api-acknowledge",
        label: "POST /v1/items/{id}/acknowledge",
        path: `/v1/items/${freshForApi[0]}/acknowledge`,
        token,
        post: "{}",
        requests: freshForApi.map((id) => ({
          path: `/v1/items/${id}/acknowledge`,
          headers: { Authorization: `Bearer ${token}` },
        })),
        status: 200,
      },
    ];
    const results: Record<string, RouteResult[]> = Object.fromEntries(routes.map((r) => [r.key, []]));
    for (let round = 0; round < options.rounds; round++) {
      for (const route of routes) {
        const result = { ...(await measure(route, child.pid, round === 0)), round };
        results[route.key]!.push(result);
        const wrong = result.requests - (result.statusCodes[String(route.status)] ?? 0);
        log(
          `  ${route.label} (round ${round + 1}): ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, ` +
            `status ${JSON.stringify(result.statusCodes)}, errors ${result.errors}${result.otherCpu === undefined ? "" : `, other CPU ${pct(result.otherCpu)}`}`,
        );
        if (wrong > 0 || result.errors > 0 || result.requests === 0)
          errors.push(
            `${route.label} (round ${round + 1}): ${wrong} answers other than ${route.status}, ${result.errors} errors`,
          );
      }
    }
    // Every measured acknowledge wrote: the next fresh item is still unacknowledged.
    for (const key of ["acknowledge", "api-acknowledge"]) {
      const spent = results[key]!.reduce((n, r) => n + r.requests, 0);
      expect(spent < half, `${spent} ${key} requests for ${half} fresh items: raise ITEMS`);
    }

    // ---- a reminder to a group of GROUP contacts at the coming minute
    const group = await postJson("/v1/contact-groups", token, { group_name: "Bench group" });
    expect(group.status === 201, `POST /v1/contact-groups: ${group.status}`);
    const groupId = group.body.data.groupid as number;
    for (let i = 0; i < GROUP; i++) {
      const member = await postJson("/v1/contacts", token, {
        first_name: "Member",
        last_name: String(i),
        email: `member${i}@group.bench.example`,
        groupid: groupId,
      });
      expect(
        member.status === 201,
        `POST /v1/contacts (member ${i}): ${member.status} ${JSON.stringify(member.body).slice(0, 200)}`,
      );
    }
    // A seeded item the measurements left alone (the company is at its item quota).
    const groupedId = FIRST_ID + ITEMS - 4;
    const minute = Math.ceil((Date.now() + 15_000) / 60_000) * 60_000;
    const at = new Date(minute).toISOString();
    const reminder = await postJson(`/v1/items/${groupedId}/reminders`, token, {
      date: at.slice(0, 10),
      hour: at.slice(11, 16),
      group_id: groupId,
    });
    expect(
      reminder.status === 201,
      `POST /v1/items/{id}/reminders (group): ${reminder.status} ${JSON.stringify(reminder.body).slice(0, 200)}`,
    );
    log(`a reminder to ${GROUP} contacts of group ${groupId} at ${at}: waiting for its deliveries`);
    let deliveries: Array<{ state: string; contact_id: number; delivered_at: string | null }> = [];
    while (Date.now() < minute + 120_000) {
      await sleep(2_000);
      const listed = await getJson(`/v1/items/${groupedId}/reminders`, token);
      deliveries = listed.body?.data?.sent?.[0]?.deliveries ?? [];
      if (deliveries.length >= GROUP && deliveries.every((d) => d.state !== "pending")) break;
    }
    const sent = deliveries.filter((d) => d.state === "sent" && d.delivered_at);
    const lastMs = sent.length ? Math.max(...sent.map((d) => Date.parse(d.delivered_at!))) - minute : Number.NaN;
    const recipients = new Set(sent.map((d) => d.contact_id)).size;
    expect(
      sent.length === GROUP && recipients === GROUP,
      `group reminder: ${sent.length} deliveries sent to ${recipients} contacts, expected ${GROUP}`,
    );

    // ---- report
    const loadAfter = loadavg()[0]!;
    const perRound = (key: string) => results[key]!.map((r) => r.requestsPerSecond);
    const ratio = (key: string) => median(perRound(key).map((rps, i) => rps / perRound("health")[i]!));
    console.log(
      `\nRecipient pages ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, RATE_LIMITS=off, request log on, --log-level warn, ` +
        `X_LOCAL_OBSERVABILITY=false; ${options.rounds} round(s), medians; ${options.connections} connections, ${options.duration} s runs; ` +
        `${ITEMS} items; load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    printColumns(
      ["route", "req/s", "p50 ms", "p99 ms", "ratio to /health", "req/s per round"],
      routes.map((route) => {
        const rs = results[route.key]!;
        return [
          route.label,
          median(perRound(route.key)).toFixed(0),
          median(rs.map((r) => r.p50)).toFixed(0),
          median(rs.map((r) => r.p99)).toFixed(0),
          ratio(route.key).toFixed(2),
          perRound(route.key)
            .map((x) => x.toFixed(0))
            .join(" "),
        ];
      }),
    );
    const verdicts = (Object.entries(TARGETS) as Array<[keyof typeof TARGETS, number]>).map(([key, target]) => ({
      key,
      target,
      ratio: ratio(key),
      met: ratio(key) >= target,
    }));
    for (const v of verdicts)
      console.log(
        `${v.key}: ${v.ratio.toFixed(2)} of /health (target >= ${v.target.toFixed(2)}) -> ${v.met ? "MET" : "MISSED"}`,
      );
    const groupMet = lastMs <= GROUP_TARGET_MS;
    console.log(
      `group of ${GROUP}: last delivery handed to the email binding ${(lastMs / 1000).toFixed(1)} s after its minute (target <= ${GROUP_TARGET_MS / 1000} s) -> ${groupMet ? "MET" : "MISSED"}`,
    );
    for (const message of errors) console.error(`ERROR ${message}`);
    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      writeFileSync(
        options.json,
        `${JSON.stringify(
          {
            started: new Date(started).toISOString(),
            options,
            items: ITEMS,
            loadAverage: { before: loadBefore, after: loadAfter },
            verdicts,
            group: { recipients: GROUP, lastDeliveryMs: lastMs },
            results,
            errors,
          },
          null,
          2,
        )}\n`,
      );
      log(`results written to ${options.json}`);
    }
    return errors.length > 0 ? 1 : 0;
  } finally {
    await scope.close();
  }
}
