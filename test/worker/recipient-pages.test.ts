// The recipient's pages (docs/recipient-journey.md), reached from a reminder email fired by a real
// alarm: links in both parts of the email, the page and its headers, GET changing nothing, each
// action through its form, repeats and links that moved on, bad input, links that do not work (all
// alike), concurrent clicks, the rate limit and the log line.
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { mintLinkToken } from "../../src/lib/recipient-links";
import { addDays, addYears, todayIn } from "../../src/lib/time";
import { call, createAccount, createContact, createDocumentType, createItem, env, type Json } from "./helpers";
import { fetchWithEnv, fireReminder, formsOf, getPage, linksOf, pageLinksIn, postForm, type EmailLinks, type PageResult } from "./support/recipient";

const futureDate = (days: number) => addDays(todayIn("UTC"), days);

interface Setup {
  companyId: number;
  token: string;
  contact: Json;
  item: Json;
  links: EmailLinks;
}

/** An account, a contact, an item of theirs (`item`: more of its fields) and the links of a reminder email about it. */
async function setup(item: Record<string, unknown> = {}, contact: Record<string, unknown> = {}): Promise<Setup> {
  const { companyId, ownerToken: token } = await createAccount();
  const person = await createContact(token, { first_name: "Ada", last_name: "Lovelace", ...contact });
  const created = await createItem(token, { expiry_date: futureDate(40), seqid: 0, contact_id: person.contact_id, ...item });
  const [email] = await fireReminder(companyId, token, created.item_id);
  if (!email) throw new Error("no email was sent");
  return { companyId, token, contact: person, item: created, links: linksOf(email) };
}

/** What an item's state is as the API shows it: detail (without its ETag-free volatile parts), reminders, audit log. */
async function stateOf(s: Setup) {
  const [detail, reminders, audit] = await Promise.all([
    call("GET", `/v1/items/${s.item.item_id}`, { token: s.token }),
    call("GET", `/v1/items/${s.item.item_id}/reminders`, { token: s.token }),
    call("GET", `/v1/audit-log?resource_type=item&resource_id=${s.item.item_id}&limit=100`, { token: s.token }),
  ]);
  return { detail: detail.body.data, reminders: reminders.body.data, audit: audit.body.data };
}

const outcomeOf = (page: PageResult) => /<div class="outcome (\w+)"[^>]*><strong>([^<]*)<\/strong>/.exec(page.html)?.slice(1, 3) ?? null;

describe("the email", () => {
  it("carries the page link and one per action in both its text and its HTML, for the contact it goes to", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    const ada = await createContact(token, { first_name: "Ada" });
    const item = await createItem(token, { expiry_date: futureDate(40), seqid: 0, contact_id: ada.contact_id });
    const [email] = await fireReminder(companyId, token, item.item_id);
    const links = linksOf(email!);
    expect(links.page).toMatch(/^https:\/\/api\.test\/r\/[A-Za-z0-9_-]{40,}$/);
    expect(links).toEqual({
      page: links.page,
      acknowledge: `${links.page}/acknowledge`,
      complete: `${links.page}/complete`,
      renew: `${links.page}/renew`,
      snooze: `${links.page}/snooze`,
    });
    // The HTML part has the same links, as hrefs.
    const hrefs = [...email!.html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]);
    expect(hrefs).toEqual([links.page, links.acknowledge, links.complete, links.renew, links.snooze]);
    expect(pageLinksIn(email!.text)).toHaveLength(5);

    // A reminder to another contact carries that contact's own links.
    const bob = await createContact(token, { first_name: "Bob" });
    const [toBob] = await fireReminder(companyId, token, item.item_id, { contact_id: bob.contact_id });
    expect(toBob!.to).toBe(bob.email);
    expect(linksOf(toBob!).page).not.toBe(links.page);
    expect((await getPage(linksOf(toBob!).page)).html).toContain("This page is for Bob");
  });

  it("offers renewal only for expirations", async () => {
    const { links } = await setup({ item_type: "due" });
    expect(links.renew).toBeUndefined();
    expect(formsOf((await getPage(links.page)).html).map((f) => f.fields.action)).toEqual(["acknowledge", "complete", "snooze"]);
  });
});

