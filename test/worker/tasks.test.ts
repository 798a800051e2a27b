import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { deleteContact, unassignTasksOf } from "../../src/records/contacts";
import { taskListQueries } from "../../src/records/tasks";
import { ListTasksQuery, TASK_STATUSES } from "../../src/schemas/tasks";
import {
  TIMESTAMP,
  after,
  call,
  createAccount,
  createContact,
  createItem,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  noServerError,
  tokenFor,
  uniqueWord,
  type DataOf,
  type Fields,
  type SuccessBody,
  type TestAccount,
  fullScansOf,
  queryPlan,
  expectStatus,
  callRaw,
  ok,
} from "./helpers";

let owner: string, member: string, other: string;

beforeAll(async () => {
  ({ owner, member, other } = await demoTokens());
});

const TASK_FIELDS = [
  "task_id",
  "public_id",
  "title",
  "description",
  "status",
  "priority",
  "due_at",
  "ownerid",
  "assignee_type",
  "assignee_id",
  "item_id",
  "add_date",
  "updated_at",
].sort();
const PUBLIC_ID = /^tsk_[A-Za-z0-9_-]{20}$/;

/** Creates a task through the API (expects 201) and returns its record. */
async function createTask(token: string, body: Fields = {}): Promise<DataOf<"createTask">> {
  const res = await call("createTask", "/v1/tasks", {
    token,
    body: { title: uniqueWord("Task "), due_at: "2030-01-15 09:00:00", ...body },
  });
  if (res.status !== 201) throw new Error(`create task: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

const patch = (token: string, id: string | number, body: Fields) =>
  call("updateTask", `/v1/tasks/${id}`, { token, body });

async function list(token: string, query = ""): Promise<SuccessBody<"listTasks">> {
  const res = await call("listTasks", `/v1/tasks?${query}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body;
}
const ids = (body: SuccessBody<"listTasks">) => body.data.map((t) => t.task_id);

/** The users of an account, owner first. */
async function usersOf(accountId: number): Promise<number[]> {
  const { results } = await env.DB.prepare("SELECT id FROM users WHERE account_id = ? ORDER BY id")
    .bind(accountId)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}

/** task_counts of a company next to the real numbers of tasks per status. */
async function countsOf(companyId: number) {
  const counters = await env.DB.prepare(
    "SELECT status, total FROM task_counts WHERE company_id = ? AND total <> 0 ORDER BY status",
  )
    .bind(companyId)
    .all();
  const actual = await env.DB.prepare(
    "SELECT status, count(*) AS total FROM tasks WHERE company_id = ? GROUP BY status ORDER BY status",
  )
    .bind(companyId)
    .all();
  return { counters: counters.results, actual: actual.results };
}

describe("POST /v1/tasks", () => {
  it("creates a task with the defaults and answers 201 with msg and every field", async () => {
    const res = await call("createTask", "/v1/tasks", {
      token: owner,
      body: { title: "Book the inspection", due_at: "2030-03-31 09:30:00" },
    });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(res.body.msg).toBe("Task created");
    const task = res.body.data;
    expect(Object.keys(task).sort()).toEqual(TASK_FIELDS);
    expect(task).toMatchObject({
      task_id: expect.any(Number),
      title: "Book the inspection",
      description: "",
      status: "open",
      priority: "normal",
      due_at: "2030-03-31 09:30:00",
      ownerid: 1, // demo-owner's user
      assignee_type: "",
      assignee_id: 0,
      item_id: 0,
    });
    expect(task.public_id).toMatch(PUBLIC_ID);
    expect(task.add_date).toMatch(TIMESTAMP);
    expect(task.updated_at).toMatch(TIMESTAMP);
  });

  it("defaults ownerid to the calling user (demo-member is user 2)", async () => {
    expect((await createTask(member)).ownerid).toBe(2);
  });

  it("takes every field, trimmed and NFC-normalised", async () => {
    const contact = await createContact(owner);
    const item = await createItem(owner);
    const task = await createTask(owner, {
      title: "  Cafe\u0301 order  ",
      description: "Line one\nLine two",
      due_at: "2028-02-29 23:59:59",
      status: "in_progress",
      priority: "urgent",
      ownerid: 2,
      assignee_type: "contact",
      assignee_id: contact.contact_id,
      item_id: item.item_id,
    });
    expect(task).toMatchObject({
      title: "Café order",
      description: "Line one\nLine two",
      due_at: "2028-02-29 23:59:59",
      status: "in_progress",
      priority: "urgent",
      ownerid: 2,
      assignee_type: "contact",
      assignee_id: contact.contact_id,
      item_id: item.item_id,
    });
    const user = await createTask(owner, { assignee_type: "user", assignee_id: 2 });
    expect(user).toMatchObject({ assignee_type: "user", assignee_id: 2 });
  });

  it("gives every task its own random public_id", async () => {
    const made = await Promise.all(Array.from({ length: 8 }, () => createTask(owner)));
    const publicIds = made.map((t) => t.public_id);
    for (const id of publicIds) expect(id).toMatch(PUBLIC_ID);
    expect(new Set(publicIds).size).toBe(publicIds.length);
  });

  it("refuses bad input with 400 Shape B naming the field, and writes nothing", async () => {
    const before = await env.DB.prepare("SELECT count(*) AS n FROM tasks").first<{ n: number }>();
    const ok = { title: "x", due_at: "2030-01-01 10:00:00" };
    for (const [body, msg] of [
      [{ ...ok, due_at: "2026-02-30 10:00:00" }, /due_at must be a real date and time YYYY-MM-DD HH:MM:SS \(UTC/],
      [{ ...ok, due_at: "2027-02-29 10:00:00" }, /due_at must be a real date and time/],
      [{ ...ok, due_at: "2026-02-28 24:00:00" }, /due_at must be a real date and time/],
      [{ ...ok, due_at: "2026-02-28 10:60:00" }, /due_at must be a real date and time/],
      [{ ...ok, due_at: "2026-02-28" }, /due_at must be a real date and time/],
      [{ ...ok, due_at: "2026-02-28T10:00:00Z" }, /due_at must be a real date and time/],
      [{ ...ok, due_at: "1899-12-31 10:00:00" }, /due_at must be a real date and time/],
      [{ ...ok, due_at: 1767261600 }, /due_at must be a real date and time/],
      [{ title: "x" }, /due_at is required/],
      [{ due_at: ok.due_at }, /title is required/],
      [{ ...ok, title: " \u200B " }, /title must not be empty/],
      [{ ...ok, title: "x".repeat(201) }, /title must be at most 200 characters/],
      [{ ...ok, title: "a\u0007b" }, /title must not contain control characters/],
      [{ ...ok, description: "d".repeat(5001) }, /description must be at most 5000 characters/],
      [{ ...ok, priority: "critical" }, /priority must be one of: low, normal, high, urgent/],
      [{ ...ok, status: "done" }, /status must be one of: open, todo, in_progress, review, completed, canceled/],
      [{ ...ok, assignee_type: "team", assignee_id: 1 }, /assignee_type must be one of: user, contact/],
      [{ ...ok, assignee_type: "user" }, /assignee_id is required with assignee_type user/],
      [{ ...ok, assignee_type: "contact", assignee_id: 0 }, /assignee_id is required with assignee_type contact/],
      [{ ...ok, assignee_id: 5 }, /assignee_type \(user or contact\) is required with assignee_id/],
      [{ ...ok, assignee_type: "", assignee_id: 5 }, /assignee_type \(user or contact\) is required with assignee_id/],
      [{ ...ok, assignee_type: "user", assignee_id: -1 }, /assignee_id must be 0 \(none\) or an id/],
      [{ ...ok, assignee_type: "user", assignee_id: 1.5 }, /assignee_id must be an integer/],
      [{ ...ok, assignee_type: "user", assignee_id: "2" }, /assignee_id must be an integer/],
      [{ ...ok, ownerid: 0 }, /ownerid must be a positive integer/],
      [{ ...ok, ownerid: 1e300 }, /ownerid/],
      [{ ...ok, item_id: "x" }, /item_id must be an integer/],
      [{ ...ok, task_id: 5 }, /Unknown field: task_id/],
      [{ ...ok, title: null }, /title must be a string/],
    ] as const) {
      const res = await call("createTask", "/v1/tasks", { token: owner, body });
      expectShapeB(res, 400, msg);
    }
    expectShapeB(
      await call("createTask", "/v1/tasks", { token: owner, body: [ok] }),
      400,
      /Request body must be a JSON object/,
    );
    expectShapeB(
      await call("createTask", "/v1/tasks", {
        token: owner,
        rawBody: "{",
        headers: { "Content-Type": "application/json" },
      }),
      400,
    );
    const after = await env.DB.prepare("SELECT count(*) AS n FROM tasks").first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
  });

  it("refuses a body over 64 KiB with 413", async () => {
    const res = await call("createTask", "/v1/tasks", {
      token: owner,
      body: { title: "x", due_at: "2030-01-01 10:00:00", description: "d".repeat(70_000) },
    });
    expectShapeB(res, 413);
  });

  it("refuses references outside the caller's company or account, naming them", async () => {
    const foreignContact = await createContact(other);
    const foreignItem = await createItem(other);
    const ok = { title: "x", due_at: "2030-01-01 10:00:00" };
    for (const [body, msg] of [
      [
        { ...ok, assignee_type: "contact", assignee_id: 999999999 },
        /^assignee_id 999999999 is not a contact of the company$/,
      ],
      [
        { ...ok, assignee_type: "contact", assignee_id: foreignContact.contact_id },
        /assignee_id \d+ is not a contact of the company/,
      ],
      [
        { ...ok, assignee_type: "user", assignee_id: 999999999 },
        /^assignee_id 999999999 is not a user of the account$/,
      ],
      [{ ...ok, assignee_type: "user", assignee_id: 3 }, /^assignee_id 3 is not a user of the account$/], // user 3 is account 2's
      [{ ...ok, ownerid: 3 }, /^ownerid 3 is not a user of the account$/],
      [{ ...ok, ownerid: 999999999 }, /^ownerid 999999999 is not a user of the account$/],
      [{ ...ok, item_id: foreignItem.item_id }, /^item_id \d+ is not an item of the company$/],
    ] as const) {
      expectShapeB(await call("createTask", "/v1/tasks", { token: owner, body }), 400, msg);
    }
  });
});

describe("GET, PATCH and DELETE /v1/tasks/{task_id}", () => {
  it("finds a task by task_id and by public_id", async () => {
    const task = await createTask(owner, { description: "both ids" });
    for (const ref of [task.task_id, task.public_id]) {
      const res = await call("getTask", `/v1/tasks/${ref}`, { token: owner });
      expectStatus(res, 200, JSON.stringify(res.body));
      expect(res.body).toEqual({ success: true, data: task });
    }
  });

  it("updates through either id and answers 200 with msg and the task", async () => {
    const task = await createTask(owner);
    const first = await patch(owner, task.public_id, {
      title: "Renamed",
      priority: "high",
      due_at: "2031-06-01 08:00:00",
    });
    expectStatus(first, 200, JSON.stringify(first.body));
    expect(first.body.msg).toBe("Task updated");
    expect(first.body.data).toMatchObject({
      task_id: task.task_id,
      public_id: task.public_id,
      title: "Renamed",
      priority: "high",
      due_at: "2031-06-01 08:00:00",
    });
    const second = ok(await patch(owner, task.task_id, { description: "Now with text", ownerid: 2 }));
    expect(second.body.data).toMatchObject({
      title: "Renamed",
      description: "Now with text",
      ownerid: 2,
      status: "open",
    });
    expect(ok(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner })).body.data).toEqual(
      second.body.data,
    );
  });

  it('assigns, reassigns and unassigns (assignee_id 0, or assignee_type "")', async () => {
    const contact = await createContact(owner);
    const task = await createTask(owner);
    const assigned = ok(
      await patch(owner, task.task_id, { assignee_type: "contact", assignee_id: contact.contact_id }),
    );
    expect(assigned.body.data).toMatchObject({ assignee_type: "contact", assignee_id: contact.contact_id });
    expect(ok(await patch(owner, task.task_id, { assignee_type: "user", assignee_id: 2 })).body.data).toMatchObject({
      assignee_type: "user",
      assignee_id: 2,
    });
    expect(ok(await patch(owner, task.task_id, { assignee_id: 0 })).body.data).toMatchObject({
      assignee_type: "",
      assignee_id: 0,
    });
    await patch(owner, task.task_id, { assignee_type: "user", assignee_id: 1 });
    expect(ok(await patch(owner, task.task_id, { assignee_type: "" })).body.data).toMatchObject({
      assignee_type: "",
      assignee_id: 0,
    });
    await patch(owner, task.task_id, { assignee_type: "user", assignee_id: 1 });
    expect(ok(await patch(owner, task.task_id, { assignee_type: "", assignee_id: 0 })).body.data).toMatchObject({
      assignee_type: "",
      assignee_id: 0,
    });
  });

  it("links to an item and unlinks with item_id 0; deleting the item unlinks its tasks", async () => {
    const item = await createItem(owner);
    const task = await createTask(owner);
    expect(ok(await patch(owner, task.task_id, { item_id: item.item_id })).body.data.item_id).toBe(item.item_id);
    expect(ok(await patch(owner, task.task_id, { item_id: 0 })).body.data.item_id).toBe(0);
    const linked = await createTask(owner, { item_id: item.item_id });
    expectStatus(await call("deleteItem", `/v1/items/${item.item_id}`, { token: owner }), 200);
    const after = ok(await call("getTask", `/v1/tasks/${linked.task_id}`, { token: owner }));
    expect(after.body.data.item_id).toBe(0);
  });

  it("unassigns the tasks of a deleted contact", async () => {
    const contact = await createContact(owner);
    const task = await createTask(owner, { assignee_type: "contact", assignee_id: contact.contact_id });
    const user = await createTask(owner, { assignee_type: "user", assignee_id: 2 });
    expectStatus(await call("deleteContact", `/v1/contacts/${contact.contact_id}`, { token: owner }), 200);
    expect(ok(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner })).body.data).toMatchObject({
      assignee_type: "",
      assignee_id: 0,
    });
    expect(ok(await call("getTask", `/v1/tasks/${user.task_id}`, { token: owner })).body.data.assignee_type).toBe(
      "user",
    );
  });

  it("unassigns them in the contact's delete, as the same request, and only when the contact is gone", async () => {
    const contact = await createContact(owner);
    const task = await createTask(owner, { assignee_type: "contact", assignee_id: contact.contact_id });
    // Another company's token cannot delete the contact: nothing is unassigned.
    expectShapeB(await call("deleteContact", `/v1/contacts/${contact.contact_id}`, { token: other }), 404);
    expect(ok(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner })).body.data).toMatchObject({
      assignee_type: "contact",
      assignee_id: contact.contact_id,
    });
    expectStatus(await call("deleteContact", `/v1/contacts/${contact.contact_id}`, { token: owner }), 200);
    const entries = async (type: string, id: string | number) =>
      ok(await call("listAuditLog", `/v1/audit-log?resource_type=${type}&resource_id=${id}`, { token: owner })).body
        .data;
    const [deleted] = await entries("contact", contact.contact_id);
    const [unassigned] = await entries("task", task.public_id);
    expect(deleted).toMatchObject({ action: "deleted", operation_id: "deleteContact" });
    expect(unassigned).toMatchObject({
      action: "updated",
      operation_id: "deleteContact",
      request_id: deleted!.request_id,
      before: { assignee_type: "contact", assignee_id: contact.contact_id },
      after: { assignee_type: null, assignee_id: null },
    });
  });

  it("refuses bad PATCH bodies with 400 naming the field, and changes nothing", async () => {
    const task = await createTask(owner);
    for (const [body, msg] of [
      [{}, /^No updatable fields provided$/],
      [{ due_at: "2026-02-30 10:00:00" }, /due_at must be a real date and time/],
      [{ due_at: null }, /due_at must be a real date and time/],
      [{ title: "" }, /title must not be empty/],
      [{ title: "t".repeat(201) }, /title must be at most 200 characters/],
      [{ priority: "asap" }, /priority must be one of: low, normal, high, urgent/],
      [{ status: "archived" }, /status must be one of/],
      [{ assignee_id: 2 }, /assignee_type \(user or contact\) is required with assignee_id/],
      [{ assignee_type: "user" }, /assignee_id is required with assignee_type user/],
      [{ assignee_type: "contact", assignee_id: 999999999 }, /assignee_id 999999999 is not a contact of the company/],
      [{ ownerid: 3 }, /ownerid 3 is not a user of the account/],
      [{ item_id: 999999999 }, /item_id 999999999 is not an item of the company/],
      [{ public_id: "tsk_aaaaaaaaaaaaaaaaaaaa" }, /Unknown field: public_id/],
    ] as const) {
      expectShapeB(await patch(owner, task.task_id, body), 400, msg);
    }
    expect(ok(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner })).body.data).toEqual(task);
  });

  it("deletes through either id; the task is gone afterwards", async () => {
    for (const key of ["task_id", "public_id"] as const) {
      const task = await createTask(owner);
      const res = await call("deleteTask", `/v1/tasks/${task[key]}`, { token: owner });
      expectStatus(res, 200);
      expect(res.body).toEqual({ success: true, msg: "Task deleted" });
      expectShapeB(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner }), 404, /^Task not found$/);
      expectShapeB(await call("getTask", `/v1/tasks/${task.public_id}`, { token: owner }), 404, /^Task not found$/);
      expectShapeB(await call("deleteTask", `/v1/tasks/${task[key]}`, { token: owner }), 404, /^Task not found$/);
    }
  });

  it("answers 404 for unknown ids and 400 for ids of neither form", async () => {
    for (const method of ["GET", "PATCH", "DELETE"]) {
      const body = method === "PATCH" ? { title: "x" } : undefined;
      for (const ref of ["987654321", "tsk_AAAAAAAAAAAAAAAAAAAA"]) {
        expectShapeB(await callRaw(method, `/v1/tasks/${ref}`, { token: owner, body }), 404, /^Task not found$/);
      }
      for (const ref of [
        "0",
        "-1",
        "1.5",
        "1e3",
        "abc",
        "tsk_short",
        "tsk_AAAAAAAAAAAAAAAAAAAAA",
        "TSK_AAAAAAAAAAAAAAAAAAAA",
        "9007199254740992",
        "99999999999999999999",
        "x".repeat(300),
      ]) {
        expectShapeB(
          await callRaw(method, `/v1/tasks/${ref}`, { token: owner, body }),
          400,
          /task_id must be a task_id \(a positive integer\) or a public_id/,
        );
      }
    }
  });
});

