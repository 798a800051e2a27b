// Imports (docs/imports.md): jobs run as Workflows; rows checked strictly, written in fenced
// chunks; dry run, abort and skip; re-imports change nothing; quotas; contacts; scopes.
import { beforeAll, describe, expect, it } from "vitest";
import { writeChunk } from "../../src/imports/job";
import { parseDate } from "../../src/lib/time";
import { csvRecords } from "../../src/imports/parse";
import {
  BASE,
  call,
  createAccount,
  env,
  expectShapeA,
  expectShapeB,
  readResult,
  tokenFor,
  uniqueEmail,
  uniqueWord,
  type DataOf,
  type Fields,
  type TestAccount,
  expectStatus,
  ok,
} from "./helpers";
import { exports } from "cloudflare:workers";

let account: TestAccount;

beforeAll(async () => {
  account = await createAccount({ documents: 100_000 }, { documents: 5_000, contacts: 5_000 });
});

async function upload(
  query: string,
  body: string,
  contentType = "text/csv",
  token = account.ownerToken,
  headers: Record<string, string> = {},
) {
  return readResult(
    await exports.default.fetch(
      new Request(`${BASE}/v1/imports?${query}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": contentType, ...headers },
        body,
      }),
    ),
    "createImport",
  );
}

async function finished(importId: number, token = account.ownerToken): Promise<DataOf<"getImport">> {
  for (let i = 0; i < 600; i++) {
    const res = await call("getImport", `/v1/imports/${importId}`, { token });
    expectStatus(res, 200);
    if (["completed", "failed", "canceled"].includes(res.body.data.status)) return res.body.data;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`import ${importId} did not finish`);
}

async function run(query: string, body: string, contentType = "text/csv"): Promise<DataOf<"getImport">> {
  const res = await upload(query, body, contentType);
  expectStatus(res, 202, JSON.stringify(res.body));
  expect(res.body.data.status).toBe("queued");
  return finished(res.body.data.import_id);
}

async function errorsOf(importId: number): Promise<DataOf<"listImportErrors">> {
  const res = await call("listImportErrors", `/v1/imports/${importId}/errors?limit=1000`, {
    token: account.ownerToken,
  });
  expectStatus(res, 200);
  return res.body.data;
}

const countItems = async (prefix: string) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM items WHERE company_id = ? AND external_id LIKE ?")
    .bind(account.companyId, `${prefix}%`)
    .first<number>("n"))!;

/** A CSV of `n` rows with external ids `<prefix>-<k>`; `bad` row numbers get an impossible date. */
function itemsCsv(prefix: string, n: number, bad: number[] = []): string {
  const lines = ["external_id,title,expiry_date,notes,tags"];
  for (let k = 1; k <= n; k++)
    lines.push(`${prefix}-${k},"Cert ${k}, ""A""",${bad.includes(k) ? "2027-02-30" : "2028-03-15"},,x|y`);
  return `${lines.join("\r\n")}\r\n`;
}

describe("item imports", () => {
  it("a 1,000-row CSV with 3 bad rows: dry run reports exactly those rows, abort writes nothing, skip writes 997, a re-import changes nothing", async () => {
    const prefix = uniqueWord("imp");
    const csv = itemsCsv(prefix, 1000, [7, 500, 1000]);

    const dry = await run("resource=items&dry_run=true", csv);
    expect(dry).toMatchObject({
      status: "completed",
      dry_run: true,
      counts: { rows: 1000, valid: 997, failed: 3, created: 0 },
    });
    expect((await errorsOf(dry.import_id)).map((e) => [e.row, e.column, e.value])).toEqual([
      [7, "expiry_date", "2027-02-30"],
      [500, "expiry_date", "2027-02-30"],
      [1000, "expiry_date", "2027-02-30"],
    ]);
    expect(await countItems(prefix)).toBe(0);

    const aborted = await run("resource=items", csv);
    expect(aborted).toMatchObject({ status: "failed", counts: { failed: 3, created: 0 } });
    expect(aborted.message).toMatch(/nothing was written/);
    expect(await countItems(prefix)).toBe(0);

    const skipped = await run("resource=items&on_error=skip", csv);
    expect(skipped).toMatchObject({
      status: "completed",
      progress: 1,
      counts: { rows: 1000, valid: 997, created: 997, updated: 0, failed: 3 },
    });
    expect(await countItems(prefix)).toBe(997);
    // Reminders queued like a POST's: every new item is in the reminder engine's outbox or applied.
    const item = await env.DB.prepare("SELECT id FROM items WHERE company_id = ? AND external_id = ?")
      .bind(account.companyId, `${prefix}-1`)
      .first<number>("id");
    const detail = ok(await call("getItem", `/v1/items/${item}`, { token: account.ownerToken }));
    expect(detail.body.data).toMatchObject({ title: 'Cert 1, "A"', expiry_date: "2028-03-15", tags: ["x", "y"] });

    const again = await run("resource=items&on_error=skip", csv);
    expect(again.counts).toMatchObject({ created: 0, updated: 0, skipped: 997, failed: 3 });
    expect(await countItems(prefix)).toBe(997);
    const version = await env.DB.prepare("SELECT version FROM items WHERE id = ?").bind(item).first<number>("version");
    expect(version).toBe(1);
  });

  it("a changed row updates its item by external_id; empty cells keep the stored value", async () => {
    const ext = uniqueWord("upd");
    await run("resource=items", `external_id,title,expiry_date,notes\n${ext},First,2029-01-01,keep me\n`);
    const done = await run("resource=items", `external_id,title,expiry_date,notes\n${ext},,2029-06-30,\n`);
    expect(done.counts).toMatchObject({ created: 0, updated: 1 });
    const row = await env.DB.prepare(
      "SELECT title, notes, expiry_date, reminder_anchor FROM items WHERE external_id = ?",
    )
      .bind(ext)
      .first();
    expect(row).toEqual({ title: "First", notes: "keep me", expiry_date: "2029-06-30", reminder_anchor: "2029-06-30" });
  });

  it("reads dates strictly in date_format, never guessing", async () => {
    const ext = uniqueWord("d");
    const done = await run(
      "resource=items&date_format=DD.MM.YYYY&dry_run=true",
      `external_id,title,expiry_date\n${ext}1,A,31.01.2027\n${ext}2,B,2027-01-31\n${ext}3,C,29.02.2027\n${ext}4,D,1.2.2027\n${ext}5,E,29.02.2028\n`,
    );
    expect((await errorsOf(done.import_id)).map((e) => e.row)).toEqual([2, 3, 4]);
    expect(parseDate("03/04/2027", "MM/DD/YYYY")).toBe("2027-03-04");
    expect(parseDate("03/04/2027", "DD/MM/YYYY")).toBe("2027-04-03");
    expect(parseDate("Feb 29, 2028", "MMM D, YYYY")).toBe("2028-02-29");
    expect(parseDate("Feb 29, 2027", "MMM D, YYYY")).toBeNull();
    expect(parseDate("", "YYYY-MM-DD")).toBeNull();
  });

  it("reports missing and invalid columns by row and column, and within-file duplicate external ids", async () => {
    const ext = uniqueWord("v");
    const done = await run(
      "resource=items&dry_run=true",
      `external_id,title,expiry_date,item_type,Unknown\n${ext},,2027-01-01,exp,\n${ext},T,2027-01-01,nope,\n${ext}b,T,2027-01-01,,value\n`,
    );
    const errors = await errorsOf(done.import_id);
    expect(errors.map((e) => [e.row, e.column])).toEqual([
      [1, "title"],
      [2, "external_id"],
      [2, "item_type"],
      [3, "Unknown"],
    ]);
  });

  it("takes JSON and NDJSON bodies, tags as arrays and custom fields by name", async () => {
    const type = await call("createDocumentType", "/v1/document-types", {
      token: account.ownerToken,
      body: {
        doctype_name: uniqueWord("Insp"),
        fields: [
          { field_name: "Inspector", field_type: "text" },
          { field_name: "Result", field_type: "select", field_data: "Passed\nFailed" },
        ],
      },
    });
    expectStatus(type, 201, JSON.stringify(type.body));
    const name = type.body.data.name;
    const ext = uniqueWord("j");
    const json = JSON.stringify([
      {
        external_id: ext,
        title: "J",
        expiry_date: "2027-05-05",
        document_type: name,
        Inspector: "Ada",
        tags: ["a,b", "c;d"],
        fields: { Result: "Passed" },
      },
    ]);
    expect((await run("resource=items", json, "application/json")).counts).toMatchObject({ created: 1, failed: 0 });
    const stored = await env.DB.prepare(
      "SELECT group_concat(v.value, '|') AS v FROM item_field_values v JOIN items i ON i.id = v.item_id WHERE i.external_id = ? ORDER BY v.field_id",
    )
      .bind(ext)
      .first<string>("v");
    expect(stored?.split("|").sort()).toEqual(["Ada", "Passed"]);
    const nd = `{"external_id":"${ext}n","title":"N","expiry_date":"2027-05-05","document_type":${JSON.stringify(name)},"Result":"Maybe"}\nnot json\n`;
    const failed = await run("resource=items&on_error=skip", nd, "application/x-ndjson");
    expect((await errorsOf(failed.import_id)).map((e) => [e.row, e.column])).toEqual([
      [1, "Result"],
      [2, ""],
    ]);
  });

  it("stops at documents_limit: abort refuses the whole file up front, skip writes what fits and fails the rest", async () => {
    const small = await createAccount({}, { documents: 5 });
    const up = (query: string, body: string) => upload(query, body, "text/csv", small.ownerToken);
    const csv = [
      "external_id,title,expiry_date",
      ...Array.from({ length: 8 }, (_, k) => `q${k},T${k},2027-01-01`),
    ].join("\n");
    const abort = await finished(ok(await up("resource=items", csv)).body.data.import_id, small.ownerToken);
    expect(abort).toMatchObject({ status: "failed", counts: { created: 0 } });
    expect(abort.message).toMatch(/documents_limit/);
    const skip = await finished(
      ok(await up("resource=items&on_error=skip", csv)).body.data.import_id,
      small.ownerToken,
    );
    expect(skip.counts).toMatchObject({ created: 5, failed: 3 });
    const used = await env.DB.prepare("SELECT documents_used FROM companies WHERE id = ?")
      .bind(small.companyId)
      .first<number>("documents_used");
    expect(used).toBe(5);
  });

  it("a chunk written twice (a retried step) writes its rows once", async () => {
    const prefix = uniqueWord("twice");
    const res = ok(await upload("resource=items", itemsCsv(prefix, 5)));
    const job = await finished(res.body.data.import_id);
    expect(job.counts.created).toBe(5);
    // Replay the step as a crashed-and-retried Workflow would: the job is past it.
    await env.DB.prepare("UPDATE imports SET status = 'running' WHERE id = ?").bind(job.import_id).run();
    await writeChunk(env as never, 0, job.import_id, 0);
    expect(await countItems(prefix)).toBe(5);
  });
});

describe("external_id on items", () => {
  it("is set by POST and PATCH, unique in the company (409), shown in detail and filterable in the list", async () => {
    const ext = uniqueWord("ext");
    const created = await call("createItem", "/v1/items", {
      token: account.ownerToken,
      body: { title: "E", expiry_date: "2030-01-01", external_id: ext },
    });
    expectStatus(created, 201, JSON.stringify(created.body));
    const id = created.body.data.item_id;
    expectShapeB(
      await call("createItem", "/v1/items", {
        token: account.ownerToken,
        body: { title: "E2", expiry_date: "2030-01-01", external_id: ext },
      }),
      409,
      /external_id/,
    );
    const detail = ok(await call("getItem", `/v1/items/${id}`, { token: account.ownerToken }));
    expect(detail.body.data).toMatchObject({ external_id: ext, fields: [] });
    const listed = ok(
      await call("listItems", `/v1/items?external_id=${encodeURIComponent(ext)}`, { token: account.ownerToken }),
    );
    expect(listed.body.data.map((i) => i.item_id)).toEqual([id]);
    const other = ok(
      await call("createItem", "/v1/items", {
        token: account.ownerToken,
        body: { title: "E3", expiry_date: "2030-01-01" },
      }),
    );
    expectShapeB(
      await call("updateItem", `/v1/items/${other.body.data.item_id}`, {
        token: account.ownerToken,
        body: { external_id: ext },
      }),
      409,
      /external_id/,
    );
    const cleared = ok(
      await call("updateItem", `/v1/items/${id}`, { token: account.ownerToken, body: { external_id: null } }),
    );
    expect(cleared.body.data.external_id).toBeNull();
    // Another company may use the same key.
    const elsewhere = await createAccount();
    expectStatus(
      await call("createItem", "/v1/items", {
        token: elsewhere.ownerToken,
        body: { title: "E", expiry_date: "2030-01-01", external_id: ext },
      }),
      201,
    );
  });
});

describe("recurrence columns", () => {
  const RULE = "recurrence_every,recurrence_unit,recurrence_renew_on,recurrence_until,recurrence_count";
  const token = () => account.ownerToken;
  async function post(body: Fields): Promise<number> {
    const res = await call("createItem", "/v1/items", { token: token(), body: { title: "Recurring", ...body } });
    expectStatus(res, 201, JSON.stringify(res.body));
    return res.body.data.item_id;
  }
  /** The item of `ext`: its rule and next dates as the detail shows them, its anchor and version in D1. */
  async function itemOf(ext: string) {
    const row = await env.DB.prepare(
      "SELECT id, recur_anchor, version FROM items WHERE company_id = ? AND external_id = ?",
    )
      .bind(account.companyId, ext)
      .first<{ id: number; recur_anchor: string | null; version: number }>();
    const detail = ok(await call("getItem", `/v1/items/${row!.id}`, { token: token() })).body.data;
    return {
      id: row!.id,
      anchor: row!.recur_anchor,
      version: row!.version,
      date: detail.expiry_date,
      recurrence: detail.recurrence,
      next: detail.next_occurrences,
    };
  }

  it("create recurring items (until in date_format, counting from the expiry date); empty recurrence cells create a plain item", async () => {
    const p = uniqueWord("rc");
    const csv = `external_id,title,expiry_date,${RULE}\n${p}1,Monthly,31.01.2031,1,month,expired,31.12.2031,6\n${p}2,Weekly,15.02.2031, 2 ,week,completed,,\n${p}3,Plain,01.03.2031,,,,,\n`;
    const job = await run("resource=items&date_format=DD.MM.YYYY", csv);
    expect(job.counts).toMatchObject({ created: 3, failed: 0 });
    expect(await itemOf(`${p}1`)).toMatchObject({
      anchor: "2031-01-31",
      recurrence: { every: 1, unit: "month", renew_on: "expired", until: "2031-12-31", count: 6 },
      next: ["2031-02-28", "2031-03-31", "2031-04-30"],
    });
    expect(await itemOf(`${p}2`)).toMatchObject({
      anchor: "2031-02-15",
      recurrence: { every: 2, unit: "week", renew_on: "completed", until: null, count: null },
    });
    expect(await itemOf(`${p}3`)).toMatchObject({ anchor: null, recurrence: null, next: [] });
  });

  it("updates a rule, keeping its anchor while every, unit and the date stay; an unchanged rule is skipped; the company's clock gets the change", async () => {
    const ext = uniqueWord("ru");
    const id = await post({
      external_id: ext,
      expiry_date: "2032-01-31",
      recurrence: { every: 1, unit: "month", renew_on: "completed" },
    });
    expect(
      ok(await call("setItemStatus", `/v1/items/${id}/status`, { token: token(), body: { status: "completed" } })).body
        .data.expiry_date,
    ).toBe("2032-02-29");
    expect((await itemOf(ext)).anchor).toBe("2032-01-31");

    const counted = `external_id,${RULE}\n${ext},1,month,completed,,5\n`;
    expect((await run("resource=items", counted)).counts).toMatchObject({ updated: 1, skipped: 0 });
    const kept = await itemOf(ext);
    expect(kept).toMatchObject({
      anchor: "2032-01-31",
      recurrence: { every: 1, unit: "month", renew_on: "completed", until: null, count: 5 },
      next: ["2032-03-31", "2032-04-30", "2032-05-31"],
    });
    const outbox = await env.DB.prepare("SELECT version, synced_version FROM reminder_sync WHERE item_id = ?")
      .bind(id)
      .first<{ version: number; synced_version: number }>();
    expect(outbox!.synced_version).toBe(outbox!.version);

    // The same rule again, with or without the (same) date: nothing to change.
    expect((await run("resource=items", counted)).counts).toMatchObject({ updated: 0, skipped: 1 });
    expect(
      (await run("resource=items", `external_id,expiry_date,${RULE}\n${ext},2032-02-29,1,month,completed,,5\n`)).counts,
    ).toMatchObject({ updated: 0, skipped: 1 });
    expect((await itemOf(ext)).version).toBe(kept.version);

    // A new unit counts from the item's date; so does a new date under the same rule.
    await run("resource=items", `external_id,${RULE}\n${ext},1,week,completed,,5\n`);
    expect(await itemOf(ext)).toMatchObject({ anchor: "2032-02-29", next: ["2032-03-07", "2032-03-14", "2032-03-21"] });
    await run("resource=items", `external_id,expiry_date,${RULE}\n${ext},2032-03-10,1,week,completed,,5\n`);
    expect(await itemOf(ext)).toMatchObject({ anchor: "2032-03-10", date: "2032-03-10" });
  });

  it("removes the rule of a row whose recurrence cells are all empty, and leaves rules alone when the file has no recurrence column", async () => {
    const [a, b] = [uniqueWord("rx"), uniqueWord("rx")];
    for (const ext of [a, b])
      await post({
        external_id: ext,
        expiry_date: "2033-01-31",
        recurrence: { every: 1, unit: "month", renew_on: "expired" },
      });
    const rule = { every: 1, unit: "month", renew_on: "expired", until: null, count: null };

    expect((await run("resource=items", `external_id,title\n${a},Renamed\n`)).counts).toMatchObject({ updated: 1 });
    expect(await itemOf(a)).toMatchObject({ anchor: "2033-01-31", recurrence: rule });
    // A new date without the columns: the rule stays and counts from the new date, as PATCH expiry_date does.
    await run("resource=items", `external_id,expiry_date\n${a},2033-02-10\n`);
    expect(await itemOf(a)).toMatchObject({
      anchor: "2033-02-10",
      recurrence: rule,
      next: ["2033-03-10", "2033-04-10", "2033-05-10"],
    });

    const done = await run("resource=items", `external_id,${RULE}\n${a},,,,,\n${b},1,month,expired,,\n`);
    expect(done.counts).toMatchObject({ updated: 1, skipped: 1, failed: 0 });
    expect(await itemOf(a)).toMatchObject({ anchor: null, recurrence: null, next: [] });
    expect(await itemOf(b)).toMatchObject({ anchor: "2033-01-31", recurrence: rule });
  });

  it("reports each bad recurrence cell as a row error naming its column, with the API's message, and writes nothing", async () => {
    const p = uniqueWord("rbad");
    const existing = `${p}-old`;
    await post({ external_id: existing, expiry_date: "2034-06-15" });
    const rows: Array<[string, string]> = [
      ["0,month,expired,,", "recurrence_every must be an integer from 1 to 1000"],
      ["x,month,expired,,", "recurrence_every must be an integer from 1 to 1000"],
      ["1001,month,expired,,", "recurrence_every must be an integer from 1 to 1000"],
      [",month,expired,,", "recurrence_every must be an integer from 1 to 1000"],
      ["1,hour,expired,,", "recurrence_unit must be one of: day, week, month, year"],
      ["1,month,paid,,", "recurrence_renew_on must be one of: completed, expired"],
      ["1,month,,,", "recurrence_renew_on must be one of: completed, expired"],
      ["1,month,expired,2034-02-30,", "recurrence_until must be a real calendar date in the format YYYY-MM-DD"],
      ["1,month,expired,2033-12-31,", "recurrence_until must not be earlier than expiry_date"],
      ["1,month,expired,,-1", "recurrence_count must be an integer from 0 to 10000"],
      ["1,month,expired,,10001", "recurrence_count must be an integer from 0 to 10000"],
      ["1,month,expired,,1.5", "recurrence_count must be an integer from 0 to 10000"],
    ];
    const columns = [
      "recurrence_every",
      "recurrence_every",
      "recurrence_every",
      "recurrence_every",
      "recurrence_unit",
      "recurrence_renew_on",
      "recurrence_renew_on",
      "recurrence_until",
      "recurrence_until",
      "recurrence_count",
      "recurrence_count",
      "recurrence_count",
    ];
    const lines = rows.map(([cells], k) => `${p}-${k + 1},T,2034-01-01,${cells}`);
    lines.push(`${existing},,,1,year,expired,2034-06-14,`, `${p}-ok,T,2034-01-01,1,year,expired,,`);
    const job = await run("resource=items", `external_id,title,expiry_date,${RULE}\n${lines.join("\n")}\n`);
    expect(job).toMatchObject({ status: "failed", counts: { failed: rows.length + 1, created: 0, updated: 0 } });
    expect((await errorsOf(job.import_id)).map((e) => [e.row, e.column, e.message])).toEqual([
      ...rows.map(([, message], k) => [k + 1, columns[k], message]),
      [
        rows.length + 1,
        "recurrence_until",
        "recurrence_until must not be earlier than the item's expiry_date 2034-06-15",
      ],
    ]);
    expect(await countItems(p)).toBe(1);
    expect((await itemOf(existing)).recurrence).toBeNull();

    // JSON: the rule as an object, checked the same way.
    const rule = { every: 1, unit: "month", renew_on: "expired" };
    const json = JSON.stringify([
      { external_id: `${p}-j1`, title: "T", expiry_date: "2034-01-01", recurrence: "monthly" },
      { external_id: `${p}-j2`, title: "T", expiry_date: "2034-01-01", recurrence: { ...rule, interval: 2 } },
      { external_id: `${p}-j3`, title: "T", expiry_date: "2034-01-01", recurrence: rule, recurrence_count: 2 },
      { external_id: `${p}-j4`, title: "T", expiry_date: "2034-01-01", recurrence: { ...rule, every: 0 } },
      { external_id: `${p}-j5`, title: "T", expiry_date: "2034-01-01", recurrence: {} },
    ]);
    const jsonJob = await run("resource=items&dry_run=true", json, "application/json");
    expect((await errorsOf(jsonJob.import_id)).map((e) => [e.row, e.column, e.message])).toEqual([
      [1, "recurrence", "recurrence must be an object {every, unit, renew_on, until, count}, or null for no rule"],
      [2, "recurrence", 'recurrence has no key "interval"; its keys: every, unit, renew_on, until, count'],
      [
        3,
        "recurrence",
        "A row gives its rule as recurrence or as recurrence_every, recurrence_unit, recurrence_renew_on, recurrence_until, recurrence_count, not both",
      ],
      [4, "recurrence_every", "recurrence_every must be an integer from 1 to 1000"],
      [5, "recurrence_every", "recurrence_every must be an integer from 1 to 1000"],
      // (errors are listed by row, then column)
      [5, "recurrence_renew_on", "recurrence_renew_on must be one of: completed, expired"],
      [5, "recurrence_unit", "recurrence_unit must be one of: day, week, month, year"],
    ]);
  });

  it("takes the rule as a `recurrence` object in JSON (as exports write it): null removes it, a row without it leaves the rule alone", async () => {
    const [a, b] = [uniqueWord("rj"), uniqueWord("rj")];
    const json = JSON.stringify([
      {
        external_id: a,
        title: "A",
        expiry_date: "2035-01-31",
        recurrence: { every: 3, unit: "month", renew_on: "expired", until: null, count: 2 },
      },
      {
        external_id: b,
        title: "B",
        expiry_date: "2035-02-01",
        recurrence_every: 1,
        recurrence_unit: "year",
        recurrence_renew_on: "completed",
      },
    ]);
    expect((await run("resource=items", json, "application/json")).counts).toMatchObject({ created: 2, failed: 0 });
    expect((await itemOf(a)).recurrence).toEqual({
      every: 3,
      unit: "month",
      renew_on: "expired",
      until: null,
      count: 2,
    });
    expect((await itemOf(b)).recurrence).toEqual({
      every: 1,
      unit: "year",
      renew_on: "completed",
      until: null,
      count: null,
    });
    const nd = `${JSON.stringify({ external_id: a, recurrence: null })}\n${JSON.stringify({ external_id: b, title: "B2" })}\n`;
    expect((await run("resource=items", nd, "application/x-ndjson")).counts).toMatchObject({ updated: 2, failed: 0 });
    expect((await itemOf(a)).recurrence).toBeNull();
    expect((await itemOf(b)).recurrence).toEqual({
      every: 1,
      unit: "year",
      renew_on: "completed",
      until: null,
      count: null,
    });
  });

  for (const format of ["csv", "ndjson"] as const) {
    it(`an export imported again reports every row unchanged (${format})`, async () => {
      const own = await createAccount();
      const make = async (body: Fields) => {
        const res = await call("createItem", "/v1/items", {
          token: own.ownerToken,
          body: { title: uniqueWord("Round "), ...body },
        });
        expectStatus(res, 201, JSON.stringify(res.body));
        return res.body.data.item_id as number;
      };
      await make({
        external_id: "R-1",
        expiry_date: "2036-01-31",
        recurrence: { every: 1, unit: "month", renew_on: "expired", until: "2036-12-31", count: 7 },
      });
      const renewed = await make({
        external_id: "R-2",
        expiry_date: "2036-01-31",
        recurrence: { every: 1, unit: "month", renew_on: "completed" },
        notes: 'n, "q"',
      });
      await call("setItemStatus", `/v1/items/${renewed}/status`, {
        token: own.ownerToken,
        body: { status: "completed" },
      });
      await make({
        external_id: "R-3",
        expiry_date: "2036-03-01",
        folder_path: "A/B",
        recurrence: { every: 2, unit: "week", renew_on: "completed", count: 0 },
      });
      const archived = await make({ external_id: "R-4", expiry_date: "2036-04-01", item_type: "due" });
      await call("archiveItem", `/v1/items/${archived}/archive`, { token: own.ownerToken, body: { archived: true } });
      await call("setItemTags", `/v1/items/${archived}/tags`, { token: own.ownerToken, body: { tags: ["a|b", "c"] } });
      const versions = async () =>
        (
          await env.DB.prepare("SELECT external_id, version, recur_anchor FROM items WHERE company_id = ? ORDER BY id")
            .bind(own.companyId)
            .all()
        ).results;
      const before = await versions();

      const query = `format=${format}&archived=any&date_format=DD.MM.YYYY`;
      const res = await exports.default.fetch(
        new Request(`${BASE}/v1/items/export?${query}`, { headers: { Authorization: `Bearer ${own.ownerToken}` } }),
      );
      const text = await res.text();
      expect(text).toContain(
        format === "csv"
          ? ",1,month,expired,31.12.2036,7,"
          : '"recurrence":{"every":1,"unit":"month","renew_on":"expired","until":"31.12.2036","count":7}',
      );
      const upload = await readResult(
        await exports.default.fetch(
          new Request(`${BASE}/v1/imports?resource=items&date_format=DD.MM.YYYY`, {
            method: "POST",
            headers: {
              Authorization: `Bearer ${own.ownerToken}`,
              "Content-Type": format === "csv" ? "text/csv" : "application/x-ndjson",
            },
            body: text,
          }),
        ),
        "createImport",
      );
      expectStatus(upload, 202, JSON.stringify(upload.body));
      const job = await finished(upload.body.data.import_id, own.ownerToken);
      expect(job, JSON.stringify(job)).toMatchObject({
        status: "completed",
        counts: { rows: 4, valid: 4, created: 0, updated: 0, skipped: 4, failed: 0 },
      });
      expect(await versions()).toEqual(before);
    });
  }
});

describe("contact imports", () => {
  it("creates, then updates by email, with group by name", async () => {
    const email = uniqueEmail();
    const group = ok(
      await call("createContactGroup", "/v1/contact-groups", {
        token: account.ownerToken,
        body: { group_name: uniqueWord("Grp") },
      }),
    );
    const csv = `first_name,last_name,email,group_name\nAda,Lovelace,${email},${group.body.data.group_name}\nBad,Row,not-an-email,\n`;
    const first = await run("resource=contacts&on_error=skip", csv);
    expect(first.counts).toMatchObject({ created: 1, failed: 1 });
    const again = await run("resource=contacts", `first_name,email\nAugusta,${email.toUpperCase()}\n`);
    expect(again.counts).toMatchObject({ created: 0, updated: 1 });
    const row = await env.DB.prepare(
      "SELECT first_name, last_name, group_id FROM contacts WHERE email_key = ? AND company_id = ?",
    )
      .bind(email.toLowerCase(), account.companyId)
      .first();
    expect(row).toMatchObject({ first_name: "Augusta", last_name: "Lovelace", group_id: group.body.data.groupid });
  });
});

describe("the job API", () => {
  it("answers 202 with the job, lists it, 404s another company's, and refuses bad requests in Shape B", async () => {
    const res = await upload("resource=items&dry_run=true", "title,expiry_date\nA,2027-01-01\n");
    expectStatus(res, 202);
    const list = ok(await call("listImports", "/v1/imports?limit=100", { token: account.ownerToken }));
    expect(list.body.data.map((j) => j.import_id)).toContain(res.body.data.import_id);
    const other = await createAccount();
    expectShapeB(await call("getImport", `/v1/imports/${res.body.data.import_id}`, { token: other.ownerToken }), 404);
    expectShapeB(await upload("resource=things", "a\n1\n"), 400, /resource/);
    expectShapeB(await upload("resource=items&date_format=YY", "a\n1\n"), 400, /date_format/);
    expectShapeB(await upload("resource=items", "a,b\n1,2\n", "text/plain"), 415);
    expectShapeB(await upload("resource=items", ""), 400);
    await finished(res.body.data.import_id);
  });

  it("needs items:write for items and contacts:write for contacts", async () => {
    const token = await tokenFor("demo-readonly");
    expectShapeA(await upload("resource=items", "title\nA\n", "text/csv", token), 403, "insufficient_scope");
    expectShapeA(await upload("resource=contacts", "email\na@b.c\n", "text/csv", token), 403, "insufficient_scope");
  });

  it("fails a file it cannot read with a message, writing nothing", async () => {
    const job = await run("resource=items", 'title,expiry_date\n"open,2027-01-01\n');
    expect(job).toMatchObject({ status: "failed" });
    expect(job.message).toMatch(/never closed/);
    expect((await run("resource=items", "{", "application/json")).message).toMatch(/not valid JSON/);
  });

  it("cancels an unfinished job and refuses to cancel a finished one", async () => {
    const res = ok(await upload("resource=items", itemsCsv(uniqueWord("c"), 50)));
    const canceled = await call("cancelImport", `/v1/imports/${res.body.data.import_id}`, {
      token: account.ownerToken,
    });
    if (canceled.status === 200) expect(canceled.body.data.status).toBe("canceled");
    else expectShapeB(canceled, 400, /finished/);
    const done = await finished(res.body.data.import_id);
    expectShapeB(
      await call("cancelImport", `/v1/imports/${done.import_id}`, { token: account.ownerToken }),
      400,
      /finished/,
    );
  });

  it("honours Idempotency-Key: a retried upload is the same job", async () => {
    const key = crypto.randomUUID();
    const body = "title,expiry_date\nIdem,2027-01-01\n";
    const a = ok(
      await upload("resource=items&dry_run=true", body, "text/csv", account.ownerToken, { "Idempotency-Key": key }),
    );
    const b = await upload("resource=items&dry_run=true", body, "text/csv", account.ownerToken, {
      "Idempotency-Key": key,
    });
    expectStatus(b, 202);
    expect(b.headers.get("Idempotent-Replayed")).toBe("true");
    expect(b.body.data.import_id).toBe(a.body.data.import_id);
    await finished(a.body.data.import_id);
  });
});

describe("CSV reading", () => {
  it("follows RFC 4180: quotes, doubled quotes, CRLF and LF, newlines in fields, a BOM", () => {
    expect([...csvRecords('\uFEFFa,b\r\n"x,1","say ""hi"""\n"multi\nline",\n')]).toEqual([
      ["a", "b"],
      ["x,1", 'say "hi"'],
      ["multi\nline", ""],
    ]);
  });
});

describe("export, then import into another company", () => {
  async function exportOf(token: string, format: "csv" | "ndjson"): Promise<string> {
    const res = await exports.default.fetch(
      new Request(`${BASE}/v1/items/export?format=${format}&archived=any`, {
        headers: { Authorization: `Bearer ${token}` },
      }),
    );
    expectStatus(res, 200);
    return res.text();
  }
  /** The export without the columns that differ between companies by nature (item_id, add_date). */
  const comparable = (text: string, format: "csv" | "ndjson") =>
    format === "csv"
      ? [...csvRecords(text)].map((r) => r.slice(1, -1))
      : text
          .trim()
          .split("\n")
          .map((line) => {
            const { item_id: _id, add_date: _added, ...rest } = JSON.parse(line);
            return rest;
          });

  it("neutralises every line and the folded or hidden formula characters in the CSV, and the import restores each value exactly (issue 31.5)", async () => {
    const from = await createAccount();
    const to = await createAccount();
    const values = [
      { title: "\uFF1D1+1", notes: "ok\n=cmd|' /C calc'!A0\r\n+1\r@SUM(1)", tags: ["\uFF20tag", "\u2212x"] },
      { title: '\u200B=HYPERLINK("http://x")', notes: "a\n\u00A0-2\n\u200B\uFF0B3\n'\u2060=4", tags: ["plain"] },
      { title: "''=quoted", notes: "\uFE66x\n\t=tab", tags: [] },
    ];
    for (const [k, { tags, ...v }] of values.entries()) {
      const res = await call("createItem", "/v1/items", {
        token: from.ownerToken,
        body: { ...v, expiry_date: `2029-0${k + 1}-01`, external_id: `F-${k}` },
      });
      expectStatus(res, 201, JSON.stringify(res.body));
      const tagged = await call("setItemTags", `/v1/items/${res.body.data.item_id}/tags`, {
        token: from.ownerToken,
        body: { tags },
      });
      expectStatus(tagged, 200, JSON.stringify(tagged.body));
    }
    const first = await exportOf(from.ownerToken, "csv");
    const dangerous =
      /^[\s\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\uFE62\uFE63\uFE66\uFE6B\u207A-\u207C\u208A-\u208C\u2212]/u;
    for (const record of csvRecords(first)) {
      for (const cell of record)
        for (const line of cell.split(/\r\n|\r|\n/)) expect(dangerous.test(line), JSON.stringify(cell)).toBe(false);
    }
    const upload = await readResult(
      await exports.default.fetch(
        new Request(`${BASE}/v1/imports?resource=items`, {
          method: "POST",
          headers: { Authorization: `Bearer ${to.ownerToken}`, "Content-Type": "text/csv" },
          body: first,
        }),
      ),
      "createImport",
    );
    expectStatus(upload, 202, JSON.stringify(upload.body));
    expect(await finished(upload.body.data.import_id, to.ownerToken)).toMatchObject({
      status: "completed",
      counts: { created: 3, failed: 0 },
    });
    for (const [k, v] of values.entries()) {
      const list = ok(await call("listItems", `/v1/items?external_id=F-${k}`, { token: to.ownerToken }));
      const item = ok(await call("getItem", `/v1/items/${list.body.data[0]!.item_id}`, { token: to.ownerToken })).body
        .data;
      expect({ title: item.title, notes: item.notes, tags: [...item.tags].sort() }).toEqual({
        ...v,
        tags: [...v.tags].sort(),
      });
    }
    expect(comparable(await exportOf(to.ownerToken, "csv"), "csv")).toEqual(comparable(first, "csv"));
  });

  for (const format of ["csv", "ndjson"] as const) {
    it(`yields the same items (${format})`, async () => {
      const from = await createAccount();
      const to = await createAccount();
      const tokenA = from.ownerToken;
      for (const token of [tokenA, to.ownerToken]) {
        const type = await call("createDocumentType", "/v1/document-types", {
          token,
          body: { doctype_name: "Permit", fields: [{ field_name: "Inspector", field_type: "text" }] },
        });
        expectStatus(type, 201, JSON.stringify(type.body));
        await call("createContact", "/v1/contacts", {
          token,
          body: { first_name: "Ada", last_name: "L", email: "ada@example.com" },
        });
      }
      const make = async (body: Record<string, unknown>) => {
        const res = await call("createItem", "/v1/items", { token: tokenA, body });
        expectStatus(res, 201, JSON.stringify(res.body));
        return res.body.data.item_id as number;
      };
      await make({
        title: '=SUM(A1:A9), "quoted"; semi',
        expiry_date: "2027-01-31",
        folder_path: "Permits/City",
        notes: "line 1\nline 2, with comma",
        external_id: "X-1",
      });
      const done = await make({
        title: "Lift 🛗 inspection",
        expiry_date: "2027-02-28",
        item_type: "due",
        document_type: "Permit",
        external_id: "X-2",
      });
      await call("setItemStatus", `/v1/items/${done}/status`, { token: tokenA, body: { status: "completed" } });
      const archived = await make({ title: "+44 hotline", expiry_date: "2028-02-29", item_type: "evt" });
      await call("archiveItem", `/v1/items/${archived}/archive`, { token: tokenA, body: { archived: true } });
      await call("setItemTags", `/v1/items/${done}/tags`, { token: tokenA, body: { tags: ["a|b", "c\\d", "plain"] } });
      const contact = await env.DB.prepare("SELECT id FROM contacts WHERE company_id = ?")
        .bind(from.companyId)
        .first<number>("id");
      await call("updateItem", `/v1/items/${archived}`, { token: tokenA, body: { contact_id: contact } });
      // A custom field value, as an import would set it.
      await env.DB.prepare(
        "INSERT INTO item_field_values (item_id, field_id, company_id, value) SELECT ?, f.id, ?, 'Grace' FROM document_type_fields f JOIN document_types t ON t.id = f.type_id WHERE t.company_id = ?",
      )
        .bind(done, from.companyId, from.companyId)
        .run();

      const first = await exportOf(tokenA, format);
      expect(first).toContain("Grace");
      expect(first).toContain(format === "csv" ? '"\'=SUM(A1:A9), ""quoted""; semi"' : "=SUM(A1:A9)");
      expect(comparable(first, format)).toHaveLength(format === "csv" ? 4 : 3);
      const upload = await readResult(
        await exports.default.fetch(
          new Request(`${BASE}/v1/imports?resource=items`, {
            method: "POST",
            headers: {
              Authorization: `Bearer ${to.ownerToken}`,
              "Content-Type": format === "csv" ? "text/csv" : "application/x-ndjson",
            },
            body: first,
          }),
        ),
        "createImport",
      );
      expectStatus(upload, 202, JSON.stringify(upload.body));
      const job = await finished(upload.body.data.import_id, to.ownerToken);
      expect(job, JSON.stringify(job)).toMatchObject({ status: "completed", counts: { created: 3, failed: 0 } });
      const second = await exportOf(to.ownerToken, format);
      expect(comparable(second, format)).toEqual(comparable(first, format));
    });
  }
});