describe("the page", () => {
  let s: Setup;
  let page: PageResult;
  beforeAll(async () => {
    const { companyId, ownerToken: token } = await createAccount();
    await call("PATCH", `/v1/companies/${companyId}/settings`, { token, body: { date_format: "DD.MM.YYYY" } });
    await createDocumentType(token, { doctype_name: "Fire certificate" });
    const contact = await createContact(token, { first_name: "Ada", last_name: "Lovelace" });
    const date = futureDate(40);
    const item = await createItem(token, { title: "Boiler <b>inspection</b>", expiry_date: date, seqid: 0, contact_id: contact.contact_id, notes: "Call Bob\nfirst", document_type: "Fire certificate" });
    const [email] = await fireReminder(companyId, token, item.item_id);
    s = { companyId, token, contact, item, links: linksOf(email!) };
    page = await getPage(s.links.page);
  });

  it("shows the item: title, type, date in the company's format, company, notes, document type, state", async () => {
    expect(page.status).toBe(200);
    expect(page.headers.get("Content-Type")).toMatch(/^text\/html; charset=utf-8/i);
    const [y, m, d] = s.item.expiry_date.split("-");
    expect(page.html).toContain("<h1>Boiler &lt;b&gt;inspection&lt;/b&gt;</h1>");
    expect(page.html).toContain("Expiration · Fire certificate");
    expect(page.html).toContain(`<dd>${d}.${m}.${y} (in 40 days)</dd>`);
    expect(page.html).toContain("<dt>Status</dt><dd>Pending</dd>");
    expect(page.html).toContain("<dt>Acknowledged</dt><dd>Not yet</dd>");
    expect(page.html).toMatch(/<header>acct\w+ Co<\/header>/);
    expect(page.html).toContain('<div class="notes">Call Bob\nfirst</div>');
    expect(page.html).toContain("This page is for Ada Lovelace");
    expect(formsOf(page.html)).toEqual([
      { method: "post", action: new URL(s.links.page).pathname, fields: { action: "acknowledge", note: "" } },
      { method: "post", action: new URL(s.links.page).pathname, fields: { action: "complete" } },
      { method: "post", action: new URL(s.links.page).pathname, fields: { action: "renew", date: addYears(s.item.expiry_date, 1) } },
      { method: "post", action: new URL(s.links.page).pathname, fields: { action: "snooze", until: futureDate(7) } },
    ]);
  });

  it("is self-contained: a strict CSP, no script, nothing from elsewhere, not indexed, no referrer, not cached, fits a phone", async () => {
    const csp = page.headers.get("Content-Security-Policy")!;
    expect(csp).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'$/);
    expect(csp).not.toContain("unsafe");
    const style = /<style>([\s\S]*?)<\/style>/.exec(page.html)![1]!;
    const hash = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(style)))));
    expect(csp).toContain(`'sha256-${hash}'`);
    expect(page.html).not.toMatch(/<script|\son\w+=|javascript:/i);
    expect(page.html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    expect(page.headers.get("X-Robots-Tag")).toBe("noindex, nofollow");
    expect(page.html).toContain('<meta name="robots" content="noindex, nofollow">');
    expect(page.headers.get("Referrer-Policy")).toBe("no-referrer");
    expect(page.headers.get("Cache-Control")).toBe("no-store");
    expect(page.headers.get("X-Frame-Options")).toBe("DENY");
    expect(page.html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
  });

  it("confirms one action on its own link: the same page with that action's form only", async () => {
    for (const action of ["acknowledge", "complete", "renew", "snooze"] as const) {
      const confirm = await getPage(s.links[action]!);
      expect(confirm.status, action).toBe(200);
      const forms = formsOf(confirm.html);
      expect(forms.map((f) => f.fields.action), action).toEqual([action]);
      expect(forms[0]!.action).toBe(new URL(s.links.page).pathname);
      expect(confirm.html).toContain(`<a href="${new URL(s.links.page).pathname}">All actions for this item</a>`);
    }
    // Another path below the token is no action: the page of a link that does not work.
    expect((await getPage(`${s.links.page}/delete`)).status).toBe(404);
  });

  it("changes nothing on GET or HEAD of any of its links, however often", async () => {
    const before = await stateOf(s);
    for (let round = 0; round < 3; round++) {
      for (const url of Object.values(s.links)) {
        expect((await getPage(url!)).status).toBe(200);
        expect((await fetchWithEnv({}, new Request(url!, { method: "HEAD" }))).status).toBe(200);
      }
    }
    expect(await stateOf(s)).toEqual(before);
  });
});

