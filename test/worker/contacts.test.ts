import { beforeAll, describe, expect, it } from "vitest";
import {
  CONTACT_FIELDS,
  TIMESTAMP,
  call,
  contactCounts,
  createContact,
  createDepartment,
  createGroup,
  env,
  expectShapeA,
  expectShapeB,
  demoTokens,
  tokenFor,
  uniqueEmail,
  uniqueWord,
  expectStatus,
  ok,
} from "./helpers";

// Contacts: create, read, update, delete, validation and tenancy. Lists and search are in
// contacts-list.test.ts, the contacts_limit in contacts-limit.test.ts.

let owner: string, member: string, other: string, readonly: string;

beforeAll(async () => {
  ({ owner, member, other, readonly } = await demoTokens());
});

async function rawContact(id: number) {
  return env.DB.prepare("SELECT * FROM contacts WHERE id = ?").bind(id).first<Record<string, unknown>>();
}

describe("POST /v1/contacts", () => {
  it("creates a contact: 201 with msg and the contact in output field names", async () => {
    const email = uniqueEmail();
    const res = await call("createContact", "/v1/contacts", {
      token: owner,
      body: {
        first_name: "Ada",
        last_name: "Lovelace",
        email,
        country_code: "+44",
        iso: "GB",
        mobile_code: "+44",
        phone_number: "7700900123",
      },
    });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    expect(res.body.msg.length).toBeGreaterThan(0);
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(CONTACT_FIELDS);
    expect(data).toMatchObject({
      firstname: "Ada",
      lastname: "Lovelace",
      email,
      deptid: 1,
      country_code: "+44",
      iso: "GB",
      mobile_code: "+44",
      phone_number: "7700900123",
    });
    expect(Number.isInteger(data.contact_id)).toBe(true);
    expect(data.contact_id).toBeGreaterThan(0);
    expect(Number.isInteger(data.groupid)).toBe(true);
    expect(data.add_date).toMatch(TIMESTAMP);
    // Input names are not echoed back.
    expect(data).not.toHaveProperty("first_name");
    expect(data).not.toHaveProperty("last_name");
  });

  it("defaults optional text fields to empty strings", async () => {
    const data = await createContact(owner, { first_name: "Min", last_name: "Imal" });
    expect(data).toMatchObject({ country_code: "", iso: "", mobile_code: "", phone_number: "" });
    expect(typeof data.groupid).toBe("number");
  });

  it("round-trips through GET with the same record", async () => {
    const data = await createContact(owner, { first_name: "Grace", last_name: "Hopper" });
    const res = await call("getContact", `/v1/contacts/${data.contact_id}`, { token: owner });
    expectStatus(res, 200);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toEqual(data);
  });

  for (const field of ["first_name", "last_name", "email"] as const) {
    it(`400 naming ${field} when it is missing`, async () => {
      const body: Record<string, unknown> = { first_name: "A", last_name: "B", email: uniqueEmail() };
      delete body[field];
      const res = await call("createContact", "/v1/contacts", { token: owner, body });
      expectShapeB(res, 400, new RegExp(field));
    });

    it(`400 naming ${field} when it is empty`, async () => {
      const body: Record<string, unknown> = { first_name: "A", last_name: "B", email: uniqueEmail(), [field]: "  " };
      const res = await call("createContact", "/v1/contacts", { token: owner, body });
      expectShapeB(res, 400, new RegExp(field));
    });
  }

  it("400 naming every missing required field at once", async () => {
    const res = await call("createContact", "/v1/contacts", { token: owner, body: {} });
    expectShapeB(res, 400, /first_name/);
    expect(res.body.msg).toMatch(/last_name/);
    expect(res.body.msg).toMatch(/email/);
  });

  for (const email of ["not-an-email", "a@", "@example.com", "a b@example.com"]) {
    it(`400 for the invalid email ${JSON.stringify(email)}`, async () => {
      const res = await call("createContact", "/v1/contacts", {
        token: owner,
        body: { first_name: "A", last_name: "B", email },
      });
      expectShapeB(res, 400, /email/);
    });
  }

  it("400 for output field names used as input (firstname/lastname)", async () => {
    const res = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { firstname: "A", lastname: "B", email: uniqueEmail() },
    });
    expectShapeB(res, 400, /first_name|firstname/);
  });

  it("400 when country_code comes without iso, or iso without country_code", async () => {
    const onlyCode = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B", email: uniqueEmail(), country_code: "+44" },
    });
    expectShapeB(onlyCode, 400, /iso/);
    const onlyIso = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B", email: uniqueEmail(), iso: "GB" },
    });
    expectShapeB(onlyIso, 400, /country_code/);
  });

  it("400 for a non-integer deptid or groupid", async () => {
    for (const extra of [{ deptid: "1" }, { deptid: 1.5 }, { deptid: 0 }, { groupid: "x" }, { groupid: -1 }]) {
      const res = await call("createContact", "/v1/contacts", {
        token: owner,
        body: { first_name: "A", last_name: "B", email: uniqueEmail(), ...extra },
      });
      expectShapeB(res, 400, /deptid|groupid/);
    }
  });

  it("400 for a deptid that does not exist, including another company's department", async () => {
    for (const deptid of [999999, 2]) {
      const email = uniqueEmail();
      const res = await call("createContact", "/v1/contacts", {
        token: owner,
        body: { first_name: "A", last_name: "B", email, deptid },
      });
      expectShapeB(res, 400, /deptid/);
      const row = await env.DB.prepare("SELECT id FROM contacts WHERE email = ?").bind(email).first();
      expect(row).toBeNull();
    }
  });

  it("400 for a groupid that does not exist, including another company's group", async () => {
    const foreign = await createGroup(other);
    for (const groupid of [999999, foreign.groupid]) {
      const res = await call("createContact", "/v1/contacts", {
        token: owner,
        body: { first_name: "A", last_name: "B", email: uniqueEmail(), groupid },
      });
      expectShapeB(res, 400, /groupid/);
    }
  });

  it("without groupid joins the default group of its department", async () => {
    const dept = await createDepartment();
    const plain = await createGroup(owner, { deptid: dept });
    const def = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const data = await createContact(owner, { deptid: dept });
    expect(data.deptid).toBe(dept);
    expect(data.groupid).toBe(def.groupid);
    expect(data.groupid).not.toBe(plain.groupid);
  });

  it("without groupid gets groupid 0 when its department has no default group", async () => {
    const dept = await createDepartment();
    await createGroup(owner, { deptid: dept }); // a group, but not the default
    const data = await createContact(owner, { deptid: dept });
    expect(data.deptid).toBe(dept);
    expect(data.groupid).toBe(0);
    expect((await rawContact(data.contact_id))?.group_id).toBeNull();
  });

  it("with groupid 0 joins no group even when the department has a default group", async () => {
    const dept = await createDepartment();
    await createGroup(owner, { deptid: dept, isdefault: 1 });
    const data = await createContact(owner, { deptid: dept, groupid: 0 });
    expect(data).toMatchObject({ deptid: dept, groupid: 0 });
  });

  it("without deptid goes to the group's department", async () => {
    const dept = await createDepartment();
    const group = await createGroup(owner, { deptid: dept });
    const data = await createContact(owner, { groupid: group.groupid });
    expect(data).toMatchObject({ deptid: dept, groupid: group.groupid });
  });

  it("without deptid nor groupid goes to the company's default department (and its default group)", async () => {
    const data = await createContact(owner);
    expect(data.deptid).toBe(1);
    const def = await env.DB.prepare("SELECT id FROM contact_groups WHERE dept_id = 1 AND is_default = 1").first<{
      id: number;
    }>();
    expect(data.groupid).toBe(def?.id ?? 0);
  });

  it("accepts groupid together with its own deptid", async () => {
    const dept = await createDepartment();
    const group = await createGroup(owner, { deptid: dept });
    const data = await createContact(owner, { deptid: dept, groupid: group.groupid });
    expect(data).toMatchObject({ deptid: dept, groupid: group.groupid });
  });

  it("400 when groupid belongs to another department than deptid", async () => {
    const dept = await createDepartment();
    const group = await createGroup(owner, { deptid: dept });
    const res = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B", email: uniqueEmail(), deptid: 1, groupid: group.groupid },
    });
    expectShapeB(res, 400, /groupid/);
  });

  it("409 for a duplicate email in the same company, case-insensitively", async () => {
    const word = uniqueWord("dup");
    await createContact(owner, { email: `${word}@example.test` });
    const before = await contactCounts(1);
    for (const email of [`${word}@example.test`, `${word.toUpperCase()}@Example.TEST`]) {
      const res = await call("createContact", "/v1/contacts", {
        token: member,
        body: { first_name: "A", last_name: "B", email },
      });
      expectShapeB(res, 409, /email/i);
    }
    expect(await contactCounts(1)).toEqual(before);
  });

  it("409 for a duplicate email with surrounding whitespace", async () => {
    const email = uniqueEmail();
    await createContact(owner, { email });
    const res = await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B", email: `  ${email} ` },
    });
    expectShapeB(res, 409, /email/i);
  });

  it("allows the same email in another company", async () => {
    const email = uniqueEmail();
    const mine = await createContact(owner, { email });
    const theirs = await createContact(other, { email });
    expect(theirs.email).toBe(email);
    expect(theirs.contact_id).not.toBe(mine.contact_id);
    expect(theirs.deptid).toBe(2);
  });

  it("keeps companies.contacts_used in step with creates", async () => {
    const before = await contactCounts(1);
    expect(before.used).toBe(before.actual);
    await createContact(owner);
    await createContact(owner);
    const after = await contactCounts(1);
    expect(after.used).toBe(before.used + 2);
    expect(after.used).toBe(after.actual);
  });

  it("415 for a non-JSON body and 400 for malformed JSON", async () => {
    const form = await call("createContact", "/v1/contacts", {
      token: owner,
      rawBody: "first_name=A",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expectShapeB(form, 415);
    const broken = await call("createContact", "/v1/contacts", {
      token: owner,
      rawBody: "{not json",
      headers: { "Content-Type": "application/json" },
    });
    expectShapeB(broken, 400);
  });
});

