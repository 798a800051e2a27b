import { beforeAll, describe, expect, it } from "vitest";
import {
  TIMESTAMP,
  type DataOf,
  call,
  createDepartment,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  uniqueWord,
  after,
  noServerError,
  expectStatus,
  ok,
} from "./helpers";
import { database } from "../../src/db/client";
import { ensureFolderPath, folderInCompany } from "../../src/records/folders";
import { nameKey } from "../../src/lib/text-key";

// Folders: CRUD, the tree (parents, moves, no loops), sibling names unique case-insensitively,
// deletes refused while a folder holds sub-folders or items, department holdings, scopes,
// tenancy, ensureFolderPath (folder_path for items) and races. Names are unique words, so tests
// never collide with one another in company 1's shared tree.

const FOLDER_FIELDS = ["folderid", "parentid", "folder_name", "deptid", "description", "add_date"].sort();
const ROUNDS = 10;

let owner: string, member: string, other: string;

beforeAll(async () => {
  ({ owner, member, other } = await demoTokens());
});

async function createFolder(body: Record<string, unknown> = {}, token = owner): Promise<DataOf<"createFolder">> {
  const res = await call("createFolder", "/v1/folders", {
    token,
    body: { folder_name: uniqueWord("Folder "), ...body },
  });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data;
}

async function getFolder(id: number, token = owner): Promise<DataOf<"getFolder">> {
  const res = await call("getFolder", `/v1/folders/${id}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.data;
}

async function listFolders(query = "", token = owner) {
  const res = await call("listFolders", `/v1/folders${query ? `?${query}` : ""}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.success).toBe(true);
  return res.body;
}

async function folderRow(id: number) {
  return env.DB.prepare("SELECT * FROM folders WHERE id = ?").bind(id).first<Record<string, unknown>>();
}

async function childrenOf(parentId: number, companyId = 1) {
  const { results } = await env.DB.prepare(
    "SELECT id, name FROM folders WHERE company_id = ? AND parent_id = ? ORDER BY id",
  )
    .bind(companyId, parentId)
    .all<{ id: number; name: string }>();
  return results;
}

/** An item in folder `folderId`, inserted directly in D1 (the items API is another resource). */
async function insertItem(folderId: number): Promise<number> {
  const row = await env.DB.prepare(
    "INSERT INTO items (company_id, dept_id, folder_id, title, expiry_date, created_by) VALUES (1, 1, ?, 'x', '2030-01-01', 1) RETURNING id",
  )
    .bind(folderId)
    .first<{ id: number }>();
  return row!.id;
}

async function deleteItem(itemId: number) {
  await env.DB.prepare("DELETE FROM items WHERE id = ?").bind(itemId).run();
}

/** Starts `request` after `steps` D1 round trips of its own, so races land in both orders. */

/** Walks up from `id` in D1; fails on a loop. */
async function ancestorsOf(id: number): Promise<number[]> {
  const seen: number[] = [];
  let current = id;
  while (current !== 0) {
    if (seen.includes(current)) throw new Error(`loop in the folder tree: ${[...seen, current].join(" -> ")}`);
    seen.push(current);
    const row = await folderRow(current);
    if (!row) throw new Error(`folder ${current} is missing (orphan below it)`);
    current = row.parent_id as number;
  }
  return seen;
}