describe("acting through the forms", () => {
  it("acknowledges once; a repeat says so and changes nothing", async () => {
    const s = await setup();
    const first = await postForm(s.links.page, { action: "acknowledge", note: "on it, Ada" });
    expect(first.status).toBe(200);
    expect(outcomeOf(first)).toEqual(["applied", "Thank you: you are on it"]);
    expect(first.html).toMatch(/<dt>Acknowledged<\/dt><dd>by Ada Lovelace, \d{4}-\d\d-\d\d \d\d:\d\d \(UTC\) — “on it, Ada”<\/dd>/);
    expect(formsOf(first.html).map((f) => f.fields.action)).toEqual(["complete", "renew", "snooze"]);
    const again = await postForm(s.links.acknowledge, { action: "acknowledge" });
    expect(again.status).toBe(200);
    expect(outcomeOf(again)).toEqual(["unchanged", "It was already acknowledged"]);
  });

  it("names who acknowledged to every recipient: another recipient's page and its repeat show the first one's name", async () => {
    const s = await setup();
    const bob = await createContact(s.token, { first_name: "Bob", last_name: "Builder" });
    const claims = { companyId: s.companyId, itemId: s.item.item_id, contactId: bob.contact_id, epoch: 1, expiresOn: futureDate(60) };
    const bobsPage = `https://api.test/r/${await mintLinkToken(env.LINK_SIGNING_KEYS, claims)}`;
    expect(outcomeOf(await postForm(s.links.page, { action: "acknowledge" }))).toEqual(["applied", "Thank you: you are on it"]);
    const bobs = await postForm(bobsPage, { action: "acknowledge" });
    expect(outcomeOf(bobs)).toEqual(["unchanged", "It was already acknowledged"]);
    expect(bobs.html).toMatch(/<dt>Acknowledged<\/dt><dd>by Ada Lovelace, /);
    const audit = await call("GET", `/v1/audit-log?resource_type=item&resource_id=${s.item.item_id}&limit=100`, { token: s.token });
    expect(audit.body.data.filter((e: Json) => e.operation_id === "actOnRecipientPage").map((e: Json) => e.actor.contact_id)).toEqual([s.contact.contact_id]);
  });

  it("completes a plain item once: the first POST completes, a repeat or a concurrent one changes nothing", async () => {
    const s = await setup();
    const before = await stateOf(s);
    const pages = await Promise.all(Array.from({ length: 4 }, () => postForm(s.links.page, { action: "complete" })));
    expect(pages.map((p) => p.status)).toEqual([200, 200, 200, 200]);
    expect(pages.map((p) => outcomeOf(p)![0]).sort()).toEqual(["applied", "unchanged", "unchanged", "unchanged"]);
    const after = await stateOf(s);
    expect(after.detail.status).toBe("completed");
    // One audit entry, naming no client: the recipient's.
    const entries = after.audit.filter((e: Json) => !before.audit.some((b: Json) => b.audit_id === e.audit_id));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: "updated", operation_id: "actOnRecipientPage" });
    expect(entries[0].actor).toMatchObject({ client_id: null });
    expect(entries[0].after.status).toBe("completed");
    const repeat = await postForm(s.links.complete, { action: "complete" });
    expect(outcomeOf(repeat)).toEqual(["unchanged", "It was already completed"]);
    expect(formsOf(repeat.html).map((f) => f.fields.action)).toEqual(["renew"]);
    expect((await stateOf(s)).audit).toEqual(after.audit);
  });

  it("renews an item whose rule renews on completion exactly once, of 8 completions sent together; the link then has moved on", async () => {
    const s = await setup({ recurrence: { every: 1, unit: "month", renew_on: "completed" } });
    const date = s.item.expiry_date as string;
    const pages = await Promise.all(Array.from({ length: 8 }, () => postForm(s.links.page, { action: "complete" })));
    const applied = pages.filter((p) => outcomeOf(p)?.[0] === "applied");
    expect(applied).toHaveLength(1);
    expect(outcomeOf(applied[0]!)).toEqual(["applied", "Marked completed and renewed"]);
    for (const p of pages.filter((x) => x !== applied[0])) {
      expect(p.status).toBe(409);
      expect(outcomeOf(p)![0]).toBe("moved_on");
    }
    const detail = (await call("GET", `/v1/items/${s.item.item_id}`, { token: s.token })).body.data;
    expect(detail.renewals).toEqual([expect.objectContaining({ previous_date: date, reason: "completed" })]);
    expect(detail.status).toBe("pending");
    // The old link shows the item as it is now, and acts on nothing.
    const old = await getPage(s.links.page);
    expect(old.status).toBe(200);
    expect(outcomeOf(old)).toEqual(["moved_on", "This link is for an earlier date of the item"]);
    expect(formsOf(old.html)).toEqual([]);
    const late = await postForm(s.links.page, { action: "acknowledge" });
    expect(late.status).toBe(409);
    expect(outcomeOf(late)).toEqual(["moved_on", "Nothing was changed"]);
  });

  it("renews to the date given; a repeat says it is renewed; the old link cannot act on the renewed item", async () => {
    const s = await setup();
    const next = addYears(s.item.expiry_date, 2);
    const renewed = await postForm(s.links.page, { action: "renew", date: next });
    expect(renewed.status).toBe(200);
    expect(outcomeOf(renewed)![0]).toBe("applied");
    expect(formsOf(renewed.html)).toEqual([]);
    const detail = (await call("GET", `/v1/items/${s.item.item_id}`, { token: s.token })).body.data;
    expect(detail.expiry_date).toBe(next);
    expect(detail.renewals).toHaveLength(1);
    const before = await stateOf(s);
    const repeat = await postForm(s.links.renew!, { action: "renew", date: next });
    expect([repeat.status, outcomeOf(repeat)![0]]).toEqual([200, "unchanged"]);
    const forms: Array<Record<string, string>> = [{ action: "renew", date: addYears(next, 1) }, { action: "complete" }, { action: "snooze", until: futureDate(3) }];
    for (const form of forms) {
      const stale = await postForm(s.links.page, form);
      expect([stale.status, outcomeOf(stale)![0]], JSON.stringify(form)).toEqual([409, "moved_on"]);
    }
    expect(await stateOf(s)).toEqual(before);
  });

  it("snoozes until a day after today; a repeat changes nothing", async () => {
    const s = await setup();
    const until = futureDate(5);
    const snoozed = await postForm(s.links.snooze, { action: "snooze", until });
    expect(snoozed.status).toBe(200);
    expect(outcomeOf(snoozed)![0]).toBe("applied");
    expect(snoozed.html).toContain(`<dt>Snoozed until</dt><dd>${until}</dd>`);
    expect(outcomeOf(await postForm(s.links.page, { action: "snooze", until }))![0]).toBe("unchanged");
  });

  it("answers a bad date or note on the page with 422 naming it, a missing or unknown action with 400; nothing changes", async () => {
    const s = await setup();
    const before = await stateOf(s);
    const cases: Array<[Record<string, string>, number, RegExp]> = [
      [{ action: "renew", date: "2027-02-30" }, 422, /calendar date/],
      [{ action: "renew", date: "" }, 422, /calendar date/],
      [{ action: "renew", date: s.item.expiry_date }, 422, /later than the item/],
      [{ action: "snooze", until: "soon" }, 422, /calendar date/],
      [{ action: "snooze", until: todayIn("UTC") }, 422, /after today/],
      [{ action: "acknowledge", note: "x".repeat(501) }, 422, /at most 500/],
      [{}, 400, /could not be handled/],
      [{ action: "delete" }, 400, /could not be handled/],
    ];
    for (const [form, status, message] of cases) {
      const res = await postForm(s.links.page, form);
      expect(res.status, JSON.stringify(form)).toBe(status);
      expect(res.html, JSON.stringify(form)).toMatch(message);
      expect(res.headers.get("Content-Security-Policy")).toMatch(/^default-src 'none'/);
    }
    // The action of the path, or a form that contradicts it.
    expect((await postForm(s.links.complete, { action: "acknowledge" })).status).toBe(400);
    expect(await stateOf(s)).toEqual(before);
    // The path names the action when the form does not.
    expect(outcomeOf(await postForm(s.links.acknowledge, {}))![0]).toBe("applied");
  });
});