describe("status transitions", () => {
  const ACTIVE = ["open", "todo", "in_progress", "review"];
  const allowed = (from: string, to: string) => from === to || ACTIVE.includes(from) || ["open", "todo"].includes(to);

  it("moves active tasks anywhere, reopens closed ones only to open or todo, and refuses the rest naming the allowed ones", async () => {
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        const task = await createTask(owner, { status: from });
        const res = await patch(owner, task.task_id, { status: to, title: "Moved" });
        if (allowed(from, to)) {
          expectStatus(res, 200, `${from} -> ${to}: ${JSON.stringify(res.body)}`);
          expect(res.body.data).toMatchObject({ status: to, title: "Moved" });
        } else {
          expectShapeB(res, 400, new RegExp(`^status cannot change from ${from} to ${to}; allowed: open, todo$`));
          // Nothing of the refused PATCH was applied.
          expect(ok(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner })).body.data).toEqual(task);
        }
      }
    }
  });

  it("reopens a closed task, which can then be closed again", async () => {
    const task = await createTask(owner, { status: "completed" });
    expectShapeB(
      await patch(owner, task.task_id, { status: "review" }),
      400,
      /^status cannot change from completed to review; allowed: open, todo$/,
    );
    expect(ok(await patch(owner, task.task_id, { status: "todo" })).body.data.status).toBe("todo");
    expect(ok(await patch(owner, task.task_id, { status: "canceled" })).body.data.status).toBe("canceled");
  });

  it("keeps two concurrent status changes from both applying (the write re-checks the status it read)", async () => {
    // From in_progress both completed and canceled are allowed, but not one after the other:
    // if both answered 200, the second would have moved a completed task to canceled.
    for (let round = 0; round < 12; round++) {
      const task = await createTask(owner, { status: "in_progress" });
      const [a, b] = await Promise.all([
        patch(owner, task.task_id, { status: "completed" }),
        patch(owner, task.public_id, { status: "canceled" }),
      ]);
      noServerError(a, b);
      const winners = [a, b].filter((r) => r.status === 200);
      expect(winners, JSON.stringify([a.body, b.body])).toHaveLength(1);
      const loser = a.status === 200 ? b : a;
      if (loser.status === 409) expectShapeB(loser, 409, /changed by another request/);
      else
        expectShapeB(
          loser,
          400,
          /^status cannot change from (completed|canceled) to (completed|canceled); allowed: open, todo$/,
        );
      const now = ok(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner }));
      expect(now.body.data.status).toBe(winners[0]!.body.data.status);
    }
  });
});

