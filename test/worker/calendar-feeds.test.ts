// Calendar feeds: create, list, revoke (scope, tenancy, the cap), and the public feed itself parsed by
// ical.js: escaping, folding, dates, UIDs, alarms at the queued reminders' instants, ETag and 304.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import ICAL from "ical.js";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/bytes";
import { clockFor } from "../../src/company-clock/handoff/worker";
import {
  call,
  callWithEnv,
  createAccount,
  createDocumentType,
  createItem,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  uniqueWord,
  type Answer,
  type CallResult,
  type DataOf,
  type Fields,
  type TestAccount,
  expectStatus,
  callRaw,
  ok,
} from "./helpers";

// `c<company id, base 36>_` and 32 random bytes in base64url (43 characters).
const FEED_URL = /^https:\/\/api\.test\/v1\/calendar\/(c[0-9a-z]+_[A-Za-z0-9_-]{43})\.ics$/;
const DEFAULT_FILTERS = { item_type: "all", status: "any", include_archived: false };

async function createFeed(
  token: string,
  body?: Fields,
): Promise<{ feedId: number; url: string; path: string; token: string; data: DataOf<"createCalendarFeed"> }> {
  const res = await call("createCalendarFeed", "/v1/calendar-feeds", { token, ...(body !== undefined && { body }) });
  expectStatus(res, 201, JSON.stringify(res.body));
  const match = FEED_URL.exec(res.body.data.url);
  expect(match, res.body.data.url).not.toBeNull();
  const path = new URL(res.body.data.url).pathname;
  return { feedId: res.body.data.feed_id, url: res.body.data.url, path, token: match![1]!, data: res.body.data };
}

/** GET of a feed, without any Authorization header. */
const fetchFeed = (path: string, headers: Record<string, string> = {}) => call("getCalendarFeed", path, { headers });

function etagOf(res: CallResult): string {
  const etag = res.headers.get("ETag");
  expect(etag, `${res.status} ${JSON.stringify(res.body).slice(0, 300)}`).toMatch(/^"[0-9a-f]{32}"$/);
  return etag!;
}

function parse(res: Answer<"getCalendarFeed">) {
  expectStatus(res, 200, JSON.stringify(res.body).slice(0, 300));
  return new ICAL.Component(ICAL.parse(res.body.__text));
}

const events = (calendar: ICAL.Component) => calendar.getAllSubcomponents("vevent");
const eventOf = (calendar: ICAL.Component, itemId: number) =>
  events(calendar).find((e) => String(e.getFirstPropertyValue("uid")).startsWith(`item-${itemId}-`));
const triggers = (event: ICAL.Component) =>
  event
    .getAllSubcomponents("valarm")
    .map((a) => (a.getFirstPropertyValue("trigger") as ICAL.Time).toJSDate().toISOString())
    .sort();

/** The queued reminders' instants of an item, as the item detail shows them. */
async function queuedInstants(token: string, itemId: number): Promise<string[]> {
  const detail = ok(await call("getItem", `/v1/items/${itemId}`, { token }));
  return detail.body.data.reminders.queued
    .filter((r) => r.state === "queued")
    .map((r) => r.due_at)
    .sort();
}