describe("links that do not work", () => {
  it("get one page, status and headers, whether unknown, altered, expired, another key's, or their item or contact deleted", async () => {
    const s = await setup();
    const other = await setup();
    const claims = { companyId: s.companyId, itemId: s.item.item_id, contactId: s.contact.contact_id, epoch: 1 };
    const token = new URL(s.links.page).pathname.split("/")[2]!;
    const tokens = {
      unknown: "AQEBAQGtowEcNTSNajDWGDrRLks71scQZ4TnGfj7SnqaMXmLtubTxQ",
      malformed: "not-a-token",
      altered: token.slice(0, -4) + (token.endsWith("AAAA") ? "BBBB" : "AAAA"),
      expired: await mintLinkToken(env.LINK_SIGNING_KEYS, { ...claims, expiresOn: futureDate(-1) }),
      anotherKey: await mintLinkToken("x:a-key-this-deployment-never-had-0123456789", { ...claims, expiresOn: futureDate(60) }),
      otherContact: await mintLinkToken(env.LINK_SIGNING_KEYS, { ...claims, contactId: other.contact.contact_id, expiresOn: futureDate(60) }),
      otherItem: await mintLinkToken(env.LINK_SIGNING_KEYS, { ...claims, itemId: other.item.item_id, expiresOn: futureDate(60) }),
    };
    // Revoked: the item, or the contact, deleted.
    const gone = await setup();
    const goneContact = await setup();
    expect((await call("DELETE", `/v1/items/${gone.item.item_id}`, { token: gone.token })).status).toBe(200);
    expect((await call("DELETE", `/v1/contacts/${goneContact.contact.contact_id}`, { token: goneContact.token })).status).toBe(200);
    const urls = [
      ...Object.values(tokens).flatMap((t) => [`https://api.test/r/${t}`, `https://api.test/r/${t}/acknowledge`]),
      gone.links.page,
      gone.links.complete,
      goneContact.links.page,
    ];
    const answers = await Promise.all(urls.map((url) => getPage(url)));
    const posts = await Promise.all([gone.links.page, `https://api.test/r/${tokens.expired}`, `https://api.test/r/${tokens.unknown}`].map((url) => postForm(url, { action: "complete" })));
    const [first] = answers;
    const headersOf = (p: PageResult) => [...p.headers].filter(([name]) => !["x-request-id", "ratelimit"].includes(name)).sort();
    for (const [i, answer] of [...answers, ...posts].entries()) {
      expect(answer.status, urls[i]).toBe(404);
      expect(answer.html, urls[i]).toBe(first!.html);
      expect(headersOf(answer), urls[i]).toEqual(headersOf(first!));
    }
    expect(first!.html).toContain("This link does not work");
    // Nothing of the other account leaks, and the live link of the test still works.
    expect((await getPage(s.links.page)).status).toBe(200);
  });

  it("run the same D1 statement whatever the token (counted with D1_STATS on)", async () => {
    const s = await setup();
    const claims = { companyId: s.companyId, itemId: s.item.item_id, contactId: s.contact.contact_id, epoch: 1 };
    const lines: Array<Record<string, unknown>> = [];
    const spy = vi.spyOn(console, "info").mockImplementation((line: unknown) => {
      if (typeof line === "string" && line.startsWith("{")) lines.push(JSON.parse(line));
    });
    const tokens = [
      new URL(s.links.page).pathname.split("/")[2]!,
      await mintLinkToken(env.LINK_SIGNING_KEYS, { ...claims, expiresOn: futureDate(-1) }),
      await mintLinkToken("x:a-key-this-deployment-never-had-0123456789", { ...claims, expiresOn: futureDate(60) }),
      "not-a-token",
    ];
    for (const t of tokens) await fetchWithEnv({ REQUEST_LOGS: "on", D1_STATS: "on" }, new Request(`https://api.test/r/${t}`));
    spy.mockRestore();
    const counts = lines.filter((l) => l.msg === "request").map((l) => l.d1_queries);
    expect(counts).toEqual([1, 1, 1, 1]);
  });
});