describe("GET /v1/tasks", () => {
  let account: TestAccount;
  let made: DataOf<"createTask">[];
  let contactId: number;
  let itemId: number;
  let memberUser: number;
  /** A user and a contact of the account that share this id: assignee_id alone matches both. */
  const TWIN = 900_001;

  beforeAll(async () => {
    account = await createAccount();
    memberUser = (await usersOf(account.accountId))[1]!;
    await env.DB.batch([
      env.DB.prepare("INSERT INTO users (id, account_id, email, name) VALUES (?, ?, ?, 'Twin')").bind(
        TWIN,
        account.accountId,
        `${uniqueWord("twin")}@example.test`,
      ),
      env.DB.prepare(
        "INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, email_key) VALUES (?, ?, ?, 'Twin', 'Contact', 'twin@example.test', 'twin@example.test')",
      ).bind(TWIN, account.companyId, account.deptId),
    ]);
    contactId = TWIN;
    itemId = (await createItem(account.ownerToken)).item_id;
    const t = account.ownerToken;
    made = [];
    // Created out of due order; two share a due_at (then task_id decides).
    made.push(
      await createTask(t, {
        title: "Zürich permit renewal",
        due_at: "2030-05-01 10:00:00",
        status: "todo",
        assignee_type: "contact",
        assignee_id: contactId,
      }),
    );
    made.push(
      await createTask(t, {
        title: "Call plumber",
        description: "Boiler in building B",
        due_at: "2030-01-01 08:00:00",
        assignee_type: "user",
        assignee_id: memberUser,
      }),
    );
    made.push(
      await createTask(t, {
        title: "Order toner",
        due_at: "2030-03-01 12:00:00",
        status: "completed",
        item_id: itemId,
      }),
    );
    made.push(
      await createTask(t, {
        title: "Fire drill",
        description: "zurich office too",
        due_at: "2030-03-01 12:00:00",
        assignee_type: "user",
        assignee_id: TWIN,
      }),
    );
    made.push(
      await createTask(t, { title: "Renew insurance", due_at: "2029-12-31 23:59:59", status: "todo", item_id: itemId }),
    );
  });

  const byDue = () =>
    [...made]
      .sort((a, b) => (a.due_at < b.due_at ? -1 : a.due_at > b.due_at ? 1 : a.task_id - b.task_id))
      .map((t) => t.task_id);

  it("lists the company's tasks ordered by due_at, then task_id, with meta {total, limit, offset}", async () => {
    const body = await list(account.ownerToken);
    expect(ids(body)).toEqual(byDue());
    expect(body.meta).toEqual({ total: 5, limit: 50, offset: 0, total_exact: true });
    expect(Object.keys(body.data[0]!).sort()).toEqual(TASK_FIELDS);
    expect(body.data.find((t) => t.task_id === made[0]!.task_id)).toEqual(made[0]);
  });

  it("pages with limit and offset, stably", async () => {
    const all = byDue();
    const pages: number[] = [];
    for (let offset = 0; offset < 6; offset += 2) {
      const body = await list(account.ownerToken, `limit=2&offset=${offset}`);
      expect(body.meta).toMatchObject({ total: 5, limit: 2, offset });
      pages.push(...ids(body));
    }
    expect(pages).toEqual(all);
    expect((await list(account.ownerToken, "offset=100")).data).toEqual([]);
  });

  it("filters by status, with exact totals from the counters", async () => {
    const todo = await list(account.ownerToken, "status=todo");
    expect(ids(todo)).toEqual([made[4]!.task_id, made[0]!.task_id]);
    expect(todo.meta.total).toBe(2);
    expect((await list(account.ownerToken, "status=review")).meta.total).toBe(0);
  });

  it("filters by assignee_id (users and contacts alike unless assignee_type narrows it; 0 = unassigned)", async () => {
    // made[0] is assigned to the contact and made[3] to the user with the same id.
    const both = await list(account.ownerToken, `assignee_id=${contactId}`);
    expect(ids(both)).toEqual([made[3]!.task_id, made[0]!.task_id]);
    const contactsOnly = await list(account.ownerToken, `assignee_id=${contactId}&assignee_type=contact`);
    expect(ids(contactsOnly)).toEqual([made[0]!.task_id]);
    expect(contactsOnly.meta.total).toBe(1);
    expect(ids(await list(account.ownerToken, `assignee_id=${contactId}&assignee_type=user`))).toEqual([
      made[3]!.task_id,
    ]);
    expect(ids(await list(account.ownerToken, `assignee_id=${memberUser}&assignee_type=user`))).toEqual([
      made[1]!.task_id,
    ]);
    const unassigned = await list(account.ownerToken, "assignee_id=0");
    expect(ids(unassigned)).toEqual([made[4]!.task_id, made[2]!.task_id]);
    expect(unassigned.meta).toMatchObject({ total: 2, total_exact: true });
  });

  it("filters by item_id and combines filters with AND", async () => {
    expect(ids(await list(account.ownerToken, `item_id=${itemId}`))).toEqual([made[4]!.task_id, made[2]!.task_id]);
    const both = await list(account.ownerToken, `item_id=${itemId}&status=completed`);
    expect(ids(both)).toEqual([made[2]!.task_id]);
    expect(both.meta.total).toBe(1);
  });

  it("searches title and description by word prefix, every word, case- and accent-insensitively", async () => {
    const zur = await list(account.ownerToken, "q=ZUR");
    expect(ids(zur)).toEqual([made[3]!.task_id, made[0]!.task_id]);
    expect(zur.meta.total).toBe(2);
    expect(ids(await list(account.ownerToken, "q=boil buil"))).toEqual([made[1]!.task_id]);
    expect(ids(await list(account.ownerToken, "q=zurich permit"))).toEqual([made[0]!.task_id]);
    expect(ids(await list(account.ownerToken, "q=urich"))).toEqual([]); // prefixes, not substrings
    expect(ids(await list(account.ownerToken, `q=zur&status=todo`))).toEqual([made[0]!.task_id]);
    const punctuation = await list(account.ownerToken, "q=%25%25%25");
    expect(punctuation.data).toEqual([]);
    expect(punctuation.meta.total).toBe(0);
  });

  it("keeps the search index in step with title and description changes and deletes", async () => {
    const word = uniqueWord("kiwi");
    const task = await createTask(account.ownerToken, { title: `Buy ${word}` });
    expect(ids(await list(account.ownerToken, `q=${word}`))).toEqual([task.task_id]);
    const renamed = uniqueWord("mango");
    await patch(account.ownerToken, task.task_id, { title: "Buy fruit", description: `${renamed} please` });
    expect(ids(await list(account.ownerToken, `q=${word}`))).toEqual([]);
    expect(ids(await list(account.ownerToken, `q=${renamed}`))).toEqual([task.task_id]);
    await call("deleteTask", `/v1/tasks/${task.task_id}`, { token: account.ownerToken });
    expect(ids(await list(account.ownerToken, `q=${renamed}`))).toEqual([]);
  });

  it("refuses bad query parameters with 400 naming them", async () => {
    for (const [query, msg] of [
      ["limit=0", /limit must be an integer from 1 to 200/],
      ["limit=201", /limit must be an integer from 1 to 200/],
      ["limit=abc", /limit must be an integer from 1 to 200/],
      ["offset=-1", /offset must be an integer of at least 0/],
      ["status=done", /status must be one of: open, todo, in_progress, review, completed, canceled/],
      ["assignee_id=-3", /assignee_id must be 0 \(unassigned tasks\) or a user or contact id/],
      ["assignee_id=1.5", /assignee_id must be 0/],
      ["assignee_type=robot&assignee_id=1", /assignee_type must be one of: user, contact/],
      ["assignee_type=user", /assignee_type filters only together with assignee_id/],
      ["assignee_type=user&assignee_id=0", /assignee_type filters only together with assignee_id/],
      ["item_id=0", /item_id must be a positive integer/],
      [`q=${"q".repeat(201)}`, /q must be at most 200 characters/],
      ["status=open&status=todo", /^status must be one of/],
    ] as const) {
      expectShapeB(await call("listTasks", `/v1/tasks?${query}`, { token: account.ownerToken }), 400, msg);
    }
  });

  it("keeps totals exact through creates, status changes and deletes (trigger-maintained counters)", async () => {
    const fresh = await createAccount();
    const t = fresh.ownerToken;
    const a = await createTask(t);
    const b = await createTask(t, { status: "todo" });
    await createTask(t, { status: "todo" });
    await patch(t, a.task_id, { status: "review" });
    await patch(t, b.task_id, { status: "completed" });
    await call("deleteTask", `/v1/tasks/${b.task_id}`, { token: t });
    expect((await list(t)).meta.total).toBe(2);
    expect((await list(t, "status=todo")).meta.total).toBe(1);
    expect((await list(t, "status=review")).meta.total).toBe(1);
    expect((await list(t, "status=completed")).meta.total).toBe(0);
    expect((await list(t, "status=open")).meta.total).toBe(0);
    const counts = await countsOf(fresh.companyId);
    expect(counts.counters).toEqual(counts.actual);
  });
});