describe("creating, listing and revoking feeds", () => {
  let tokens: Awaited<ReturnType<typeof demoTokens>>;
  beforeAll(async () => {
    tokens = await demoTokens();
  });

  it("creates a feed without a body: 201 with an absolute URL whose token is stored only as its SHA-256", async () => {
    const feed = await createFeed(tokens.owner);
    expect(Object.keys(feed.data).sort()).toEqual(["created_at", "feed_id", "filters", "url"]);
    expect(feed.data.filters).toEqual(DEFAULT_FILTERS);
    expect(feed.data.created_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    const row = await env.DB.prepare("SELECT * FROM calendar_feeds WHERE id = ?").bind(feed.feedId).first<Fields>();
    expect(row!.token_hash).toBe(await sha256Hex(feed.token));
    expect(JSON.stringify(row)).not.toContain(feed.token);
    expect(row!.company_id).toBe(1);
    expect(row!.client_id).toBe("demo-owner");
  });

  it("takes the item list's filters, stores them with the defaults filled in, and answers them", async () => {
    const dept = await env.DB.prepare("SELECT id FROM departments WHERE company_id = 1 AND is_default = 1").first<{
      id: number;
    }>();
    const body = { folder_id: 0, deptid: dept!.id, item_type: "exp", status: "pending", include_archived: true };
    const feed = await createFeed(tokens.owner, body);
    expect(feed.data.filters).toEqual(body);
    expect((await createFeed(tokens.owner, { status: "completed" })).data.filters).toEqual({
      ...DEFAULT_FILTERS,
      status: "completed",
    });
  });

  it("refuses bad filters with 400 naming the field", async () => {
    const cases: Array<[Fields, RegExp]> = [
      [{ item_type: "expired" }, /item_type must be one of/],
      [{ status: "done" }, /status must be one of/],
      [{ include_archived: "yes" }, /include_archived must be a boolean/],
      [{ folder_id: -1 }, /folder_id/],
      [{ deptid: 0 }, /deptid must be a positive integer/],
      [{ folderid: 1 }, /Unknown field: folderid/],
    ];
    for (const [body, msg] of cases)
      expectShapeB(await call("createCalendarFeed", "/v1/calendar-feeds", { token: tokens.owner, body }), 400, msg);
  });

  it("refuses ids of another company (or none) with 400 naming the field, and stores nothing", async () => {
    const other = await createAccount();
    const folder = ok(
      await call("createFolder", "/v1/folders", { token: other.ownerToken, body: { folder_name: uniqueWord("F") } }),
    );
    const contact = ok(
      await call("createContact", "/v1/contacts", {
        token: other.ownerToken,
        body: { first_name: "O", last_name: "C", email: `${uniqueWord("e")}@example.test` },
      }),
    );
    const before = await env.DB.prepare("SELECT count(*) AS n FROM calendar_feeds WHERE company_id = 1").first<{
      n: number;
    }>();
    const cases: Array<[Fields, RegExp]> = [
      [{ folder_id: folder.body.data.folderid }, new RegExp(`^folder_id ${folder.body.data.folderid} does not exist$`)],
      [{ deptid: other.deptId }, new RegExp(`^deptid ${other.deptId} does not exist$`)],
      [
        { contact_id: contact.body.data.contact_id },
        new RegExp(`^contact_id ${contact.body.data.contact_id} does not exist$`),
      ],
      [{ contact_id: 987654321 }, /^contact_id 987654321 does not exist$/],
    ];
    for (const [body, msg] of cases)
      expectShapeB(await call("createCalendarFeed", "/v1/calendar-feeds", { token: tokens.owner, body }), 400, msg);
    const after = await env.DB.prepare("SELECT count(*) AS n FROM calendar_feeds WHERE company_id = 1").first<{
      n: number;
    }>();
    expect(after!.n).toBe(before!.n);
  });

  it("lists the company's feeds, paginated, without URLs; another company sees none of them", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const mine = [await createFeed(a.ownerToken), await createFeed(a.memberToken, { item_type: "due" })];
    const theirs = await createFeed(b.ownerToken);
    const list = await call("listCalendarFeeds", "/v1/calendar-feeds", { token: a.ownerToken });
    expectStatus(list, 200);
    expect(list.body.meta).toEqual({ total: 2, limit: 50, offset: 0 });
    expect(list.body.data.map((f) => f.feed_id)).toEqual(mine.map((f) => f.feedId));
    expect(list.body.data[1]).toEqual({
      feed_id: mine[1]!.feedId,
      filters: { ...DEFAULT_FILTERS, item_type: "due" },
      created_at: mine[1]!.data.created_at,
    });
    expect(JSON.stringify(list.body)).not.toMatch(/calendar\/|url/);
    const page = ok(await call("listCalendarFeeds", "/v1/calendar-feeds?limit=1&offset=1", { token: a.ownerToken }));
    expect(page.body.data.map((f) => f.feed_id)).toEqual([mine[1]!.feedId]);
    expect(page.body.meta).toEqual({ total: 2, limit: 1, offset: 1 });
    const other = ok(await call("listCalendarFeeds", "/v1/calendar-feeds", { token: b.ownerToken }));
    expect(other.body.data.map((f) => f.feed_id)).toEqual([theirs.feedId]);
  });

  it("revokes a feed: its URL is 404 at once; another company's DELETE is 404 and changes nothing", async () => {
    const feed = await createFeed(tokens.owner);
    expectStatus(await fetchFeed(feed.path), 200);
    expectShapeB(
      await call("deleteCalendarFeed", `/v1/calendar-feeds/${feed.feedId}`, { token: tokens.other }),
      404,
      /^Calendar feed not found$/,
    );
    expectStatus(await fetchFeed(feed.path), 200);
    const etag = etagOf(await fetchFeed(feed.path));
    const revoked = await call("deleteCalendarFeed", `/v1/calendar-feeds/${feed.feedId}`, { token: tokens.owner });
    expectStatus(revoked, 200);
    expect(revoked.body).toMatchObject({ success: true, msg: "Calendar feed revoked" });
    expectShapeB(await fetchFeed(feed.path), 404, /^Calendar feed not found$/);
    expectShapeB(await fetchFeed(feed.path, { "If-None-Match": etag }), 404, /^Calendar feed not found$/);
    expectShapeB(
      await call("deleteCalendarFeed", `/v1/calendar-feeds/${feed.feedId}`, { token: tokens.owner }),
      404,
      /^Calendar feed not found$/,
    );
  });

  it("needs items:read for every feed operation (403 Shape A), and nothing more: a read-only client may create and revoke", async () => {
    const noItems = await tokenFor("demo-owner", "contacts:read");
    for (const [method, path] of [
      ["POST", "/v1/calendar-feeds"],
      ["GET", "/v1/calendar-feeds"],
      ["DELETE", "/v1/calendar-feeds/1"],
    ] as const) {
      const res = await callRaw(method, path, { token: noItems });
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("items:read");
    }
    expectShapeA(await call("createCalendarFeed", "/v1/calendar-feeds"), 401, "invalid_token");
    const feed = await createFeed(tokens.readonly);
    expectStatus(
      await call("deleteCalendarFeed", `/v1/calendar-feeds/${feed.feedId}`, { token: tokens.readonly }),
      200,
    );
  });

  it("allows 100 feeds per company, checked inside the insert: concurrent creates never overshoot", async () => {
    const account = await createAccount();
    for (let i = 0; i < 96; i++) await createFeed(account.ownerToken);
    const racing = await Promise.all(
      Array.from({ length: 8 }, () => call("createCalendarFeed", "/v1/calendar-feeds", { token: account.ownerToken })),
    );
    expect(racing.filter((r) => r.status === 201)).toHaveLength(4);
    for (const refused of racing.filter((r) => r.status !== 201))
      expectShapeB(refused, 400, /^Calendar feed limit reached: a company may have at most 100 calendar feeds$/);
    const count = await env.DB.prepare("SELECT count(*) AS n FROM calendar_feeds WHERE company_id = ?")
      .bind(account.companyId)
      .first<{ n: number }>();
    expect(count!.n).toBe(100);
  });
});