describe("POST /v1/folders", () => {
  it("201 with msg and the folder: exactly the documented fields; top level, company's default department", async () => {
    const name = uniqueWord("Permits ");
    const res = await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: name } });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(res.body.msg).toBe("Folder created");
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(FOLDER_FIELDS);
    expect(data).toMatchObject({ parentid: 0, folder_name: name, deptid: 1, description: "" });
    expect(Number.isInteger(data.folderid)).toBe(true);
    expect(data.add_date).toMatch(TIMESTAMP);
    expect(await getFolder(data.folderid)).toEqual(data);
    expect(await folderRow(data.folderid)).toMatchObject({ company_id: 1, name_key: nameKey(name) });
  });

  it("a sub-folder takes its parent's department by default; an explicit deptid wins", async () => {
    const deptId = await createDepartment(1);
    const parent = await createFolder({ deptid: deptId, description: "Line one\nLine two\ttabbed" });
    expect(parent).toMatchObject({ deptid: deptId, description: "Line one\nLine two\ttabbed" });
    const child = await createFolder({ parent_id: parent.folderid });
    expect(child).toMatchObject({ parentid: parent.folderid, deptid: deptId });
    const elsewhere = await createFolder({ parent_id: parent.folderid, deptid: 1 });
    expect(elsewhere).toMatchObject({ parentid: parent.folderid, deptid: 1 });
    const top = await createFolder({ parent_id: 0 });
    expect(top).toMatchObject({ parentid: 0, deptid: 1 });
  });

  it("400 for a deptid that is not a department of the company; nothing is written", async () => {
    const theirs = await createDepartment(2);
    for (const deptid of [theirs, 999999]) {
      const name = uniqueWord("Bad ");
      expectShapeB(
        await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: name, deptid } }),
        400,
        new RegExp(`deptid ${deptid} does not exist`),
      );
      expect(await env.DB.prepare("SELECT id FROM folders WHERE name = ?").bind(name).first()).toBeNull();
    }
    for (const deptid of [0, -1, 1.5, "1", null]) {
      expectShapeB(
        await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: uniqueWord(), deptid } }),
        400,
        /deptid/,
      );
    }
  });

  it("400 for a parent_id that is not a folder of the company (unknown, or another company's)", async () => {
    const theirs = await createFolder({}, other);
    for (const parentId of [theirs.folderid, 999999]) {
      const name = uniqueWord("Orphan ");
      expectShapeB(
        await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: name, parent_id: parentId } }),
        400,
        new RegExp(`^parent_id ${parentId} is not a folder of this company$`),
      );
      expect(await env.DB.prepare("SELECT id FROM folders WHERE name = ?").bind(name).first()).toBeNull();
    }
    for (const parent_id of [-1, 1.5, "1", null, true]) {
      expectShapeB(
        await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: uniqueWord(), parent_id } }),
        400,
        /parent_id/,
      );
    }
  });

  it('400 naming folder_name when it is missing, empty, blank, too long, has a "/" or is not a string', async () => {
    for (const body of [
      {},
      { folder_name: "" },
      { folder_name: "   " },
      { folder_name: "\u200b" },
      { folder_name: "x".repeat(101) },
      { folder_name: "Permits/City" },
      { folder_name: "/" },
      { folder_name: 5 },
      { folder_name: "tab\there" },
    ]) {
      expectShapeB(await call("createFolder", "/v1/folders", { token: owner, body }), 400, /folder_name/);
    }
    expectShapeB(
      await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: "a/b" } }),
      400,
      /must not contain "\/"/,
    );
    const longest = await createFolder({ folder_name: uniqueWord().padEnd(100, "x") });
    expect(longest.folder_name).toHaveLength(100);
  });

  it("trims and NFC-normalises folder_name; a backslash is an ordinary character", async () => {
    const word = uniqueWord("Cafe");
    expect((await createFolder({ folder_name: `  ${word}\u0301  ` })).folder_name).toBe(
      `${word}\u0301`.normalize("NFC"),
    );
    const back = uniqueWord("a\\b");
    expect((await createFolder({ folder_name: back })).folder_name).toBe(back);
  });

  it("400 for a description over 1000 characters or with control characters, and for unknown fields", async () => {
    expectShapeB(
      await call("createFolder", "/v1/folders", {
        token: owner,
        body: { folder_name: uniqueWord(), description: "x".repeat(1001) },
      }),
      400,
      /description/,
    );
    expectShapeB(
      await call("createFolder", "/v1/folders", {
        token: owner,
        body: { folder_name: uniqueWord(), description: "bell\u0007" },
      }),
      400,
      /description/,
    );
    expectShapeB(
      await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: uniqueWord(), description: 5 } }),
      400,
      /description/,
    );
    expect((await createFolder({ description: "y".repeat(1000) })).description).toHaveLength(1000);
    expectShapeB(
      await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: uniqueWord(), name: "x" } }),
      400,
      /name/,
    );
    expectShapeB(
      await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: uniqueWord(), parentid: 0 } }),
      400,
      /parentid/,
    );
  });

  it("409 for a sibling with the same name, case-insensitively; nothing else is written", async () => {
    const parent = await createFolder();
    const first = await createFolder({ parent_id: parent.folderid });
    for (const dup of [first.folder_name, first.folder_name.toUpperCase(), ` ${first.folder_name.toLowerCase()} `]) {
      expectShapeB(
        await call("createFolder", "/v1/folders", {
          token: owner,
          body: { folder_name: dup, parent_id: parent.folderid },
        }),
        409,
        new RegExp(`already exists in folder ${parent.folderid}$`),
      );
    }
    expect(await childrenOf(parent.folderid)).toHaveLength(1);
    const top = await createFolder();
    expectShapeB(
      await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: top.folder_name.toUpperCase() } }),
      409,
      /already exists at the top level/,
    );
  });

  for (const [first, second] of [
    ["Straße", "STRASSE"],
    ["Äpfel", "äpfel"],
    ["ΟΔΟΣ", "οδος"],
    ["Café", "Cafe\u0301"],
  ]) {
    it(`"${first}" then "${second}" in the same folder is 409 (case folding in every script)`, async () => {
      const parent = await createFolder();
      const word = uniqueWord();
      await createFolder({ folder_name: `${first} ${word}`, parent_id: parent.folderid });
      const res = await call("createFolder", "/v1/folders", {
        token: owner,
        body: { folder_name: `${second} ${word.toUpperCase()}`, parent_id: parent.folderid },
      });
      expectShapeB(res, 409, /already exists/);
    });
  }

  it("the same name is fine under another parent, accents distinguish, and another company has its own names", async () => {
    const a = await createFolder();
    const b = await createFolder();
    const name = uniqueWord("Shared ");
    await createFolder({ folder_name: name, parent_id: a.folderid });
    await createFolder({ folder_name: name, parent_id: b.folderid });
    await createFolder({ folder_name: name });
    const word = uniqueWord();
    await createFolder({ folder_name: `Apfel ${word}`, parent_id: a.folderid });
    await createFolder({ folder_name: `Äpfel ${word}`, parent_id: a.folderid });
    await createFolder({ folder_name: name }, other);
  });
});

