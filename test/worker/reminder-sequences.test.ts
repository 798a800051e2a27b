import { describe, expect, it } from "vitest";
import { nameKey } from "../../src/lib/text-key";
import {
  type DataOf,
  type SuccessBody,
  type Fields,
  call,
  createAccount,
  createOwnerClient,
  env,
  expectShapeA,
  expectShapeB,
  noServerError,
  uniqueWord,
  expectStatus,
  ok,
} from "./helpers";

// Reminder sequences: the default every company starts with, CRUD, validation, names, the one
// default under concurrency, deletion moving items, the per-company limit, tenancy and scopes.

const SEQUENCE_FIELDS = ["seqid", "name", "isdefault", "reminders"].sort();
const STANDARD_STEPS = [30, 14, 7, 1, 0].map((period) => ({ period, unit: "day", type: 1, hour: "09:00" }));
/** A step as the API shows it: the stored fields, and no recipient or acknowledgement rule of its own. */
const shown = (step: Record<string, unknown>) => ({
  contact_id: null,
  group_id: null,
  channel_id: null,
  unless_acknowledged: false,
  always: false,
  ...step,
});

interface Company {
  id: number;
  accountId: number;
  ownerToken: string;
  /** A token of this company's owner (scope `*` unless given). */
  token: (scope?: string) => Promise<string>;
}

/**
 * A company created through POST /v1/companies (so it has what the service creates for every
 * company), with a client of the account owner in it.
 */
async function freshCompany(): Promise<Company> {
  const account = await createAccount({ companies: 5 });
  const res = await call("createCompany", "/v1/companies", {
    token: account.ownerToken,
    body: { company_name: uniqueWord("Co "), documents_limit: 100, contacts_limit: 10, drive_space: 1 },
  });
  expectStatus(res, 201, JSON.stringify(res.body));
  const id = res.body.data.company.companyid as number;
  const { clientId, secret } = await createOwnerClient(account.accountId, id, "seqclient");
  const tokens = new Map<string, string>();
  const token = async (scope?: string) => {
    const cached = tokens.get(scope ?? "*");
    if (cached) return cached;
    const issued = await call("issueToken", "/v1/oauth/token", {
      body: {
        grant_type: "client_credentials",
        client_id: clientId,
        client_secret: secret,
        ...(scope ? { scope } : {}),
      },
    });
    expectStatus(issued, 200, JSON.stringify(issued.body));
    tokens.set(scope ?? "*", issued.body.access_token);
    return issued.body.access_token;
  };
  return { id, accountId: account.accountId, ownerToken: account.ownerToken, token };
}