describe("the feed", () => {
  let account: TestAccount;
  let companyName: string;
  let feed: Awaited<ReturnType<typeof createFeed>>;
  let typeName: string;
  let typeId: number;
  const title = (() => {
    const start = 'Fire, safety; cert \\ "quoted" 🎉 Zürich Ωmega ';
    return start + "x".repeat(200 - start.length);
  })();
  const notes = "Line one\nLine two, with a comma; and a semicolon\n\nAfter a blank line: 👩‍👩‍👧 ✓";
  const items = {} as Record<"main" | "plain" | "archived" | "done", DataOf<"getItem">>;

  beforeAll(async () => {
    account = await createAccount();
    companyName = (await env.DB.prepare("SELECT name FROM companies WHERE id = ?")
      .bind(account.companyId)
      .first<{ name: string }>())!.name;
    const type = await createDocumentType(account.ownerToken, { doctype_name: uniqueWord("Permit, type; ") });
    typeName = type.name;
    typeId = type.typeid;
    expect(title).toHaveLength(200);
    items.main = await createItem(account.ownerToken, {
      title,
      notes,
      expiry_date: "2031-03-15",
      folder_path: "Permits/City, North",
      document_type_id: typeId,
    });
    items.plain = await createItem(account.ownerToken, { title: "Plain", expiry_date: "2031-01-10", item_type: "apt" });
    items.archived = await createItem(account.ownerToken, { title: "Archived one", expiry_date: "2031-02-01" });
    items.done = await createItem(account.ownerToken, {
      title: "Done one",
      expiry_date: "2031-02-02",
      item_type: "due",
    });
    expectStatus(
      await call("archiveItem", `/v1/items/${items.archived.item_id}/archive`, { token: account.ownerToken }),
      200,
    );
    expectStatus(
      await call("setItemStatus", `/v1/items/${items.done.item_id}/status`, {
        token: account.ownerToken,
        body: { status: "completed" },
      }),
      200,
    );
    feed = await createFeed(account.memberToken);
  });

  it("is a VCALENDAR served without authentication as text/calendar, CRLF lines of at most 75 octets", async () => {
    const res = await fetchFeed(feed.path);
    expectStatus(res, 200);
    expect(res.headers.get("Content-Type")).toBe("text/calendar; charset=utf-8");
    expect(res.headers.get("Cache-Control")).toBe("private, no-cache");
    etagOf(res);
    const text = res.body.__text;
    expect(text.startsWith("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:")).toBe(true);
    expect(text.endsWith("END:VCALENDAR\r\n")).toBe(true);
    expect(text.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/);
    for (const line of text.split("\r\n")) expect(new TextEncoder().encode(line).length).toBeLessThanOrEqual(75);
    const calendar = parse(res);
    expect(calendar.getFirstPropertyValue("version")).toBe("2.0");
    expect(calendar.getFirstPropertyValue("calscale")).toBe("GREGORIAN");
    expect(calendar.getFirstPropertyValue("method")).toBe("PUBLISH");
    expect(calendar.getFirstPropertyValue("x-wr-calname")).toBe(companyName);
    expect(text).toContain("\r\nREFRESH-INTERVAL;VALUE=DURATION:PT1H\r\n");
    expect(text).toContain("\r\nX-PUBLISHED-TTL:PT1H\r\n");
  });

  it("has one all-day event per item in expiry order, archived ones left out; SUMMARY and DESCRIPTION round-trip exactly", async () => {
    const calendar = parse(await fetchFeed(feed.path));
    const uids = events(calendar).map((e) => e.getFirstPropertyValue("uid"));
    const ids = [items.plain, items.done, items.main].map((i) => i.item_id);
    expect(uids).toEqual(ids.map((id) => `item-${id}-${account.companyId}@expiry-reminder`));
    const main = eventOf(calendar, items.main.item_id)!;
    expect(main.getFirstPropertyValue("summary")).toBe(title);
    expect(main.getFirstPropertyValue("description")).toBe(
      `Type: Expiration\nFolder: Permits/City, North\nDocument type: ${typeName}\n\n${notes}`,
    );
    expect(String(main.getFirstPropertyValue("dtstart"))).toBe("2031-03-15");
    expect((main.getFirstPropertyValue("dtstart") as ICAL.Time).isDate).toBe(true);
    expect(String(main.getFirstPropertyValue("dtend"))).toBe("2031-03-16");
    expect(main.getFirstPropertyValue("status")).toBe("CONFIRMED");
    expect(main.getFirstPropertyValue("dtstamp")).toBeTruthy();
    expect(main.getFirstPropertyValue("last-modified")).toBeTruthy();
    const done = eventOf(calendar, items.done.item_id)!;
    expect(done.getFirstPropertyValue("status")).toBe("CANCELLED");
    expect(done.getFirstPropertyValue("description")).toBe("Type: Due date\nStatus: completed");
    expect(eventOf(calendar, items.plain.item_id)!.getFirstPropertyValue("description")).toBe("Type: Appointment");
  });

  it("has a VALARM at each queued reminder's instant (the default sequence), none for a completed item's held reminders", async () => {
    const calendar = parse(await fetchFeed(feed.path));
    for (const item of [items.main, items.plain]) {
      const queued = await queuedInstants(account.ownerToken, item.item_id);
      expect(queued).toHaveLength(5);
      const event = eventOf(calendar, item.item_id)!;
      expect(triggers(event)).toEqual(queued);
      for (const alarm of event.getAllSubcomponents("valarm")) {
        expect(alarm.getFirstPropertyValue("action")).toBe("DISPLAY");
        expect(alarm.getFirstPropertyValue("description")).toBe(item.title);
      }
    }
    expect(triggers(eventOf(calendar, items.done.item_id)!)).toEqual([]);
  });

  it("keeps its UIDs from one fetch to the next, edits included", async () => {
    const uidsOf = async () =>
      events(parse(await fetchFeed(feed.path)))
        .map((e) => e.getFirstPropertyValue("uid"))
        .sort();
    const first = await uidsOf();
    expectStatus(
      await call("updateItem", `/v1/items/${items.plain.item_id}`, {
        token: account.ownerToken,
        body: { notes: "edited" },
      }),
      200,
    );
    expect(await uidsOf()).toEqual(first);
  });

  it("applies its filters, include_archived included", async () => {
    const uidsOf = async (body: Fields) =>
      events(parse(await fetchFeed((await createFeed(account.ownerToken, body)).path))).map((e) =>
        Number(/item-(\d+)-/.exec(String(e.getFirstPropertyValue("uid")))![1]),
      );
    expect(await uidsOf({ include_archived: true })).toEqual(
      [items.plain, items.archived, items.done, items.main].map((i) => i.item_id),
    );
    expect(await uidsOf({ status: "completed" })).toEqual([items.done.item_id]);
    expect(await uidsOf({ item_type: "apt" })).toEqual([items.plain.item_id]);
    expect(await uidsOf({ folder_id: 0 })).toEqual([items.plain, items.done].map((i) => i.item_id));
    const city = await env.DB.prepare("SELECT folder_id FROM items WHERE id = ?")
      .bind(items.main.item_id)
      .first<{ folder_id: number }>();
    expect(await uidsOf({ folder_id: city!.folder_id })).toEqual([items.main.item_id]);
  });
});