describe("GET /v1/folders", () => {
  it("lists a folder's children ordered by folderid, with meta {total, limit, offset} and the documented fields", async () => {
    const parent = await createFolder();
    const children = [
      await createFolder({ parent_id: parent.folderid }),
      await createFolder({ parent_id: parent.folderid }),
    ];
    await createFolder({ parent_id: children[0]!.folderid }); // a grandchild: not listed
    const list = await listFolders(`parent_id=${parent.folderid}`);
    expect(list.data).toEqual(children);
    expect(list.meta).toEqual({ total: 2, limit: 200, offset: 0, total_exact: true });
    for (const folder of list.data) expect(Object.keys(folder).sort()).toEqual(FOLDER_FIELDS);
  });

  it("parent_id=0 selects top-level folders only; without it every folder is listed", async () => {
    const word = uniqueWord("Level");
    const top = await createFolder({ folder_name: `${word} top` });
    const sub = await createFolder({ folder_name: `${word} sub`, parent_id: top.folderid });
    expect((await listFolders(`parent_id=0&q=${word}`)).data).toEqual([top]);
    expect((await listFolders(`q=${word}`)).data).toEqual([top, sub]);
  });

  it("filters by deptid, and combines filters with AND", async () => {
    const deptId = await createDepartment(1);
    const a = await createFolder({ deptid: deptId });
    const b = await createFolder({ deptid: deptId, parent_id: a.folderid });
    await createFolder({ parent_id: a.folderid, deptid: 1 });
    expect((await listFolders(`deptid=${deptId}`)).data).toEqual([a, b]);
    expect((await listFolders(`deptid=${deptId}&parent_id=${a.folderid}`)).data).toEqual([b]);
    expect((await listFolders(`deptid=999999`)).data).toEqual([]);
  });

  it("filters by q: case-insensitive substring of the name in every script; % and _ are plain characters", async () => {
    const parent = await createFolder();
    const word = uniqueWord();
    const names = [`Straße ${word}`, `ΟΔΟΣ ${word}`, `100% ${word}`, `a_b ${word}`];
    const made = [];
    for (const folder_name of names) made.push(await createFolder({ folder_name, parent_id: parent.folderid }));
    const q = async (text: string) =>
      (await listFolders(`parent_id=${parent.folderid}&q=${encodeURIComponent(text)}`)).data.map((f) => f.folder_name);
    expect(await q("STRASSE")).toEqual([names[0]]);
    expect(await q("οδος")).toEqual([names[1]]);
    expect(await q("%")).toEqual([names[2]]);
    expect(await q("_")).toEqual([names[3]]);
    expect(await q(word.toUpperCase())).toEqual(names);
    expect(await q("nothing-like-this")).toEqual([]);
  });

  it("pages with limit and offset; total counts every match", async () => {
    const parent = await createFolder();
    const children = [];
    for (let i = 0; i < 5; i++) children.push(await createFolder({ parent_id: parent.folderid }));
    const page = await listFolders(`parent_id=${parent.folderid}&limit=2&offset=2`);
    expect(page.data).toEqual(children.slice(2, 4));
    expect(page.meta).toEqual({ total: 5, limit: 2, offset: 2, total_exact: true });
    expect((await listFolders(`parent_id=${parent.folderid}&offset=10`)).data).toEqual([]);
  });

  it("400 for a bad limit, offset, parent_id or deptid", async () => {
    for (const query of [
      "limit=0",
      "limit=201",
      "offset=-1",
      "parent_id=-1",
      "parent_id=abc",
      "parent_id=1.5",
      "deptid=0",
      "deptid=x",
    ]) {
      expectShapeB(
        await call("listFolders", `/v1/folders?${query}`, { token: owner }),
        400,
        new RegExp(query.split("=")[0]!),
      );
    }
  });

  it("never shows another company's folders", async () => {
    const word = uniqueWord("Theirs");
    const theirs = await createFolder({ folder_name: word }, other);
    expect((await listFolders(`q=${word}`)).data).toEqual([]);
    expect((await listFolders(`parent_id=${theirs.folderid}`)).data).toEqual([]);
    expect((await listFolders(`q=${word}`, other)).data).toEqual([theirs]);
  });
});

describe("GET /v1/folders/{folder_id}", () => {
  it("404 Shape B for an unknown folder and for another company's folder", async () => {
    expectShapeB(await call("getFolder", "/v1/folders/999999", { token: owner }), 404, /Folder not found/);
    const theirs = await createFolder({}, other);
    expectShapeB(await call("getFolder", `/v1/folders/${theirs.folderid}`, { token: owner }), 404, /Folder not found/);
  });

  it("400 for an id that is not a positive integer", async () => {
    for (const id of ["abc", "0", "-1", "1.5"]) {
      expectShapeB(await call("getFolder", `/v1/folders/${id}`, { token: owner }), 400, /folder_id/);
    }
  });
});