async function list(token: string): Promise<SuccessBody<"listReminderSequences">> {
  const res = await call("listReminderSequences", "/v1/reminder-sequences", { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body;
}

async function create(token: string, body: Fields = {}): Promise<DataOf<"createReminderSequence">> {
  const res = await call("createReminderSequence", "/v1/reminder-sequences", {
    token,
    body: { name: uniqueWord("Seq "), reminders: [{ period: 3, unit: "day", type: 1 }], ...body },
  });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data;
}

async function defaultsOf(companyId: number): Promise<number[]> {
  const { results } = await env.DB.prepare(
    "SELECT id FROM reminder_sequences WHERE company_id = ? AND is_default = 1 ORDER BY id",
  )
    .bind(companyId)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}

async function countOf(companyId: number): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM reminder_sequences WHERE company_id = ?")
    .bind(companyId)
    .first<{ n: number }>();
  return row!.n;
}

/** Inserts `n` plain sequences directly in D1 (for the limit tests). */
async function insertSequences(companyId: number, n: number) {
  const statements = Array.from({ length: n }, () => {
    const name = uniqueWord("Bulk ");
    return env.DB.prepare(
      "INSERT INTO reminder_sequences (company_id, name, name_key, is_default, steps) VALUES (?, ?, ?, 0, ?)",
    ).bind(companyId, name, nameKey(name), JSON.stringify([{ period: 1, unit: "day", type: 1, hour: "09:00" }]));
  });
  await env.DB.batch(statements);
}

describe("the default sequence", () => {
  it("a company created through the API lists exactly its default sequence Standard with the five steps", async () => {
    const company = await freshCompany();
    const body = await list(await company.token());
    expect(body.data).toHaveLength(1);
    const standard = body.data[0]!;
    expect(Object.keys(standard).sort()).toEqual(SEQUENCE_FIELDS);
    expect(standard).toMatchObject({ name: "Standard", isdefault: 1, reminders: STANDARD_STEPS });
    expect(body.meta).toEqual({ total: 1, max_allowed: 50 });
    const row = await env.DB.prepare("SELECT name_key, is_default, steps FROM reminder_sequences WHERE id = ?")
      .bind(standard.seqid)
      .first<Fields>();
    expect(row).toMatchObject({ name_key: "standard", is_default: 1 });
    expect(JSON.parse(String(row!.steps))).toEqual(STANDARD_STEPS);
  });

  it("a company refused by its ceilings gets no sequence either (one batch)", async () => {
    const account = await createAccount({ companies: 1 });
    const before = await env.DB.prepare("SELECT count(*) AS n FROM reminder_sequences").first<{ n: number }>();
    const res = await call("createCompany", "/v1/companies", {
      token: account.ownerToken,
      body: { company_name: "Too many", documents_limit: 1, contacts_limit: 1, drive_space: 1 },
    });
    expectShapeB(res, 400);
    const after = await env.DB.prepare("SELECT count(*) AS n FROM reminder_sequences").first<{ n: number }>();
    expect(after!.n).toBe(before!.n);
  });

  it("deleting a company deletes its sequences", async () => {
    const company = await freshCompany();
    await create(await company.token(), { name: "Extra" });
    expect(await countOf(company.id)).toBe(2);
    const res = await call("deleteCompany", `/v1/companies/${company.id}`, { token: company.ownerToken });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(await countOf(company.id)).toBe(0);
  });

  it("every company starts with it, however made (a trigger on companies)", async () => {
    const account = await createAccount();
    const body = await list(account.ownerToken);
    expect(body.data).toEqual([
      { seqid: expect.any(Number), name: "Standard", isdefault: 1, reminders: STANDARD_STEPS.map(shown) },
    ]);
  });

  it("a company left without any sequence (removed directly in D1) gets its first new one as the default", async () => {
    const account = await createAccount();
    await env.DB.prepare("DELETE FROM reminder_sequences WHERE company_id = ?").bind(account.companyId).run();
    const first = await create(account.ownerToken, { name: "First" });
    expect(first.isdefault).toBe(1);
    const second = await create(account.ownerToken, { name: "Second" });
    expect(second.isdefault).toBe(0);
    expect(await defaultsOf(account.companyId)).toEqual([first.seqid]);
  });
});

describe("create, get, update, delete", () => {
  it("creates with normalised steps, reads it back, lists the default first then by seqid", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const res = await call("createReminderSequence", "/v1/reminder-sequences", {
      token,
      body: {
        name: "  Contracts  ",
        reminders: [
          { period: 2, unit: "Weeks", type: 1 },
          { period: 1, unit: "MONTH", type: 1, hour: "08:30" },
          { period: 3, unit: "days", type: 2, hour: "17:45" },
          { period: 0, unit: "year", type: 1, hour: "00:00" },
        ],
      },
    });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.msg).toBe("Reminder sequence created");
    const made = res.body.data;
    expect(Object.keys(made).sort()).toEqual(SEQUENCE_FIELDS);
    const steps = [
      { period: 2, unit: "week", type: 1, hour: "09:00" },
      { period: 1, unit: "month", type: 1, hour: "08:30" },
      { period: 3, unit: "day", type: 2, hour: "17:45" },
      { period: 0, unit: "year", type: 1, hour: "00:00" },
    ];
    expect(made).toMatchObject({ name: "Contracts", isdefault: 0, reminders: steps });
    const stored = await env.DB.prepare("SELECT steps FROM reminder_sequences WHERE id = ?")
      .bind(made.seqid)
      .first<{ steps: string }>();
    expect(JSON.parse(stored!.steps)).toEqual(steps);

    const got = await call("getReminderSequence", `/v1/reminder-sequences/${made.seqid}`, {
      token: await company.token("items:read"),
    });
    expectStatus(got, 200);
    expect(got.body.data).toEqual(made);

    const later = await create(token, { name: "Later" });
    // The new default moves to the front; the others follow by seqid.
    await call("updateReminderSequence", `/v1/reminder-sequences/${later.seqid}`, { token, body: { isdefault: 1 } });
    const names = (await list(token)).data.map((s) => s.name);
    expect(names).toEqual(["Later", "Standard", "Contracts"]);
  });

  it("updates the name and replaces the steps; a body with nothing to update is 400", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const made = await create(token, { name: "Permits" });
    const res = await call("updateReminderSequence", `/v1/reminder-sequences/${made.seqid}`, {
      token,
      body: { name: "Permits (city)", reminders: [{ period: 10, unit: "days", type: 1, hour: "07:00" }] },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.msg).toBe("Reminder sequence updated");
    expect(res.body.data).toEqual({
      seqid: made.seqid,
      name: "Permits (city)",
      isdefault: 0,
      reminders: [shown({ period: 10, unit: "day", type: 1, hour: "07:00" })],
    });
    // A case-only rename of itself is fine.
    const renamed = await call("updateReminderSequence", `/v1/reminder-sequences/${made.seqid}`, {
      token,
      body: { name: "PERMITS (CITY)" },
    });
    expectStatus(renamed, 200);
    expect(renamed.body.data.name).toBe("PERMITS (CITY)");
    expectShapeB(
      await call("updateReminderSequence", `/v1/reminder-sequences/${made.seqid}`, { token, body: {} }),
      400,
      /No updatable fields provided/,
    );
  });

  it("deletes a sequence: 200, then 404", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const made = await create(token);
    const res = await call("deleteReminderSequence", `/v1/reminder-sequences/${made.seqid}`, { token });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body).toEqual({ success: true, msg: "Reminder sequence deleted" });
    expectShapeB(
      await call("getReminderSequence", `/v1/reminder-sequences/${made.seqid}`, { token }),
      404,
      /Reminder sequence not found/,
    );
    expectShapeB(await call("deleteReminderSequence", `/v1/reminder-sequences/${made.seqid}`, { token }), 404);
    expectShapeB(
      await call("updateReminderSequence", `/v1/reminder-sequences/${made.seqid}`, { token, body: { name: "x" } }),
      404,
    );
  });

  it("refuses invalid path ids with 400", async () => {
    const company = await freshCompany();
    const token = await company.token();
    for (const id of ["abc", "0", "-1", "1.5", "1e3"]) {
      expectShapeB(
        await call("getReminderSequence", `/v1/reminder-sequences/${id}`, { token }),
        400,
        /seqid must be a positive integer/,
      );
    }
  });
});