describe("ETag and 304", () => {
  let account: TestAccount;
  let path: string;
  let item: DataOf<"getItem">;

  beforeAll(async () => {
    account = await createAccount();
    item = await createItem(account.ownerToken, {
      title: "Lift inspection",
      expiry_date: "2032-05-20",
      folder_path: "Sites/Depot",
    });
    await createItem(account.ownerToken, { title: "Other", expiry_date: "2032-06-01" });
    path = (await createFeed(account.ownerToken)).path;
  });

  /** The current ETag, checked to answer 304 (the 200's ETag is the one a 304 check computes). */
  async function stableEtag(): Promise<string> {
    const etag = etagOf(await fetchFeed(path));
    const again = await fetchFeed(path, { "If-None-Match": etag });
    expectStatus(again, 304);
    expect(again.headers.get("ETag")).toBe(etag);
    return etag;
  }

  /** After a change: the old ETag gets a 200 with a new ETag; returns the new body. */
  async function expectChanged(etag: string): Promise<{ etag: string; calendar: ICAL.Component }> {
    const res = await fetchFeed(path, { "If-None-Match": etag });
    expectStatus(res, 200);
    const next = etagOf(res);
    expect(next).not.toBe(etag);
    return { etag: next, calendar: parse(res) };
  }

  it("answers 304 with no body to If-None-Match naming the ETag (weak form and * too), the same ETag every time", async () => {
    const etag = await stableEtag();
    for (const value of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const res = await fetchFeed(path, { "If-None-Match": value });
      expectStatus(res, 304, value);
      expect(res.body).toEqual({});
      expect(res.headers.get("Cache-Control")).toBe("private, no-cache");
    }
    expectStatus(await fetchFeed(path, { "If-None-Match": '"0123456789abcdef0123456789abcdef"' }), 200);
    for (const malformed of [`*, ${etag}`, `${etag}x`, etag.slice(1, -1)]) {
      expectShapeB(
        await fetchFeed(path, { "If-None-Match": malformed }),
        400,
        /^If-None-Match must be \* alone or a comma-separated list of entity tags/,
      );
    }
    expect(etagOf(await fetchFeed(path))).toBe(etag);
    const head = await callRaw("HEAD", path);
    expectStatus(head, 200);
    expect(head.headers.get("ETag")).toBe(etag);
  });

  it("changes with every change the body shows: item, new item, archive, folder, document type, company name", async () => {
    let etag = await stableEtag();
    // biome-ignore lint/suspicious/noConfusingVoidType: a change answers its call, or nothing
    const changes: Array<() => Promise<CallResult | void>> = [
      () =>
        call("updateItem", `/v1/items/${item.item_id}`, {
          token: account.ownerToken,
          body: { title: "Lift inspection, renamed" },
        }),
      () =>
        call("createItem", "/v1/items", {
          token: account.ownerToken,
          body: { title: "Newcomer", expiry_date: "2032-07-01", seqid: 0 },
        }),
      async () => {
        const folder = await env.DB.prepare("SELECT folder_id FROM items WHERE id = ?")
          .bind(item.item_id)
          .first<{ folder_id: number }>();
        return call("updateFolder", `/v1/folders/${folder!.folder_id}`, {
          token: account.ownerToken,
          body: { folder_name: "Depot North" },
        });
      },
      async () => {
        const type = await createDocumentType(account.ownerToken);
        return call("updateItem", `/v1/items/${item.item_id}`, {
          token: account.ownerToken,
          body: { document_type_id: type.typeid },
        });
      },
      async () => {
        const typeId = (await env.DB.prepare("SELECT document_type_id AS id FROM items WHERE id = ?")
          .bind(item.item_id)
          .first<{ id: number }>())!.id;
        return call("updateDocumentType", `/v1/document-types/${typeId}`, {
          token: account.ownerToken,
          body: { doctype_name: uniqueWord("Renamed ") },
        });
      },
      async () =>
        void (await env.DB.prepare("UPDATE companies SET name = ? WHERE id = ?")
          .bind(uniqueWord("Company "), account.companyId)
          .run()),
      () => call("archiveItem", `/v1/items/${item.item_id}/archive`, { token: account.ownerToken }),
    ];
    for (const [i, change] of changes.entries()) {
      const res = await change();
      if (res) expect(res.status, `change ${i}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
      etag = (await expectChanged(etag)).etag;
      expect(await stableEtag()).toBe(etag);
    }
  });

  it("changes when a reminder is queued and when one is sent, and the alarms follow", async () => {
    const live = await createItem(account.ownerToken, { title: "Boiler", expiry_date: "2032-09-30" });
    let etag = await stableEtag();
    const when = new Date(Date.now() + 3 * 86_400_000);
    const added = await call("createItemReminder", `/v1/items/${live.item_id}/reminders`, {
      token: account.ownerToken,
      body: { date: when.toISOString().slice(0, 10), hour: "10:30" },
    });
    expectStatus(added, 201, JSON.stringify(added.body));
    let changed = await expectChanged(etag);
    expect(triggers(eventOf(changed.calendar, live.item_id)!)).toEqual(
      await queuedInstants(account.ownerToken, live.item_id),
    );
    expect(triggers(eventOf(changed.calendar, live.item_id)!)).toContain(added.body.data.due_at);
    etag = changed.etag;

    // The reminder's minute comes (moved into the past inside the object), then the alarm sends it.
    const stub = clockFor(env, account.companyId);
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec(
        "UPDATE reminders SET due_at = ? WHERE reminder_id = ?",
        Date.now() - 1000,
        added.body.data.reminder_id,
      );
    });
    etag = (await expectChanged(etag)).etag;
    await runDurableObjectAlarm(stub);
    changed = await expectChanged(etag);
    const alarms = triggers(eventOf(changed.calendar, live.item_id)!);
    expect(alarms).toHaveLength(5);
    expect(alarms).toEqual(await queuedInstants(account.ownerToken, live.item_id));
    expect(await stableEtag()).toBe(changed.etag);
  });
});

describe("changes the reminder engine has not applied yet", () => {
  it("are applied before the feed answers, and the ETag moves until none is left", async () => {
    const account = await createAccount();
    const item = await createItem(account.ownerToken, { title: "Changed in D1 only", expiry_date: "2032-10-10" });
    const path = (await createFeed(account.ownerToken)).path;
    const first = await fetchFeed(path);
    expect(triggers(eventOf(parse(first), item.item_id)!)).toHaveLength(5);
    // As if the request's call to the Durable Object had failed: D1 changed, the outbox row waits.
    await env.DB.prepare("UPDATE items SET status = 'completed' WHERE id = ?").bind(item.item_id).run();
    const changed = await fetchFeed(path, { "If-None-Match": etagOf(first) });
    expect(triggers(eventOf(parse(changed), item.item_id)!)).toEqual([]);
    const outbox = await env.DB.prepare(
      "SELECT version > synced_version AS pending FROM reminder_sync WHERE item_id = ?",
    )
      .bind(item.item_id)
      .first<{ pending: number }>();
    expect(outbox!.pending).toBe(0);
    // The 200 read its fingerprint while the change was still pending: the next fetch answers 200 once more, then 304.
    const settled = await fetchFeed(path, { "If-None-Match": etagOf(changed) });
    expectStatus(settled, 200);
    expectStatus(await fetchFeed(path, { "If-None-Match": etagOf(settled) }), 304);
  });
});

describe("the feed URL", () => {
  let path: string;
  beforeAll(async () => {
    path = (await createFeed((await demoTokens()).owner)).path;
  });

  it("is 404 (Shape B) for an unknown or malformed token, and for a path without .ics", async () => {
    expectShapeB(await fetchFeed(`/v1/calendar/${"A".repeat(43)}.ics`), 404, /^Calendar feed not found$/);
    expectShapeB(await fetchFeed("/v1/calendar/short.ics"), 404, /^Calendar feed not found$/);
    expectShapeB(await callRaw("GET", path.replace(".ics", "")), 404, /^No route for GET/);
  });

  it("answers other methods 405 with Allow: GET, HEAD", async () => {
    const res = await callRaw("POST", path);
    expectShapeB(res, 405);
    expect(res.headers.get("Allow")).toBe("GET, HEAD");
  });

  it("ignores an Authorization header and is counted against the anonymous rate limit of the address", async () => {
    const owner = (await demoTokens()).owner;
    const withToken = await call("getCalendarFeed", path, { token: owner });
    expectStatus(withToken, 200);
    const limited = await callWithEnv({ RATE_LIMITS: "on" }, "getCalendarFeed", path, {
      headers: { "CF-Connecting-IP": "203.0.113.77" },
    });
    expectStatus(limited, 200);
    expect(limited.headers.get("RateLimit-Policy")).toBe('"anonymous";q=300;w=60');
  });
});