describe("tenancy", () => {
  it("never shows, changes or deletes another company's task, by either id", async () => {
    const foreign = await createTask(other, { title: "Other company's secret" });
    expect(ids(await list(owner, "limit=200&q=secret"))).not.toContain(foreign.task_id);
    for (const ref of [foreign.task_id, foreign.public_id]) {
      expectShapeB(await call("getTask", `/v1/tasks/${ref}`, { token: owner }), 404, /^Task not found$/);
      expectShapeB(await patch(owner, ref, { title: "hijacked", status: "canceled" }), 404, /^Task not found$/);
      expectShapeB(await call("deleteTask", `/v1/tasks/${ref}`, { token: owner }), 404, /^Task not found$/);
    }
    expect(ok(await call("getTask", `/v1/tasks/${foreign.task_id}`, { token: other })).body.data).toEqual(foreign);
  });

  it("counts only the caller's company in the list", async () => {
    const a = await createAccount();
    const b = await createAccount();
    await createTask(a.ownerToken);
    await createTask(b.ownerToken);
    await createTask(b.ownerToken);
    expect((await list(a.ownerToken)).meta.total).toBe(1);
    expect((await list(b.ownerToken)).meta.total).toBe(2);
    expect((await list(a.ownerToken, "assignee_id=0")).meta.total).toBe(1);
  });

  it("accepts users of the account as owner and assignee, and refuses users of another account", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const [aOwner, aMember] = await usersOf(a.accountId);
    const [bOwner] = await usersOf(b.accountId);
    const task = await createTask(a.memberToken, { ownerid: aOwner, assignee_type: "user", assignee_id: aMember });
    expect(task).toMatchObject({ ownerid: aOwner, assignee_id: aMember });
    expectShapeB(
      await patch(a.ownerToken, task.task_id, { ownerid: bOwner! }),
      400,
      new RegExp(`ownerid ${bOwner} is not a user of the account`),
    );
    expectShapeB(
      await patch(a.ownerToken, task.task_id, { assignee_type: "user", assignee_id: bOwner! }),
      400,
      /is not a user of the account/,
    );
  });

  it("keeps a company holding tasks from being deleted, naming them", async () => {
    const account = await createAccount();
    const made = await call("createCompany", "/v1/companies", {
      token: account.ownerToken,
      body: { company_name: "Branch", documents_limit: 10, contacts_limit: 10, drive_space: 1 },
    });
    expectStatus(made, 201, JSON.stringify(made.body));
    const companyId = made.body.data.company.companyid as number;
    const [userId] = await usersOf(account.accountId);
    await env.DB.prepare(
      "INSERT INTO tasks (public_id, company_id, title, due_at, owner_id, created_by) VALUES (?, ?, 'Left over', '2030-01-01 00:00:00', ?, ?)",
    )
      .bind(`tsk_${uniqueWord("x").slice(0, 20).padEnd(20, "x")}`, companyId, userId, userId)
      .run();
    expectShapeB(
      await call("deleteCompany", `/v1/companies/${companyId}`, { token: account.ownerToken }),
      400,
      /still holds 1 task\b/,
    );
    await env.DB.prepare("DELETE FROM tasks WHERE company_id = ?").bind(companyId).run();
    expectStatus(await call("deleteCompany", `/v1/companies/${companyId}`, { token: account.ownerToken }), 200);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM task_counts WHERE company_id = ?")
      .bind(companyId)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });
});