describe("validation (400 naming the field, nothing written)", () => {
  const step = (overrides: Fields) => ({ period: 1, unit: "day", type: 1, ...overrides });
  const cases: Array<[string, Fields, RegExp]> = [
    [
      "unknown unit",
      { reminders: [step({ unit: "fortnight" })] },
      /reminders\.0\.unit: unit must be one of day, week, month, year/,
    ],
    ["unit not a string", { reminders: [step({ unit: 7 })] }, /reminders\.0\.unit/],
    ["period -1", { reminders: [step({ period: -1 })] }, /reminders\.0\.period: period must be between 0 and 1000/],
    ["period 1001", { reminders: [step({ period: 1001 })] }, /reminders\.0\.period: period must be between 0 and 1000/],
    ["period 1.5", { reminders: [step({ period: 1.5 })] }, /reminders\.0\.period must be an integer/],
    ["period as text", { reminders: [step({ period: "5" })] }, /reminders\.0\.period must be a number/],
    ["period missing", { reminders: [{ unit: "day", type: 1 }] }, /reminders\.0\.period/],
    [
      "type 3",
      { reminders: [step({ type: 3 })] },
      /reminders\.0\.type: type must be 1 \(before the item's date\) or 2 \(after it\)/,
    ],
    ["type missing", { reminders: [{ period: 1, unit: "day" }] }, /reminders\.0\.type/],
    ["hour 24:00", { reminders: [step({ hour: "24:00" })] }, /reminders\.0\.hour: hour must be a time HH:MM/],
    ["hour 9:00", { reminders: [step({ hour: "9:00" })] }, /reminders\.0\.hour: hour must be a time HH:MM/],
    ["hour 09:60", { reminders: [step({ hour: "09:60" })] }, /reminders\.0\.hour/],
    ["unknown step field", { reminders: [step({ channel: "sms" })] }, /Unknown field: reminders\.0\.channel/],
    ["step not an object", { reminders: ["30 days"] }, /reminders\.0/],
    ["empty reminders", { reminders: [] }, /reminders must hold 1 to 20 steps/],
    [
      "21 steps",
      { reminders: Array.from({ length: 21 }, (_, i) => step({ period: i })) },
      /reminders must hold 1 to 20 steps/,
    ],
    ["reminders not an array", { reminders: "30,14,7" }, /reminders must be an array/],
    ["reminders missing", { reminders: undefined }, /reminders is required/],
    [
      "duplicate step",
      { reminders: [step({ period: 7 }), step({ period: 7, unit: "days", hour: "09:00" })] },
      /reminders\.1 repeats reminders\.0/,
    ],
    [
      "period 0 twice",
      { reminders: [step({ period: 0 }), step({ period: 0, unit: "week", type: 2 })] },
      /reminders\.1 repeats reminders\.0/,
    ],
    ["name missing", { name: undefined }, /name is required/],
    ["name empty", { name: "   " }, /name must not be empty/],
    ["name too long", { name: "x".repeat(101) }, /name must be at most 100 characters/],
    ["name with a control character", { name: "a\u0007b" }, /name must not contain control characters/],
    ["isdefault 2", { isdefault: 2 }, /isdefault must be 0 or 1/],
    ["unknown field", { colour: "red" }, /Unknown field: colour/],
  ];

  it.each(cases)("POST: %s", async (_label, overrides, message) => {
    const company = await freshCompany();
    const token = await company.token();
    const body = { name: uniqueWord("Seq "), reminders: [step({})], ...overrides };
    const res = await call("createReminderSequence", "/v1/reminder-sequences", { token, body });
    expectShapeB(res, 400, message);
    expect(await countOf(company.id)).toBe(1);
  });

  it("PATCH validates the same way and changes nothing", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const made = await create(token, { name: "Kept" });
    for (const [, overrides, message] of cases.filter(([label]) => !/missing/.test(label))) {
      const res = await call("updateReminderSequence", `/v1/reminder-sequences/${made.seqid}`, {
        token,
        body: overrides,
      });
      expectShapeB(res, 400, message);
    }
    const after = ok(await call("getReminderSequence", `/v1/reminder-sequences/${made.seqid}`, { token }));
    expect(after.body.data).toEqual(made);
  });

  it("accepts the bounds: period 0 and 1000, 20 steps, a 100-character name", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const reminders = Array.from({ length: 20 }, (_, i) => ({ period: i === 19 ? 1000 : i, unit: "day", type: 1 }));
    const made = await create(token, { name: "y".repeat(100), reminders });
    expect(made.reminders).toHaveLength(20);
    expect(made.reminders[19]).toEqual(shown({ period: 1000, unit: "day", type: 1, hour: "09:00" }));
  });
});