describe("PATCH /v1/folders/{folder_id}", () => {
  it("400 'No updatable fields provided' for an empty body", async () => {
    const folder = await createFolder();
    expectShapeB(
      await call("updateFolder", `/v1/folders/${folder.folderid}`, { token: owner, body: {} }),
      400,
      /No updatable fields provided/,
    );
  });

  it("renames and describes; 200 with msg and the folder", async () => {
    const folder = await createFolder();
    const name = uniqueWord("Renamed ");
    const res = await call("updateFolder", `/v1/folders/${folder.folderid}`, {
      token: owner,
      body: { folder_name: name, description: "Now\ndescribed" },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body).toEqual({
      success: true,
      msg: "Folder updated",
      data: { ...folder, folder_name: name, description: "Now\ndescribed" },
    });
    expect(await getFolder(folder.folderid)).toEqual(res.body.data);
    const cleared = ok(
      await call("updateFolder", `/v1/folders/${folder.folderid}`, { token: owner, body: { description: "" } }),
    );
    expect(cleared.body.data).toMatchObject({ folder_name: name, description: "" });
  });

  it("400 for an invalid folder_name, description or parent_id, and for unknown fields; nothing changes", async () => {
    const folder = await createFolder();
    for (const body of [
      { folder_name: "" },
      { folder_name: "a/b" },
      { folder_name: "x".repeat(101) },
      { description: "x".repeat(1001) },
      { parent_id: -1 },
      { deptid: 1 },
    ]) {
      expectShapeB(await call("updateFolder", `/v1/folders/${folder.folderid}`, { token: owner, body }), 400);
    }
    expect(await getFolder(folder.folderid)).toEqual(folder);
  });

  it("409 when renaming to a sibling's name in another case or script; a case-only rename of itself is fine", async () => {
    const parent = await createFolder();
    const word = uniqueWord();
    const a = await createFolder({ folder_name: `Straße ${word}`, parent_id: parent.folderid });
    const b = await createFolder({ parent_id: parent.folderid });
    expectShapeB(
      await call("updateFolder", `/v1/folders/${b.folderid}`, {
        token: owner,
        body: { folder_name: `STRASSE ${word}` },
      }),
      409,
      new RegExp(`already exists in folder ${parent.folderid}$`),
    );
    expect(await getFolder(b.folderid)).toEqual(b);
    const res = await call("updateFolder", `/v1/folders/${a.folderid}`, {
      token: owner,
      body: { folder_name: `STRASSE ${word.toUpperCase()}` },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    // A name used in another folder is fine.
    expectStatus(
      await call("updateFolder", `/v1/folders/${b.folderid}`, {
        token: owner,
        body: { folder_name: parent.folder_name },
      }),
      200,
    );
  });

  it("moves a folder, with its sub-folders, under another folder and back to the top level; the department stays", async () => {
    const deptId = await createDepartment(1);
    const from = await createFolder();
    const to = await createFolder({ deptid: deptId });
    const moved = await createFolder({ parent_id: from.folderid });
    const inside = await createFolder({ parent_id: moved.folderid });
    const res = await call("updateFolder", `/v1/folders/${moved.folderid}`, {
      token: owner,
      body: { parent_id: to.folderid },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toEqual({ ...moved, parentid: to.folderid });
    expect(await childrenOf(from.folderid)).toEqual([]);
    expect(await getFolder(inside.folderid)).toEqual(inside);
    expect(await ancestorsOf(inside.folderid)).toEqual([inside.folderid, moved.folderid, to.folderid]);

    const top = ok(
      await call("updateFolder", `/v1/folders/${moved.folderid}`, { token: owner, body: { parent_id: 0 } }),
    );
    expect(top.body.data).toEqual({ ...moved, parentid: 0 });
    // parent_id equal to the current parent changes nothing.
    const same = await call("updateFolder", `/v1/folders/${moved.folderid}`, { token: owner, body: { parent_id: 0 } });
    expectStatus(same, 200);
    expect(same.body.data).toEqual({ ...moved, parentid: 0 });
  });

  it("moves and renames in one request; 409 when the name clashes at the destination, and nothing moves", async () => {
    const from = await createFolder();
    const to = await createFolder();
    const clash = await createFolder({ parent_id: to.folderid });
    const folder = await createFolder({ parent_id: from.folderid, folder_name: clash.folder_name.toUpperCase() });
    expectShapeB(
      await call("updateFolder", `/v1/folders/${folder.folderid}`, { token: owner, body: { parent_id: to.folderid } }),
      409,
      new RegExp(`already exists in folder ${to.folderid}$`),
    );
    expect(await getFolder(folder.folderid)).toEqual(folder);
    const name = uniqueWord("Moved ");
    const res = await call("updateFolder", `/v1/folders/${folder.folderid}`, {
      token: owner,
      body: { parent_id: to.folderid, folder_name: name },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toMatchObject({ parentid: to.folderid, folder_name: name });
  });

  it("400 for moving under an unknown folder or another company's folder; nothing changes", async () => {
    const folder = await createFolder();
    const theirs = await createFolder({}, other);
    for (const parentId of [theirs.folderid, 999999]) {
      expectShapeB(
        await call("updateFolder", `/v1/folders/${folder.folderid}`, { token: owner, body: { parent_id: parentId } }),
        400,
        new RegExp(`^parent_id ${parentId} is not a folder of this company$`),
      );
    }
    expect(await getFolder(folder.folderid)).toEqual(folder);
  });

  it("400 for moving a folder into itself, its child or its grandchild; nothing changes", async () => {
    const root = await createFolder();
    const child = await createFolder({ parent_id: root.folderid });
    const grandchild = await createFolder({ parent_id: child.folderid });
    expectShapeB(
      await call("updateFolder", `/v1/folders/${root.folderid}`, { token: owner, body: { parent_id: root.folderid } }),
      400,
      /cannot be moved into itself/,
    );
    for (const target of [child, grandchild]) {
      expectShapeB(
        await call("updateFolder", `/v1/folders/${root.folderid}`, {
          token: owner,
          body: { parent_id: target.folderid, folder_name: uniqueWord() },
        }),
        400,
        new RegExp(`^Folder ${root.folderid} cannot be moved into folder ${target.folderid}, which is inside it$`),
      );
    }
    expectShapeB(
      await call("updateFolder", `/v1/folders/${child.folderid}`, {
        token: owner,
        body: { parent_id: grandchild.folderid },
      }),
      400,
      /inside it/,
    );
    expect(await getFolder(root.folderid)).toEqual(root);
    expect(await getFolder(child.folderid)).toEqual(child);
    expect(await ancestorsOf(grandchild.folderid)).toEqual([grandchild.folderid, child.folderid, root.folderid]);
    // Sideways and upwards moves are fine: the grandchild to the top, the child under a sibling tree.
    expectStatus(
      await call("updateFolder", `/v1/folders/${grandchild.folderid}`, {
        token: owner,
        body: { parent_id: root.folderid },
      }),
      200,
    );
    expectStatus(
      await call("updateFolder", `/v1/folders/${child.folderid}`, {
        token: owner,
        body: { parent_id: grandchild.folderid },
      }),
      200,
    );
    expect(await ancestorsOf(child.folderid)).toEqual([child.folderid, grandchild.folderid, root.folderid]);
  });

  it("404 for an unknown folder and for another company's folder, which stays untouched", async () => {
    expectShapeB(
      await call("updateFolder", "/v1/folders/999999", { token: owner, body: { folder_name: "x" } }),
      404,
      /Folder not found/,
    );
    const theirs = await createFolder({}, other);
    for (const body of [{ folder_name: uniqueWord() }, { parent_id: 0 }, { description: "x" }]) {
      expectShapeB(
        await call("updateFolder", `/v1/folders/${theirs.folderid}`, { token: owner, body }),
        404,
        /Folder not found/,
      );
    }
    expect(await getFolder(theirs.folderid, other)).toEqual(theirs);
  });
});

describe("DELETE /v1/folders/{folder_id}", () => {
  it("deletes an empty folder; then it is 404", async () => {
    const folder = await createFolder();
    const res = await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body).toEqual({ success: true, msg: "Folder deleted" });
    expect(await folderRow(folder.folderid)).toBeNull();
    expectShapeB(await call("getFolder", `/v1/folders/${folder.folderid}`, { token: owner }), 404);
    expectShapeB(await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner }), 404);
    // Its name can be used again.
    expect((await createFolder({ folder_name: folder.folder_name })).folderid).toBeGreaterThan(folder.folderid);
  });

  it("409 naming the sub-folders and items it holds (archived items too); nothing is deleted", async () => {
    const folder = await createFolder();
    const subs = [
      await createFolder({ parent_id: folder.folderid }),
      await createFolder({ parent_id: folder.folderid }),
    ];
    const item = await insertItem(folder.folderid);
    try {
      expectShapeB(
        await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner }),
        409,
        new RegExp(
          `^Folder ${folder.folderid} is not empty: it holds 2 sub-folders and 1 item; move or delete them first$`,
        ),
      );
      for (const sub of subs)
        expectStatus(await call("deleteFolder", `/v1/folders/${sub.folderid}`, { token: owner }), 200);
      await env.DB.prepare("UPDATE items SET archived = 1 WHERE id = ?").bind(item).run();
      expectShapeB(
        await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner }),
        409,
        /it holds 1 item;/,
      );
      expect(await getFolder(folder.folderid)).toEqual(folder);
    } finally {
      await deleteItem(item);
    }
    expectStatus(await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner }), 200);
  });

  it("409 for a single sub-folder (items of a sub-folder do not count for its parent)", async () => {
    const folder = await createFolder();
    const sub = await createFolder({ parent_id: folder.folderid });
    const item = await insertItem(sub.folderid);
    try {
      expectShapeB(
        await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner }),
        409,
        /it holds 1 sub-folder;/,
      );
      expectShapeB(
        await call("deleteFolder", `/v1/folders/${sub.folderid}`, { token: owner }),
        409,
        /it holds 1 item;/,
      );
    } finally {
      await deleteItem(item);
    }
  });

  it("404 for an unknown folder and for another company's folder, which stays", async () => {
    expectShapeB(await call("deleteFolder", "/v1/folders/999999", { token: owner }), 404, /Folder not found/);
    const theirs = await createFolder({}, other);
    expectShapeB(
      await call("deleteFolder", `/v1/folders/${theirs.folderid}`, { token: owner }),
      404,
      /Folder not found/,
    );
    expect(await folderRow(theirs.folderid)).not.toBeNull();
  });
});

