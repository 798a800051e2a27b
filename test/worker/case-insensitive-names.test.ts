// Case-insensitive uniqueness and search compare a key computed in the Worker (Unicode case
// folding + NFC, src/lib/text-key.ts), not SQLite's ASCII-only lower().
import { beforeAll, describe, expect, it } from "vitest";
import { nameKey } from "../../src/lib/text-key";
import {
  call,
  createDepartment,
  createGroup,
  env,
  expectShapeB,
  tokenFor,
  uniqueWord,
  expectStatus,
  ok,
} from "./helpers";

let owner: string;

beforeAll(async () => {
  owner = await tokenFor("demo-owner");
});

describe("nameKey", () => {
  it("folds case in every script, and composed and decomposed spellings together", () => {
    expect(nameKey("Äpfel")).toBe(nameKey("äpfel"));
    expect(nameKey("ÄPFEL")).toBe(nameKey("a\u0308pfel"));
    expect(nameKey("STRASSE")).toBe(nameKey("straße"));
    expect(nameKey("ΟΔΟΣ")).toBe(nameKey("οδος"));
    expect(nameKey("Ǆ")).toBe(nameKey("ǆ"));
  });

  it("keeps accents and letters apart", () => {
    expect(nameKey("Apfel")).not.toBe(nameKey("Äpfel"));
    expect(nameKey("resume")).not.toBe(nameKey("résumé"));
  });
});

describe("contact group names are unique per department, case-insensitively in every script", () => {
  for (const [first, second] of [
    ["Äpfel", "äpfel"],
    ["ÉQUIPE", "équipe"],
    ["Straße", "STRASSE"],
    ["Ölçüm", "ÖLÇÜM"],
    ["Café", "Cafe\u0301"],
  ]) {
    it(`"${first}" then "${second}" is 409`, async () => {
      const deptid = await createDepartment(1);
      const res1 = await call("createContactGroup", "/v1/contact-groups", {
        token: owner,
        body: { group_name: first, deptid },
      });
      expectStatus(res1, 201);
      const res2 = await call("createContactGroup", "/v1/contact-groups", {
        token: owner,
        body: { group_name: second, deptid },
      });
      expectShapeB(res2, 409, /already exists/);
    });
  }

  it("renaming onto another group's name in another case is 409; a case-only rename of itself is fine", async () => {
    const deptid = await createDepartment(1);
    const a = await createGroup(owner, { deptid, group_name: "Ärzte" });
    const b = await createGroup(owner, { deptid, group_name: "Bäcker" });
    expectShapeB(
      await call("updateContactGroup", `/v1/contact-groups/${b.groupid}`, {
        token: owner,
        body: { group_name: "ÄRZTE" },
      }),
      409,
    );
    const renamed = await call("updateContactGroup", `/v1/contact-groups/${a.groupid}`, {
      token: owner,
      body: { group_name: "ÄRZTE" },
    });
    expectStatus(renamed, 200);
    expect(renamed.body.data.group_name).toBe("ÄRZTE");
  });
});

describe("contact emails are unique per company through their folded key", () => {
  it("stores the folded key and refuses the same address in other case", async () => {
    const local = uniqueWord("Mixed");
    const body = { first_name: "Key", last_name: "Test" };
    const first = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { ...body, email: `${local}@Example.TEST` },
    });
    expectStatus(first, 201);
    const row = await env.DB.prepare("SELECT email_key FROM contacts WHERE id = ?")
      .bind(first.body.data.contact_id)
      .first<{ email_key: string }>();
    expect(row?.email_key).toBe(nameKey(`${local}@Example.TEST`));
    const dup = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { ...body, email: `${local.toUpperCase()}@example.test` },
    });
    expectShapeB(dup, 409, /already exists/);
  });
});

describe("GET /v1/contact-groups?q= (substring of the folded name)", () => {
  it("matches across case in every script", async () => {
    const word = uniqueWord("grün");
    const group = await createGroup(owner, { group_name: `Lieferanten ${word}` });
    const res = await call("listContactGroups", `/v1/contact-groups?q=${encodeURIComponent(word.toUpperCase())}`, {
      token: owner,
    });
    expectStatus(res, 200);
    expect(res.body.data.map((g: { groupid: number }) => g.groupid)).toEqual([group.groupid]);
  });

  it("takes literal % and _ as characters, not wildcards", async () => {
    const word = uniqueWord("pct");
    await createGroup(owner, { group_name: `${word} 100%` });
    expect(
      ok(
        await call("listContactGroups", `/v1/contact-groups?q=${encodeURIComponent(`${word} 100%`)}`, { token: owner }),
      ).body.data,
    ).toHaveLength(1);
    expect(
      ok(await call("listContactGroups", `/v1/contact-groups?q=${encodeURIComponent(`${word}_100`)}`, { token: owner }))
        .body.data,
    ).toHaveLength(0);
  });

  it("answers any q within the documented 200 characters (D1 caps LIKE patterns at 50 bytes)", async () => {
    for (const q of ["a".repeat(49), "ü".repeat(25), "ü".repeat(200), "%".repeat(200)]) {
      const res = await call("listContactGroups", `/v1/contact-groups?q=${encodeURIComponent(q)}`, { token: owner });
      expectStatus(res, 200, q);
      expect(res.body.data).toEqual([]);
    }
  });
});