describe("names", () => {
  it("are unique per company case-insensitively in every script: 409, on create and rename", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const made = await create(token, { name: "ärzte" });
    expectShapeB(
      await call("createReminderSequence", "/v1/reminder-sequences", {
        token,
        body: { name: "ÄRZTE", reminders: [{ period: 1, unit: "day", type: 1 }] },
      }),
      409,
      /A reminder sequence named "ÄRZTE" already exists/,
    );
    expectShapeB(
      await call("createReminderSequence", "/v1/reminder-sequences", {
        token,
        body: { name: "STANDARD", reminders: [{ period: 1, unit: "day", type: 1 }] },
      }),
      409,
    );
    expectShapeB(
      await call("updateReminderSequence", `/v1/reminder-sequences/${made.seqid}`, {
        token,
        body: { name: "standard" },
      }),
      409,
    );
    // A 409 with isdefault=1 leaves the default where it was (the batch is all or nothing).
    const [standard] = await defaultsOf(company.id);
    expectShapeB(
      await call("updateReminderSequence", `/v1/reminder-sequences/${made.seqid}`, {
        token,
        body: { name: "Standard", isdefault: 1 },
      }),
      409,
    );
    expectShapeB(
      await call("createReminderSequence", "/v1/reminder-sequences", {
        token,
        body: { name: "ÄRZTE", isdefault: 1, reminders: [{ period: 1, unit: "day", type: 1 }] },
      }),
      409,
    );
    expect(await defaultsOf(company.id)).toEqual([standard]);
    expect(await countOf(company.id)).toBe(2);
  });

  it("may repeat across companies", async () => {
    const a = await freshCompany();
    const b = await freshCompany();
    await create(await a.token(), { name: "Shared" });
    await create(await b.token(), { name: "SHARED" });
  });

  it("concurrent creates with one name in different cases: one 201, the rest 409", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const results = await Promise.all(
      ["Visa", "VISA", "visa", "ViSa"].map((name) =>
        call("createReminderSequence", "/v1/reminder-sequences", {
          token,
          body: { name, reminders: [{ period: 1, unit: "day", type: 1 }] },
        }),
      ),
    );
    noServerError(...results);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    expect(await countOf(company.id)).toBe(2);
  });
});