describe("GET /v1/contacts/{contact_id}", () => {
  it("404 Shape B for an unknown id", async () => {
    const res = await call("getContact", "/v1/contacts/999999999", { token: owner });
    expectShapeB(res, 404, /not found/i);
  });

  it("400 for an id that is not a positive integer", async () => {
    for (const id of ["abc", "0", "-1", "1.5"]) {
      const res = await call("getContact", `/v1/contacts/${id}`, { token: owner });
      expectShapeB(res, 400, /contact_id/);
    }
  });

  it("404 for another company's contact (tenancy), both ways", async () => {
    const mine = await createContact(owner);
    const theirs = await createContact(other);
    expectShapeB(await call("getContact", `/v1/contacts/${mine.contact_id}`, { token: other }), 404);
    expectShapeB(await call("getContact", `/v1/contacts/${theirs.contact_id}`, { token: owner }), 404);
    expectStatus(await call("getContact", `/v1/contacts/${theirs.contact_id}`, { token: other }), 200);
  });

  it("is readable with contacts:read only", async () => {
    const mine = await createContact(owner);
    const res = await call("getContact", `/v1/contacts/${mine.contact_id}`, { token: readonly });
    expectStatus(res, 200);
    expect(res.body.data.contact_id).toBe(mine.contact_id);
  });

  it("401 without a token", async () => {
    const res = await call("getContact", "/v1/contacts/1");
    expectShapeA(res, 401, "invalid_token");
  });
});