describe("scopes", () => {
  it("lets tasks:read read but not write (403 Shape A insufficient_scope, required_scope tasks:write)", async () => {
    const task = await createTask(owner);
    const reader = await tokenFor("demo-owner", "tasks:read");
    expectStatus(await call("listTasks", "/v1/tasks", { token: reader }), 200);
    expectStatus(await call("getTask", `/v1/tasks/${task.public_id}`, { token: reader }), 200);
    for (const [method, path, body] of [
      ["POST", "/v1/tasks", { title: "x", due_at: "2030-01-01 10:00:00" }],
      ["PATCH", `/v1/tasks/${task.task_id}`, { status: "canceled" }],
      ["DELETE", `/v1/tasks/${task.task_id}`, undefined],
    ] as const) {
      const res = await callRaw(method, path, { token: reader, body });
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("tasks:write");
    }
    expect(ok(await call("getTask", `/v1/tasks/${task.task_id}`, { token: owner })).body.data).toEqual(task);
  });

  it("needs tasks:read for reads; other resources' scopes do not grant tasks; no token is 401", async () => {
    const writer = await tokenFor("demo-owner", "tasks:write");
    const res = await call("listTasks", "/v1/tasks", { token: writer });
    expectShapeA(res, 403, "insufficient_scope");
    expect(res.body.required_scope).toBe("tasks:read");
    expectStatus(
      await call("createTask", "/v1/tasks", { token: writer, body: { title: "x", due_at: "2030-01-01 10:00:00" } }),
      201,
    );
    const readonly = await tokenFor("demo-readonly");
    expectShapeA(await call("listTasks", "/v1/tasks", { token: readonly }), 403, "insufficient_scope");
    expectShapeA(await call("listTasks", "/v1/tasks"), 401, "invalid_token");
  });
});