describe("the default sequence: exactly one", () => {
  it("POST with isdefault=1 and PATCH isdefault=1 switch the default; isdefault=0 on the default is 400", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const [standard] = await defaultsOf(company.id);
    const a = await create(token, { name: "A", isdefault: 1 });
    expect(a.isdefault).toBe(1);
    expect(await defaultsOf(company.id)).toEqual([a.seqid]);
    const oldDefault = ok(await call("getReminderSequence", `/v1/reminder-sequences/${standard}`, { token }));
    expect(oldDefault.body.data.isdefault).toBe(0);

    const res = await call("updateReminderSequence", `/v1/reminder-sequences/${standard}`, {
      token,
      body: { isdefault: 1 },
    });
    expectStatus(res, 200);
    expect(res.body.data.isdefault).toBe(1);
    expect(await defaultsOf(company.id)).toEqual([standard]);

    expectShapeB(
      await call("updateReminderSequence", `/v1/reminder-sequences/${standard}`, { token, body: { isdefault: 0 } }),
      400,
      /exactly one default reminder sequence: make another sequence the default instead/,
    );
    // isdefault=1 on the default and isdefault=0 on another: nothing to change, 200.
    expectStatus(
      await call("updateReminderSequence", `/v1/reminder-sequences/${standard}`, { token, body: { isdefault: 1 } }),
      200,
    );
    const kept = await call("updateReminderSequence", `/v1/reminder-sequences/${a.seqid}`, {
      token,
      body: { isdefault: 0 },
    });
    expectStatus(kept, 200);
    expect(kept.body.data.isdefault).toBe(0);
    expect(await defaultsOf(company.id)).toEqual([standard]);
  });

  it("concurrent PATCH isdefault=1 on different sequences leave exactly one default, never a 5xx", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const ids = [(await defaultsOf(company.id))[0]!];
    for (let i = 0; i < 4; i++) ids.push((await create(token)).seqid);
    for (let round = 0; round < 8; round++) {
      const order = [...ids].sort(() => Math.random() - 0.5);
      const results = await Promise.all(
        order.map((id) =>
          call("updateReminderSequence", `/v1/reminder-sequences/${id}`, { token, body: { isdefault: 1 } }),
        ),
      );
      noServerError(...results);
      for (const res of results) expect([200, 409], JSON.stringify(res.body)).toContain(res.status);
      const defaults = await defaultsOf(company.id);
      expect(defaults).toHaveLength(1);
      // The default is one whose request succeeded.
      const winners = order.filter((_, i) => results[i]!.status === 200);
      expect(winners).toContain(defaults[0]);
    }
  });

  it("concurrent POSTs with isdefault=1, PATCHes and DELETEs keep exactly one default", async () => {
    const company = await freshCompany();
    const token = await company.token();
    for (let round = 0; round < 6; round++) {
      const victim = await create(token);
      const results = await Promise.all([
        call("createReminderSequence", "/v1/reminder-sequences", {
          token,
          body: { name: uniqueWord("New "), isdefault: 1, reminders: [{ period: 2, unit: "day", type: 1 }] },
        }),
        call("updateReminderSequence", `/v1/reminder-sequences/${victim.seqid}`, { token, body: { isdefault: 1 } }),
        call("deleteReminderSequence", `/v1/reminder-sequences/${victim.seqid}`, { token }),
      ]);
      noServerError(...results);
      const [made, patched, deleted] = results;
      expectStatus(made!, 201);
      // Either the delete came first (then the PATCH is 404), or the PATCH did (then the delete is 400,
      // unless the POST took the default away again before it).
      if (deleted!.status === 400) expectStatus(patched!, 200);
      if (patched!.status === 404) expectStatus(deleted!, 200);
      expect(await defaultsOf(company.id)).toHaveLength(1);
    }
  });
});