describe("a department holding folders", () => {
  it("cannot be deleted (400 naming the folders) until they are gone", async () => {
    const deptId = await createDepartment(1);
    const folder = await createFolder({ deptid: deptId });
    const sub = await createFolder({ parent_id: folder.folderid });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${deptId}`, { token: owner }),
      400,
      new RegExp(`^Department ${deptId} still holds 2 folders: move or delete them first$`),
    );
    expectStatus(await call("deleteFolder", `/v1/folders/${sub.folderid}`, { token: owner }), 200);
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${deptId}`, { token: owner }),
      400,
      /still holds 1 folder:/,
    );
    expectStatus(await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner }), 200);
    expectStatus(await call("deleteDepartment", `/v1/departments/${deptId}`, { token: owner }), 200);
  });

  it("DELETE of the department racing a folder create in it: never a folder in a deleted department", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const deptId = await createDepartment(1);
      const [deleted, createdRes] = await Promise.all([
        after(round % 3, () => call("deleteDepartment", `/v1/departments/${deptId}`, { token: owner })),
        call("createFolder", "/v1/folders", {
          token: owner,
          body: { folder_name: uniqueWord("Race "), deptid: deptId },
        }),
      ]);
      noServerError(deleted, createdRes);
      const { results } = await env.DB.prepare("SELECT id FROM folders WHERE dept_id = ?").bind(deptId).all();
      if (deleted.status === 200) {
        expectShapeB(createdRes, 400, /deptid/);
        expect(results).toEqual([]);
      } else {
        expectShapeB(deleted, 400, /still holds 1 folder:/);
        expectStatus(createdRes, 201);
        expect(results).toHaveLength(1);
      }
    }
  });
});