describe("PATCH /v1/contacts/{contact_id}", () => {
  it("400 'No updatable fields provided' for an empty body", async () => {
    const c = await createContact(owner);
    const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: {} });
    expectShapeB(res, 400, /No updatable fields provided/);
  });

  it("400 for unknown fields (including output names)", async () => {
    const c = await createContact(owner);
    const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { firstname: "X" } });
    expectShapeB(res, 400, /firstname/);
  });

  it("updates each field on its own and leaves the others as they were", async () => {
    const c = await createContact(owner, {
      first_name: "Old",
      last_name: "Name",
      mobile_code: "+1",
      phone_number: "5550100",
    });
    const newEmail = uniqueEmail();
    const steps: Array<[Record<string, unknown>, Record<string, unknown>]> = [
      [{ first_name: "New" }, { firstname: "New" }],
      [{ last_name: "Surname" }, { lastname: "Surname" }],
      [{ email: newEmail }, { email: newEmail }],
      [{ mobile_code: "+49" }, { mobile_code: "+49" }],
      [{ phone_number: "1512345678" }, { phone_number: "1512345678" }],
    ];
    let expected = { ...c };
    for (const [body, change] of steps) {
      const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body });
      expectStatus(res, 200, JSON.stringify(res.body));
      expect(res.body.success).toBe(true);
      expect(typeof res.body.msg).toBe("string");
      expected = { ...expected, ...change };
      expect(res.body.data).toEqual(expected);
      const got = ok(await call("getContact", `/v1/contacts/${c.contact_id}`, { token: owner }));
      expect(got.body.data).toEqual(expected);
    }
  });

  it("400 for an empty first_name, last_name or an invalid email", async () => {
    const c = await createContact(owner);
    for (const body of [{ first_name: "" }, { last_name: " " }, { email: "nope" }]) {
      const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body });
      expectShapeB(res, 400, new RegExp(Object.keys(body)[0]!));
    }
    const got = ok(await call("getContact", `/v1/contacts/${c.contact_id}`, { token: owner }));
    expect(got.body.data).toEqual(c);
  });

  it("countryid GB sets iso GB and country_code +44 (case-insensitive input)", async () => {
    const c = await createContact(owner);
    const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, {
      token: owner,
      body: { countryid: "GB" },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toMatchObject({ iso: "GB", country_code: "+44" });
    const us = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { countryid: "us" } });
    expectStatus(us, 200, JSON.stringify(us.body));
    expect(us.body.data).toMatchObject({ iso: "US", country_code: "+1" });
  });

  it("400 for an invalid countryid", async () => {
    const c = await createContact(owner);
    for (const countryid of ["XX", "GBR", "", "1"]) {
      const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { countryid } });
      expectShapeB(res, 400, /countryid/);
    }
  });

  it("400 for countryid together with country_code (or iso)", async () => {
    const c = await createContact(owner);
    for (const body of [
      { countryid: "GB", country_code: "+44" },
      { countryid: "GB", iso: "GB" },
      { countryid: "GB", country_code: "+44", iso: "GB" },
    ]) {
      const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body });
      expectShapeB(res, 400, /countryid/);
    }
  });

  it("country_code and iso may be patched together, not alone", async () => {
    const c = await createContact(owner);
    expectShapeB(
      await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { country_code: "+33" } }),
      400,
      /iso/,
    );
    expectShapeB(
      await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { iso: "FR" } }),
      400,
      /country_code/,
    );
    const both = await call("updateContact", `/v1/contacts/${c.contact_id}`, {
      token: owner,
      body: { country_code: "+33", iso: "FR" },
    });
    expectStatus(both, 200, JSON.stringify(both.body));
    expect(both.body.data).toMatchObject({ country_code: "+33", iso: "FR" });
  });

  it("groupid moves the contact into the group and the group's department", async () => {
    const c = await createContact(owner, { deptid: 1, groupid: 0 });
    const dept = await createDepartment();
    const group = await createGroup(owner, { deptid: dept });
    const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, {
      token: owner,
      body: { groupid: group.groupid },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toMatchObject({ groupid: group.groupid, deptid: dept });
    const g = ok(await call("getContactGroup", `/v1/contact-groups/${group.groupid}`, { token: owner }));
    expect(g.body.data.contacts_count).toBe(1);
  });

  it("groupid 0 removes the contact from its group and keeps its department", async () => {
    const dept = await createDepartment();
    const group = await createGroup(owner, { deptid: dept });
    const c = await createContact(owner, { groupid: group.groupid });
    const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { groupid: 0 } });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toMatchObject({ groupid: 0, deptid: dept });
    expect((await rawContact(c.contact_id))?.group_id).toBeNull();
  });

  it("400 for an unknown groupid or another company's group, and the contact is unchanged", async () => {
    const c = await createContact(owner);
    const foreign = await createGroup(other);
    for (const groupid of [999999, foreign.groupid]) {
      const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, {
        token: owner,
        body: { groupid, first_name: "Changed" },
      });
      expectShapeB(res, 400, /groupid/);
    }
    expect(ok(await call("getContact", `/v1/contacts/${c.contact_id}`, { token: owner })).body.data).toEqual(c);
  });

  it("409 when the new email belongs to another contact of the company (case-insensitive)", async () => {
    const a = await createContact(owner);
    const b = await createContact(owner);
    for (const email of [a.email, a.email.toUpperCase()]) {
      const res = await call("updateContact", `/v1/contacts/${b.contact_id}`, { token: owner, body: { email } });
      expectShapeB(res, 409, /email/i);
    }
    expect(ok(await call("getContact", `/v1/contacts/${b.contact_id}`, { token: owner })).body.data.email).toBe(
      b.email,
    );
  });

  it("allows changing only the case of its own email, and taking an email used in another company", async () => {
    const c = await createContact(owner);
    const upper = c.email.toUpperCase();
    const res = await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { email: upper } });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data.email).toBe(upper);
    const theirs = await createContact(other);
    const taken = await call("updateContact", `/v1/contacts/${c.contact_id}`, {
      token: owner,
      body: { email: theirs.email },
    });
    expectStatus(taken, 200, JSON.stringify(taken.body));
  });

  it("404 for an unknown id", async () => {
    expectShapeB(
      await call("updateContact", "/v1/contacts/999999999", { token: owner, body: { first_name: "X" } }),
      404,
    );
  });

  it("404 for another company's contact, and the record is untouched", async () => {
    const mine = await createContact(owner);
    const before = await rawContact(mine.contact_id);
    for (const body of [{ first_name: "Hacked" }, { email: uniqueEmail() }, { countryid: "DE" }, { groupid: 0 }]) {
      expectShapeB(await call("updateContact", `/v1/contacts/${mine.contact_id}`, { token: other, body }), 404);
    }
    expect(await rawContact(mine.contact_id)).toEqual(before);
  });
});

