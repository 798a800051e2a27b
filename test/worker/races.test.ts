// Invariants under concurrency: D1 has no interactive transactions, so each write must re-check
// what its request read (guarded statements in one batch). Requests are fired together through
// the Worker's fetch; whatever order D1 runs them in, the invariants hold and a lost race is a
// clean 4xx, never a 500 and never a 404 with a committed side effect.
import { beforeAll, describe, expect, it } from "vitest";
import {
  call,
  createContact,
  createDepartment,
  createGroup,
  tokenFor,
  noServerError,
  defaultGroupsOf,
  expectStatus,
  ok,
} from "./helpers";

const ROUNDS = 12;
let owner: string;

beforeAll(async () => {
  owner = await tokenFor("demo-owner");
});

/** A department with a default group and another group; returns their ids. */
async function departmentWithGroups() {
  const deptId = await createDepartment(1);
  const first = await createGroup(owner, { deptid: deptId, isdefault: 1 });
  const second = await createGroup(owner, { deptid: deptId });
  return { deptId, defaultId: first.groupid as number, otherId: second.groupid as number };
}

describe("contact groups: exactly one default per department, under concurrent requests", () => {
  it("DELETE of a group racing PATCH .../default on it: the department keeps exactly one default", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const { deptId, defaultId, otherId } = await departmentWithGroups();
      const [deleted, made] = await Promise.all([
        call("deleteContactGroup", `/v1/contact-groups/${otherId}`, { token: owner }),
        call("setDefaultContactGroup", `/v1/contact-groups/${otherId}/default`, { token: owner }),
      ]);
      noServerError(deleted, made);
      outcomes.add(`${deleted.status}/${made.status}`);
      const defaults = await defaultGroupsOf(deptId);
      expect(defaults).toHaveLength(1);
      if (deleted.status === 200) {
        // The group is gone, so it cannot have become the default: the old one stays.
        expectStatus(made, 404);
        expect(defaults).toEqual([defaultId]);
      } else {
        // It became the default first, so deleting it was refused.
        expectStatus(made, 200);
        expectStatus(deleted, 400);
        expect(defaults).toEqual([otherId]);
      }
    }
    expect([...outcomes].every((o) => o === "200/404" || o === "400/200")).toBe(true);
  });

  it("moving a group to another department racing PATCH .../default on it: one default in each", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await departmentWithGroups();
      const b = await departmentWithGroups();
      const [moved, made] = await Promise.all([
        call("updateContactGroup", `/v1/contact-groups/${a.otherId}`, { token: owner, body: { deptid: b.deptId } }),
        call("setDefaultContactGroup", `/v1/contact-groups/${a.otherId}/default`, { token: owner }),
      ]);
      noServerError(moved, made);
      expect(await defaultGroupsOf(a.deptId)).toHaveLength(1);
      expect(await defaultGroupsOf(b.deptId)).toHaveLength(1);
      const group = ok(await call("getContactGroup", `/v1/contact-groups/${a.otherId}`, { token: owner }));
      // If it is a default now, it is the default of the department it is in.
      const defaultsHere = await defaultGroupsOf(group.body.data.deptid);
      if (group.body.data.isdefault === 1) expect(defaultsHere).toEqual([a.otherId]);
    }
  });

  it("moving a group into a department that has a default, racing PATCH .../default: no 500, one default each", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await departmentWithGroups();
      const b = await departmentWithGroups();
      const results = await Promise.all([
        call("setDefaultContactGroup", `/v1/contact-groups/${a.otherId}/default`, { token: owner }),
        call("updateContactGroup", `/v1/contact-groups/${a.otherId}`, { token: owner, body: { deptid: b.deptId } }),
        call("setDefaultContactGroup", `/v1/contact-groups/${b.otherId}/default`, { token: owner }),
      ]);
      noServerError(...results);
      expect(await defaultGroupsOf(a.deptId)).toHaveLength(1);
      expect(await defaultGroupsOf(b.deptId)).toHaveLength(1);
    }
  });

  it("PATCH {isdefault:1} on the current default racing PATCH .../default on another group: never two defaults, never a 500", async () => {
    for (let round = 0; round < ROUNDS * 2; round++) {
      const { deptId, defaultId, otherId } = await departmentWithGroups();
      const [again, other] = await Promise.all([
        call("updateContactGroup", `/v1/contact-groups/${defaultId}`, { token: owner, body: { isdefault: 1 } }),
        call("setDefaultContactGroup", `/v1/contact-groups/${otherId}/default`, { token: owner }),
      ]);
      noServerError(again, other);
      expectStatus(again, 200);
      expectStatus(other, 200);
      expect(await defaultGroupsOf(deptId)).toHaveLength(1);
    }
  });

  it("many concurrent PATCH .../default calls in one department leave exactly one default", async () => {
    const { deptId } = await departmentWithGroups();
    const groups = await Promise.all(Array.from({ length: 6 }, () => createGroup(owner, { deptid: deptId })));
    const results = await Promise.all(
      groups.map((g) => call("setDefaultContactGroup", `/v1/contact-groups/${g.groupid}/default`, { token: owner })),
    );
    noServerError(...results);
    expect(await defaultGroupsOf(deptId)).toHaveLength(1);
  });
});

describe("contacts: placement stays valid under concurrent group changes", () => {
  it("creating a contact in a group racing the group's deletion: 201 in a live group or a clean 4xx", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { deptId, otherId } = await departmentWithGroups();
      const [createdRes, deleted] = await Promise.all([
        call("createContact", "/v1/contacts", {
          token: owner,
          body: {
            first_name: "Race",
            last_name: "Case",
            email: `race-${crypto.randomUUID()}@example.test`,
            groupid: otherId,
          },
        }),
        call("deleteContactGroup", `/v1/contact-groups/${otherId}`, { token: owner }),
      ]);
      noServerError(createdRes, deleted);
      expectStatus(deleted, 200);
      if (createdRes.status === 201) {
        // Created first, then moved to the department's default group by the delete.
        const contact = ok(
          await call("getContact", `/v1/contacts/${createdRes.body.data.contact_id}`, { token: owner }),
        );
        expect(contact.body.data.deptid).toBe(deptId);
        expect(await defaultGroupsOf(deptId)).toContain(contact.body.data.groupid);
      } else {
        expectStatus(createdRes, 400);
        expect(createdRes.body.msg).toMatch(/groupid/);
      }
    }
  });

  it("moving a contact into a group racing the group's move to another department: the contact ends in its group's department", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await departmentWithGroups();
      const b = await departmentWithGroups();
      const contact = await createContact(owner, { deptid: a.deptId });
      const [movedContact, movedGroup] = await Promise.all([
        call("updateContact", `/v1/contacts/${contact.contact_id}`, { token: owner, body: { groupid: a.otherId } }),
        call("updateContactGroup", `/v1/contact-groups/${a.otherId}`, { token: owner, body: { deptid: b.deptId } }),
      ]);
      noServerError(movedContact, movedGroup);
      const after = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: owner }));
      const group = ok(
        await call("getContactGroup", `/v1/contact-groups/${after.body.data.groupid}`, { token: owner }),
      );
      expect(after.body.data.deptid).toBe(group.body.data.deptid);
    }
  });
});