describe("scopes, members and authentication", () => {
  /** One request per endpoint, on folder `id`. */
  const everyEndpoint = (token: string, id: number) => [
    call("listFolders", "/v1/folders", { token }),
    call("createFolder", "/v1/folders", { token, body: { folder_name: uniqueWord() } }),
    call("getFolder", `/v1/folders/${id}`, { token }),
    call("updateFolder", `/v1/folders/${id}`, { token, body: { folder_name: uniqueWord() } }),
    call("deleteFolder", `/v1/folders/${id}`, { token }),
  ];
  const requiredScopes = ["folders:read", "folders:write", "folders:read", "folders:write", "folders:write"];

  it("a token without the scope gets 403 Shape A insufficient_scope with required_scope; nothing changes", async () => {
    const folder = await createFolder();
    for (const token of [await tokenFor("demo-owner", "contacts:read"), await tokenFor("demo-readonly")]) {
      const results = await Promise.all(everyEndpoint(token, folder.folderid));
      results.forEach((res, i) => {
        expectShapeA(res, 403, "insufficient_scope");
        expect(res.body.required_scope).toBe(requiredScopes[i]);
      });
    }
    expect(await getFolder(folder.folderid)).toEqual(folder);
  });

  it("folders:read may read but not write; folders:write may write but not read", async () => {
    const folder = await createFolder();
    const reader = await tokenFor("demo-owner", "folders:read");
    expectStatus(await call("listFolders", "/v1/folders", { token: reader }), 200);
    expect(await getFolder(folder.folderid, reader)).toEqual(folder);
    const refused = await call("updateFolder", `/v1/folders/${folder.folderid}`, {
      token: reader,
      body: { folder_name: uniqueWord() },
    });
    expectShapeA(refused, 403, "insufficient_scope");
    expect(refused.body.required_scope).toBe("folders:write");

    const writer = await tokenFor("demo-owner", "folders:write");
    expectShapeA(
      await call("getFolder", `/v1/folders/${folder.folderid}`, { token: writer }),
      403,
      "insufficient_scope",
    );
    expectStatus(
      await call("createFolder", "/v1/folders", { token: writer, body: { folder_name: uniqueWord() } }),
      201,
    );
    expectStatus(await call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: writer }), 200);
  });

  it("is not owner-only: a member (demo-member) uses every endpoint", async () => {
    const folder = await createFolder({}, member);
    const statuses = [];
    // One after the other: the DELETE comes last.
    for (const request of [
      () => call("listFolders", "/v1/folders", { token: member }),
      () => call("getFolder", `/v1/folders/${folder.folderid}`, { token: member }),
      () =>
        call("updateFolder", `/v1/folders/${folder.folderid}`, { token: member, body: { folder_name: uniqueWord() } }),
      () => call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: member }),
    ]) {
      statuses.push((await request()).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
  });

  it("another company can neither see nor touch company 1's folders (404), nor use them as a parent (400)", async () => {
    const folder = await createFolder();
    const results = await Promise.all(everyEndpoint(other, folder.folderid).slice(2));
    for (const res of results) expectShapeB(res, 404, /Folder not found/);
    expectShapeB(
      await call("createFolder", "/v1/folders", {
        token: other,
        body: { folder_name: uniqueWord(), parent_id: folder.folderid },
      }),
      400,
      /parent_id/,
    );
    expect(await getFolder(folder.folderid)).toEqual(folder);
    expect(await childrenOf(folder.folderid, 2)).toEqual([]);
  });

  it("401 without a token", async () => {
    expectShapeA(await call("listFolders", "/v1/folders"), 401, "invalid_token");
    expectShapeA(await call("createFolder", "/v1/folders", { body: { folder_name: "x" } }), 401, "invalid_token");
    expectShapeA(await call("deleteFolder", "/v1/folders/1"), 401, "invalid_token");
  });
});