describe("around the pages", () => {
  afterEach(() => vi.restoreAllMocks());

  it("are rate-limited per address (the anonymous policy), with a page for 429", async () => {
    const s = await setup();
    const address = `10.33.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    for (let attempt = 1; ; attempt++) {
      const window = Math.floor(Date.now() / 60_000);
      let refused: PageResult | undefined;
      for (let i = 0; i < 320 && !refused; i++) {
        const res = await fetchWithEnv({ RATE_LIMITS: "on" }, new Request(s.links.page, { headers: { "CF-Connecting-IP": `${address}${attempt}` } }));
        if (res.status === 429) refused = res;
        else expect(res.status).toBe(200);
      }
      if (Math.floor(Date.now() / 60_000) !== window && attempt < 3) continue;
      expect(refused).toBeDefined();
      expect(refused!.headers.get("Retry-After")).toMatch(/^\d+$/);
      expect(refused!.headers.get("Content-Type")).toMatch(/^text\/html/);
      expect(refused!.headers.get("Content-Security-Policy")).toMatch(/^default-src 'none'/);
      expect(refused!.html).toContain("Too many requests");
      return;
    }
  });

  it("never put a token in the request log line: the page's, nor a calendar feed's", async () => {
    const s = await setup();
    const feed = await call("POST", "/v1/calendar-feeds", { token: s.token });
    const feedUrl = new URL(feed.body.data.url);
    const lines: string[] = [];
    vi.spyOn(console, "info").mockImplementation((line: unknown) => void lines.push(String(line)));
    const token = new URL(s.links.page).pathname.split("/")[2]!;
    const feedToken = feedUrl.pathname.slice("/v1/calendar/".length, -".ics".length);
    const on = { REQUEST_LOGS: "on" };
    await fetchWithEnv(on, new Request(s.links.page));
    await fetchWithEnv(on, new Request(s.links.acknowledge));
    await fetchWithEnv(on, new Request(s.links.page, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "action=snooze&until=soon" }));
    await fetchWithEnv(on, new Request(`https://api.test${feedUrl.pathname}`));
    const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    expect(requests.map((l) => [l.path, l.status])).toEqual([
      ["/r/[token]", 200],
      ["/r/[token]/acknowledge", 200],
      ["/r/[token]", 422],
      ["/v1/calendar/[token].ics", 200],
    ]);
    expect(lines.join("\n")).not.toContain(token);
    expect(lines.join("\n")).not.toContain(feedToken);
  });
});