describe("DELETE", () => {
  it("refuses the default sequence (400) and keeps it", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const [standard] = await defaultsOf(company.id);
    expectShapeB(
      await call("deleteReminderSequence", `/v1/reminder-sequences/${standard}`, { token }),
      400,
      /default reminder sequence cannot be deleted/,
    );
    expect(await defaultsOf(company.id)).toEqual([standard]);
  });

  it("moves the items that use the sequence to the company's default, in the same batch", async () => {
    const company = await freshCompany();
    const token = await company.token();
    const [standard] = await defaultsOf(company.id);
    const doomed = await create(token, { name: "Doomed" });
    const other = await create(token, { name: "Other" });
    const item = async (seqid: number) => {
      const res = await call("createItem", "/v1/items", {
        token,
        body: { title: uniqueWord("Item "), expiry_date: "2031-03-01", seqid },
      });
      expectStatus(res, 201, JSON.stringify(res.body));
      return res.body.data.item_id as number;
    };
    const moved = [await item(doomed.seqid), await item(doomed.seqid)];
    const untouched = await item(other.seqid);
    const res = await call("deleteReminderSequence", `/v1/reminder-sequences/${doomed.seqid}`, { token });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.msg).toBe("Reminder sequence deleted; 2 items now use the default sequence");
    for (const id of moved) {
      const detail = ok(await call("getItem", `/v1/items/${id}`, { token }));
      expect(detail.body.data.seqid).toBe(standard);
    }
    expect(ok(await call("getItem", `/v1/items/${untouched}`, { token })).body.data.seqid).toBe(other.seqid);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM items WHERE seq_id = ?")
      .bind(doomed.seqid)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
  });
});