describe("ensureFolderPath (folder_path for items)", () => {
  const db = () => database(env.DB);

  /** The folder chain from the top to `id`, as names, read from D1. */
  async function pathOf(id: number): Promise<string> {
    const ids = (await ancestorsOf(id)).reverse();
    const names = [];
    for (const folderId of ids) names.push((await folderRow(folderId))!.name);
    return names.join("/");
  }

  it("creates missing folders top-down like mkdir -p, in the given department, and returns the last one", async () => {
    const deptId = await createDepartment(1);
    const word = uniqueWord("Permits");
    const id = await ensureFolderPath(db(), 1, deptId, `${word}/City/Annex`);
    expect(await pathOf(id)).toBe(`${word}/City/Annex`);
    for (const folderId of await ancestorsOf(id)) expect((await folderRow(folderId))!.dept_id).toBe(deptId);
    expect(await getFolder(id)).toMatchObject({ folder_name: "Annex", deptid: deptId });
  });

  it("reuses existing folders by name, case-insensitively (any script), whatever their department", async () => {
    const word = uniqueWord("Straße");
    const id = await ensureFolderPath(db(), 1, 1, `${word}/City`);
    expect(await ensureFolderPath(db(), 1, 1, `${word}/City`)).toBe(id);
    expect(await ensureFolderPath(db(), 1, 1, `${word.toUpperCase().replace("SS", "SS")}/CITY`)).toBe(id);
    const deptId = await createDepartment(1);
    expect(await ensureFolderPath(db(), 1, deptId, `${word}/city`)).toBe(id);
    // Only the missing tail is created, in the department given.
    const deeper = await ensureFolderPath(db(), 1, deptId, `${word}/city/Annex`);
    expect((await folderRow(deeper))!).toMatchObject({ parent_id: id, dept_id: deptId, name: "Annex" });
    expect((await folderRow(id))!.dept_id).toBe(1);
    const top = (await ancestorsOf(id)).at(-1)!;
    expect(await childrenOf(top)).toHaveLength(1);
  });

  it("reuses folders made through the API, and the API sees the ones it made", async () => {
    const parent = await createFolder();
    const id = await ensureFolderPath(db(), 1, 1, `${parent.folder_name.toLowerCase()}/Sub`);
    expect(await getFolder(id)).toMatchObject({ parentid: parent.folderid, folder_name: "Sub" });
    expectShapeB(
      await call("createFolder", "/v1/folders", {
        token: owner,
        body: { folder_name: "SUB", parent_id: parent.folderid },
      }),
      409,
    );
  });

  it("trims and NFC-normalises each name and ignores empty segments", async () => {
    const word = uniqueWord("Cafe");
    const id = await ensureFolderPath(db(), 1, 1, ` /${word}\u0301 // City  /  \u200b / `);
    expect(await pathOf(id)).toBe(`${word}\u0301/City`.normalize("NFC"));
    expect(await ensureFolderPath(db(), 1, 1, `${word}\u0301/City`.normalize("NFC"))).toBe(id);
  });

  it("400 naming folder_path for no folder name, more than 10 folders, a name over 100 characters, or control characters; nothing is written", async () => {
    const word = uniqueWord("Limit");
    const refusals: Array<[string, RegExp]> = [
      ...["", "/", " / // ", "\u200b"].map((path): [string, RegExp] => [
        path,
        /folder_path must name at least one folder/,
      ]),
      [[word, ..."abcdefghij"].join("/"), /folder_path may name at most 10 folders/],
      [`${word}/${"x".repeat(101)}`, /folder_path: each folder name must be at most 100 characters/],
      [`${word}/a\u0007b`, /folder_path must not contain control characters/],
      [`${word}/\ud800`, /folder_path must be well-formed/],
    ];
    for (const [path, msg] of refusals) {
      await expect(ensureFolderPath(db(), 1, 1, path)).rejects.toMatchObject({
        status: 400,
        body: { success: false, msg: expect.stringMatching(msg) },
      });
    }
    expect(await env.DB.prepare("SELECT id FROM folders WHERE name = ?").bind(word).first()).toBeNull();
    // Exactly at the limits is fine.
    const id = await ensureFolderPath(db(), 1, 1, [word, ..."abcdefgh", "y".repeat(100)].join("/"));
    expect(await ancestorsOf(id)).toHaveLength(10);
  });

  it("400 for a department that is not in the company, when a folder has to be created", async () => {
    const theirs = await createDepartment(2);
    await expect(ensureFolderPath(db(), 1, theirs, uniqueWord("Nope"))).rejects.toMatchObject({ status: 400 });
    // Another company's tree is its own: the same path makes separate folders.
    const word = uniqueWord("Both");
    const mine = await ensureFolderPath(db(), 1, 1, word);
    const yours = await ensureFolderPath(db(), 2, 2, word);
    expect(yours).not.toBe(mine);
    expect((await folderRow(yours))!.company_id).toBe(2);
  });

  it("concurrent calls for the same path (in any case) end with one folder per segment", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const word = uniqueWord("Twin");
      const paths = [`${word}/A/B`, `${word.toUpperCase()}/a/b`, `${word}/A/b/`, ` ${word} / a / B`, `${word}/A/B`];
      const ids = await Promise.all(paths.map((p) => ensureFolderPath(db(), 1, 1, p)));
      expect(new Set(ids).size).toBe(1);
      const { results } = await env.DB.prepare(
        "SELECT id FROM folders WHERE company_id = 1 AND parent_id = 0 AND name_key = ?",
      )
        .bind(nameKey(word))
        .all<{ id: number }>();
      expect(results).toHaveLength(1);
      const a = await childrenOf(results[0]!.id);
      expect(a).toHaveLength(1);
      expect(await childrenOf(a[0]!.id)).toEqual([{ id: ids[0], name: "B" }]);
    }
  });

  it("racing a DELETE of a folder on the path: the path ends complete, never under a deleted folder", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const top = await createFolder();
      // The path is one round trip, the DELETE two (read, guarded delete): the path goes later.
      const [deleted, id] = await Promise.all([
        call("deleteFolder", `/v1/folders/${top.folderid}`, { token: owner }),
        after(round % 4, () => ensureFolderPath(db(), 1, 1, `${top.folder_name}/Sub`)),
      ]);
      noServerError(deleted);
      const chain = await ancestorsOf(id);
      expect(chain).toHaveLength(2);
      if (deleted.status === 200) expect(chain[1]).not.toBe(top.folderid);
      else {
        expectShapeB(deleted, 409, /it holds 1 sub-folder;/);
        expect(chain[1]).toBe(top.folderid);
      }
    }
  });
});