describe("DELETE /v1/contacts/{contact_id}", () => {
  it("200 with msg, then GET 404, and contacts_used drops by one", async () => {
    const c = await createContact(owner);
    const before = await contactCounts(1);
    const res = await call("deleteContact", `/v1/contacts/${c.contact_id}`, { token: owner });
    expectStatus(res, 200);
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    expectShapeB(await call("getContact", `/v1/contacts/${c.contact_id}`, { token: owner }), 404);
    const after = await contactCounts(1);
    expect(after.used).toBe(before.used - 1);
    expect(after.used).toBe(after.actual);
  });

  it("404 when deleting twice or an unknown id", async () => {
    const c = await createContact(owner);
    expectStatus(await call("deleteContact", `/v1/contacts/${c.contact_id}`, { token: owner }), 200);
    expectShapeB(await call("deleteContact", `/v1/contacts/${c.contact_id}`, { token: owner }), 404);
    expectShapeB(await call("deleteContact", "/v1/contacts/999999999", { token: owner }), 404);
  });

  it("frees the email for a new contact", async () => {
    const c = await createContact(owner);
    await call("deleteContact", `/v1/contacts/${c.contact_id}`, { token: owner });
    const again = await createContact(owner, { email: c.email });
    expect(again.email).toBe(c.email);
    // AUTOINCREMENT: the deleted contact's id is never handed out again, even though it was the highest.
    expect(again.contact_id).toBeGreaterThan(c.contact_id);
  });

  it("404 for another company's contact, and the record is untouched", async () => {
    const mine = await createContact(owner);
    const before = await rawContact(mine.contact_id);
    const usedBefore = await contactCounts(1);
    expectShapeB(await call("deleteContact", `/v1/contacts/${mine.contact_id}`, { token: other }), 404);
    expect(await rawContact(mine.contact_id)).toEqual(before);
    expect(await contactCounts(1)).toEqual(usedBefore);
    expectStatus(await call("getContact", `/v1/contacts/${mine.contact_id}`, { token: owner }), 200);
  });
});

describe("contact scopes", () => {
  it("contacts:read may list and get but gets 403 insufficient_scope on writes", async () => {
    const c = await createContact(owner);
    expectStatus(await call("listContacts", "/v1/contacts", { token: readonly }), 200);
    const writes = [
      call("createContact", "/v1/contacts", {
        token: readonly,
        body: { first_name: "A", last_name: "B", email: uniqueEmail() },
      }),
      call("updateContact", `/v1/contacts/${c.contact_id}`, { token: readonly, body: { first_name: "X" } }),
      call("deleteContact", `/v1/contacts/${c.contact_id}`, { token: readonly }),
    ];
    for (const res of await Promise.all(writes)) {
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("contacts:write");
    }
    expect(ok(await call("getContact", `/v1/contacts/${c.contact_id}`, { token: owner })).body.data).toEqual(c);
  });

  it("a token narrowed to items:read gets 403 with required_scope contacts:read on reads", async () => {
    const token = await tokenFor("demo-readonly", "items:read");
    const res = await call("listContacts", "/v1/contacts", { token });
    expectShapeA(res, 403, "insufficient_scope");
    expect(res.body.required_scope).toBe("contacts:read");
  });
});