describe("races", () => {
  it("never leaves a task assigned to a contact deleted while the task was being created", async () => {
    // The contact is deleted straight in D1 by the API's own batch (the DELETE and its tasks'
    // unassignment), staggered by 0-4 round trips so that it also lands between the create's read of
    // the contact and its insert: an insert that did not re-check the contact leaves a dangling
    // assignee there (checked).
    const db = database(env.DB);
    for (let round = 0; round < 15; round++) {
      const contact = await createContact(owner);
      const [created] = await Promise.all([
        call("createTask", "/v1/tasks", {
          token: owner,
          body: {
            title: "Race",
            due_at: "2030-01-01 10:00:00",
            assignee_type: "contact",
            assignee_id: contact.contact_id,
          },
        }),
        after(round % 5, () => deleteContact(db, 1, contact.contact_id)),
      ]);
      noServerError(created);
      if (created.status !== 201) expectShapeB(created, 400, /is not a contact of the company/);
      const dangling = await env.DB.prepare(
        "SELECT count(*) AS n FROM tasks WHERE assignee_type = 'contact' AND assignee_id = ?",
      )
        .bind(contact.contact_id)
        .first<{ n: number }>();
      expect(dangling?.n).toBe(0);
    }
  });

  it("keeps the counters exact under concurrent creates, status changes and deletes", async () => {
    const fresh = await createAccount();
    const t = fresh.ownerToken;
    const tasks = await Promise.all(
      Array.from({ length: 6 }, (_, i) => createTask(t, { status: i % 2 ? "todo" : "open" })),
    );
    const results = await Promise.all([
      ...tasks.map((task, i) =>
        i % 3 === 0
          ? call("deleteTask", `/v1/tasks/${task.task_id}`, { token: t })
          : patch(t, task.task_id, { status: "completed" }),
      ),
      ...tasks.map((task) => patch(t, task.public_id, { status: "review" })),
    ]);
    noServerError(...results);
    const counts = await countsOf(fresh.companyId);
    expect(counts.counters).toEqual(counts.actual);
    expect((await list(t)).meta.total).toBe(4);
  });
});