describe("folderInCompany", () => {
  it("selects the id of a folder of the company only", async () => {
    const mine = await createFolder();
    const theirs = await createFolder({}, other);
    const db = database(env.DB);
    expect(await folderInCompany(db, 1, mine.folderid).get()).toEqual({ id: mine.folderid });
    expect(await folderInCompany(db, 1, theirs.folderid).get()).toBeUndefined();
    expect(await folderInCompany(db, 2, theirs.folderid).get()).toEqual({ id: theirs.folderid });
  });
});

describe("folders under concurrent requests", () => {
  it("DELETE racing a sub-folder create in it: never both succeed, never a 500, never an orphan", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const folder = await createFolder();
      const [deleted, createdRes] = await Promise.all([
        after(round % 3, () => call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner })),
        call("createFolder", "/v1/folders", {
          token: owner,
          body: { folder_name: uniqueWord("Sub "), parent_id: folder.folderid },
        }),
      ]);
      noServerError(deleted, createdRes);
      outcomes.add(`${deleted.status}/${createdRes.status}`);
      const children = await childrenOf(folder.folderid);
      if (deleted.status === 200) {
        expectShapeB(createdRes, 400, new RegExp(`^parent_id ${folder.folderid} is not a folder of this company$`));
        expect(await folderRow(folder.folderid)).toBeNull();
        expect(children).toEqual([]);
      } else {
        expectShapeB(deleted, 409, /it holds 1 sub-folder;/);
        expectStatus(createdRes, 201);
        expect(children).toHaveLength(1);
      }
    }
    expect([...outcomes].every((o) => o === "200/400" || o === "409/201")).toBe(true);
  });

  it("DELETE racing a move of another folder into it: never a folder under a deleted one", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const folder = await createFolder();
      const mover = await createFolder();
      const [deleted, moved] = await Promise.all([
        after(round % 3, () => call("deleteFolder", `/v1/folders/${folder.folderid}`, { token: owner })),
        call("updateFolder", `/v1/folders/${mover.folderid}`, { token: owner, body: { parent_id: folder.folderid } }),
      ]);
      noServerError(deleted, moved);
      await ancestorsOf(mover.folderid);
      if (deleted.status === 200) {
        expectShapeB(moved, 400, /is not a folder of this company/);
        expect((await folderRow(mover.folderid))!.parent_id).toBe(0);
      } else {
        expectShapeB(deleted, 409, /it holds 1 sub-folder;/);
        expectStatus(moved, 200);
      }
    }
  });

  it("moving A under B and B under A at once: at most one succeeds, never a loop", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await createFolder();
      const b = await createFolder();
      const results = await Promise.all([
        call("updateFolder", `/v1/folders/${a.folderid}`, { token: owner, body: { parent_id: b.folderid } }),
        after(round % 2, () =>
          call("updateFolder", `/v1/folders/${b.folderid}`, { token: owner, body: { parent_id: a.folderid } }),
        ),
      ]);
      noServerError(...results);
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      for (const res of results) if (res.status !== 200) expectShapeB(res, 400, /which is inside it/);
      await ancestorsOf(a.folderid);
      await ancestorsOf(b.folderid);
    }
  });

  it("two creates with the same name in other case: one 201, one 409", async () => {
    const parent = await createFolder();
    for (let round = 0; round < ROUNDS; round++) {
      const name = uniqueWord("Twin ");
      const results = await Promise.all([
        call("createFolder", "/v1/folders", { token: owner, body: { folder_name: name, parent_id: parent.folderid } }),
        call("createFolder", "/v1/folders", {
          token: owner,
          body: { folder_name: name.toUpperCase(), parent_id: parent.folderid },
        }),
      ]);
      noServerError(...results);
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    }
  });
});