describe("the limit of 50 sequences per company", () => {
  it("refuses the 51st with 400 naming the limit", async () => {
    const company = await freshCompany();
    const token = await company.token();
    await insertSequences(company.id, 48);
    await create(token);
    expect(await countOf(company.id)).toBe(50);
    expectShapeB(
      await call("createReminderSequence", "/v1/reminder-sequences", {
        token,
        body: { name: "One too many", reminders: [{ period: 1, unit: "day", type: 1 }] },
      }),
      400,
      /at most 50 reminder sequences/,
    );
    // Nor does isdefault=1 unset the default when the insert is refused.
    const defaults = await defaultsOf(company.id);
    expectShapeB(
      await call("createReminderSequence", "/v1/reminder-sequences", {
        token,
        body: { name: "Default too many", isdefault: 1, reminders: [{ period: 1, unit: "day", type: 1 }] },
      }),
      400,
    );
    expect(await defaultsOf(company.id)).toEqual(defaults);
    const listed = await list(token);
    expect(listed.data).toHaveLength(50);
    expect(listed.meta).toEqual({ total: 50, max_allowed: 50 });
  });

  it("concurrent creates never overshoot it", async () => {
    const company = await freshCompany();
    const token = await company.token();
    await insertSequences(company.id, 47);
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        call("createReminderSequence", "/v1/reminder-sequences", {
          token,
          body: { name: uniqueWord("Race "), reminders: [{ period: 1, unit: "day", type: 1 }] },
        }),
      ),
    );
    noServerError(...results);
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 400, 400, 400, 400]);
    expect(await countOf(company.id)).toBe(50);
  });
});

describe("tenancy and scopes", () => {
  it("another company's sequence is 404 on GET, PATCH and DELETE, and never listed", async () => {
    const a = await freshCompany();
    const b = await freshCompany();
    const theirs = await create(await b.token(), { name: "Theirs" });
    const [theirDefault] = await defaultsOf(b.id);
    const token = await a.token();
    for (const id of [theirs.seqid, theirDefault]) {
      expectShapeB(await call("getReminderSequence", `/v1/reminder-sequences/${id}`, { token }), 404);
      expectShapeB(
        await call("updateReminderSequence", `/v1/reminder-sequences/${id}`, { token, body: { isdefault: 1 } }),
        404,
      );
      expectShapeB(await call("deleteReminderSequence", `/v1/reminder-sequences/${id}`, { token }), 404);
    }
    const listed = (await list(token)).data.map((s) => s.seqid);
    expect(listed).not.toContain(theirs.seqid);
    expect(listed).not.toContain(theirDefault);
    expect(await defaultsOf(b.id)).toEqual([theirDefault]);
    expect(
      ok(await call("getReminderSequence", `/v1/reminder-sequences/${theirs.seqid}`, { token: await b.token() })).body
        .data,
    ).toEqual(theirs);
  });

  it("items:read reads; writes need items:write (403 insufficient_scope)", async () => {
    const company = await freshCompany();
    const reader = await company.token("items:read");
    const [standard] = await defaultsOf(company.id);
    expect((await list(reader)).data).toHaveLength(1);
    expectStatus(await call("getReminderSequence", `/v1/reminder-sequences/${standard}`, { token: reader }), 200);
    const writes = [
      call("createReminderSequence", "/v1/reminder-sequences", {
        token: reader,
        body: { name: "No", reminders: [{ period: 1, unit: "day", type: 1 }] },
      }),
      call("updateReminderSequence", `/v1/reminder-sequences/${standard}`, { token: reader, body: { name: "No" } }),
      call("deleteReminderSequence", `/v1/reminder-sequences/${standard}`, { token: reader }),
    ];
    for (const res of await Promise.all(writes)) {
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("items:write");
    }
    const contactsOnly = await call("listReminderSequences", "/v1/reminder-sequences", {
      token: await company.token("contacts:read"),
    });
    expectShapeA(contactsOnly, 403, "insufficient_scope");
    expect(contactsOnly.body.required_scope).toBe("items:read");
    expectShapeA(await call("listReminderSequences", "/v1/reminder-sequences"), 401, "invalid_token");
    expect(await countOf(company.id)).toBe(1);
  });
});