describe("query plans of the task list", () => {
  const db = database(env.DB);

  const plan = queryPlan;
  const fullScanOfTasks = (text: string) => fullScansOf("tasks", text);

  // [label, query string, the index the page's ids come from (null: through the FTS index)]
  const cases: Array<[string, string, string | null]> = [
    ["unfiltered", "", "tasks_company_due_idx"],
    ["deep offset", "offset=40000", "tasks_company_due_idx"],
    ["status", "status=in_progress", "tasks_company_status_due_idx"],
    ["assignee", "assignee_id=7", "tasks_company_assignee_due_idx"],
    ["assignee + type", "assignee_id=7&assignee_type=contact", "tasks_company_assignee_due_idx"],
    ["unassigned", "assignee_id=0", "tasks_company_assignee_due_idx"],
    ["item", "item_id=3", "tasks_item_due_idx"],
    ["q", "q=insp", null],
    ["q + status", "q=insp&status=open", null],
  ];

  for (const [label, search, index] of cases) {
    it(`${label}: ${index ? `ids from ${index}, in its order, from the index alone` : "ids through the FTS index"}; an indexed total`, async () => {
      const built = taskListQueries(db, 1, ListTasksQuery.parse(Object.fromEntries(new URLSearchParams(search))))!;
      const idsPlan = await plan(built.ids);
      expect(fullScanOfTasks(idsPlan), idsPlan).toEqual([]);
      if (index) {
        expect(idsPlan, idsPlan).toMatch(new RegExp(`SEARCH tasks USING COVERING INDEX ${index} `));
        expect(idsPlan, idsPlan).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
      } else {
        // The company's matches come from tasks_search, bounded by rowid (the minute of the page's last match).
        expect(idsPlan, idsPlan).toMatch(/SCAN tasks_search VIRTUAL TABLE INDEX 0:M1</);
        // The page's last minute: the matches in rowid order, no sort.
        expect(idsPlan, idsPlan).toMatch(/SCAN tasks_search VIRTUAL TABLE INDEX 64:M1/);
        expect(idsPlan, idsPlan).toMatch(/SEARCH tasks USING INTEGER PRIMARY KEY/);
      }
      const pagePlan = await plan(built.page);
      expect(fullScanOfTasks(pagePlan), pagePlan).toEqual([]);
      const totalPlan = await plan(built.total);
      expect(fullScanOfTasks(totalPlan), totalPlan).toEqual([]);
      if (!/assignee|item|q=/.test(search)) {
        // The counters: a primary-key read of task_counts, no tasks at all.
        expect(totalPlan, totalPlan).toMatch(
          /SEARCH task_counts USING (COVERING )?INDEX sqlite_autoindex_task_counts_1 /,
        );
        expect(totalPlan, totalPlan).not.toMatch(/tasks /);
      } else if (index) {
        expect(totalPlan, totalPlan).toMatch(new RegExp(`COVERING INDEX ${index}`));
      }
    });
  }

  it("looks tasks up through an index when an item is deleted or a contact's tasks are unassigned", async () => {
    const unassign = unassignTasksOf(db, 1, 1).toSQL();
    for (const { sql: statement, params } of [
      { sql: "SELECT 1 FROM tasks WHERE item_id = ?", params: [1] },
      unassign,
      { sql: "SELECT 1 FROM tasks WHERE company_id = ?", params: [1] },
    ]) {
      const text = await plan({ toSQL: () => ({ sql: statement, params }) });
      expect(text, `${statement}\n${text}`).toMatch(/^SEARCH tasks USING/m);
      expect(text, text).not.toMatch(/^SCAN /m);
    }
  });

  it("detects a full scan (control)", async () => {
    const text = await plan({ toSQL: () => ({ sql: "SELECT * FROM tasks WHERE title = ?", params: ["x"] }) });
    expect(fullScanOfTasks(text)).toHaveLength(1);
  });
});
