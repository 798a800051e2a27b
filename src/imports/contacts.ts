import { nameKey } from "../lib/text-key";
import { CreateContactSchema } from "../schemas/contacts";
import { contactWords, insertContacts, newContactRow } from "../records/contacts";
import {
  RowErrors,
  cellText,
  chunkLead,
  fenceRefused,
  integerCell,
  lookup,
  type ImportResource,
  type RowError,
} from "./context";

const FIELDS = ["first_name", "last_name", "email", "country_code", "iso", "mobile_code", "phone_number"] as const;
const wordsOf = (v: Record<string, string>) =>
  contactWords({ firstName: v.first_name!, lastName: v.last_name!, email: v.email!, phoneNumber: v.phone_number! });
const IGNORED = new Set(["contact_id", "add_date"]);

export interface ContactRow {
  row: number;
  key: string;
  values: Record<(typeof FIELDS)[number], string>;
  dept?: number;
  group?: number | null;
}

type Existing = Record<(typeof FIELDS)[number], string> & {
  id: number;
  email_key: string;
  dept_id: number;
  group_id: number | null;
};

async function placements(db: D1Database, companyId: number) {
  const [groups, depts] = await db.batch<{ id: number; name_key: string; dept_id: number; is_default: number }>([
    db.prepare("SELECT id, name_key, dept_id, is_default FROM contact_groups WHERE company_id = ?").bind(companyId),
    db
      .prepare("SELECT id, 0 AS dept_id, '' AS name_key, is_default FROM departments WHERE " + "company_id = ?")
      .bind(companyId),
  ]);
  return {
    groupsByKey: new Map(groups!.results.map((g) => [g.name_key, g])),
    defaultGroupOf: new Map(groups!.results.filter((g) => g.is_default === 1).map((g) => [g.dept_id, g.id])),
    departments: new Set(depts!.results.map((d) => d.id)),
    defaultDept: depts!.results.find((d) => d.is_default === 1)?.id,
  };
}

async function existingContacts(d1: D1Database, companyId: number, keys: string[]): Promise<Map<string, Existing>> {
  const rows = await lookup<Existing>(
    d1,
    keys,
    `SELECT id, email_key, dept_id, group_id, ${FIELDS.join(", ")} FROM contacts WHERE company_id = ?2 AND email_key IN (SELECT value FROM json_each(?1))`,
    companyId,
  );
  return new Map(rows.map((r) => [r.email_key, r]));
}

export const contactImport: ImportResource<ContactRow> = {
  async validate(_env, job, rows) {
    const place = await placements(job.db.d1, job.companyId);
    const keys = [
      ...new Set(
        rows
          .map((r) => r.cells.get("email"))
          .filter((v): v is string => typeof v === "string")
          .map((v) => nameKey(v.normalize("NFC").trim())),
      ),
    ];
    const existing = await existingContacts(job.db.d1, job.companyId, keys);
    const errors: RowError[] = [];
    const valid: ContactRow[] = [];
    const seen = new Map<string, number>();
    let creates = 0;
    for (const raw of rows) {
      const e = new RowErrors(raw.row);
      if (raw.unreadable) e.add("", "", raw.unreadable);
      for (const column of raw.cells.keys()) {
        if (
          !IGNORED.has(column) &&
          !(FIELDS as readonly string[]).includes(column) &&
          column !== "group_name" &&
          column !== "deptid"
        ) {
          e.add(column, raw.cells.get(column), `"${column.slice(0, 100)}" is no contact column`);
        }
      }
      const given: Record<string, string> = {};
      for (const field of FIELDS) {
        const text = cellText(e, field, raw.cells.get(field));
        if (text !== undefined) given[field] = text;
      }
      if (given.email === undefined) {
        e.add("email", "", "email is required: it is the contact's key");
        errors.push(...e.list);
        continue;
      }
      const key = nameKey(given.email.normalize("NFC").trim());
      const earlier = seen.get(key);
      if (earlier !== undefined) e.add("email", given.email, `email repeats row ${earlier}`);
      seen.set(key, raw.row);
      const was = existing.get(key);
      const merged = {
        ...(was ? Object.fromEntries(FIELDS.map((f) => [f, was[f]]).filter(([, v]) => v !== "")) : {}),
        ...given,
      };
      const checked = CreateContactSchema.safeParse(merged);
      if (!checked.success) {
        for (const issue of checked.error.issues) {
          const column = String(issue.path[0] ?? "");
          e.add(
            column,
            given[column] ?? "",
            column === "first_name" || column === "last_name"
              ? issue.message.replace(/ must not be empty$/, " is required for a new contact")
              : issue.message,
          );
        }
      }
      const out: ContactRow = { row: raw.row, key, values: {} as ContactRow["values"] };
      const groupName = cellText(e, "group_name", raw.cells.get("group_name"));
      const deptid = integerCell(e, "deptid", raw.cells.get("deptid"), 1);
      if (deptid !== undefined && !place.departments.has(deptid))
        e.add("deptid", deptid, `deptid ${deptid} is no department of the company`);
      if (groupName !== undefined) {
        const group = place.groupsByKey.get(nameKey(groupName.normalize("NFC").trim()));
        if (!group) e.add("group_name", groupName, "group_name names no contact group of the company");
        else if (deptid !== undefined && group.dept_id !== deptid)
          e.add("group_name", groupName, `The group is not in deptid ${deptid}`);
        else [out.dept, out.group] = [group.dept_id, group.id];
      } else if (deptid !== undefined) [out.dept, out.group] = [deptid, place.defaultGroupOf.get(deptid) ?? null];
      else if (!was) {
        if (place.defaultDept === undefined) e.add("", "", "The company has no default department");
        else [out.dept, out.group] = [place.defaultDept, place.defaultGroupOf.get(place.defaultDept) ?? null];
      }
      if (!e.ok || !checked.success) {
        errors.push(...e.list);
        continue;
      }
      for (const field of FIELDS)
        out.values[field] = String((checked.data as Partial<Record<string, unknown>>)[field] ?? "");
      if (!was) creates++;
      valid.push(out);
    }
    return { valid, errors, creates };
  },

  async write(_env, job, chunk, fence) {
    const db = job.db.d1;
    const current = await existingContacts(
      db,
      job.companyId,
      chunk.map((r) => r.key),
    );
    const creates: Array<{ row: number; nth: number; contact: Record<string, unknown> }> = [];
    const updates: Array<Record<string, unknown>> = [];
    let skips = 0;
    for (const r of chunk) {
      const was = current.get(r.key);
      if (!was) {
        // Written by the one writer of new contacts (src/records/contacts.ts), as POST writes them.
        const v = r.values;
        const nth = creates.length + 1;
        creates.push({
          row: r.row,
          nth,
          contact: newContactRow({
            companyId: job.companyId,
            deptId: r.dept!,
            groupId: r.group ?? null,
            firstName: v.first_name,
            lastName: v.last_name,
            email: v.email,
            emailKey: r.key,
            countryCode: v.country_code,
            iso: v.iso,
            mobileCode: v.mobile_code,
            phoneNumber: v.phone_number,
            nth,
          }),
        });
        continue;
      }
      const changed =
        FIELDS.some((f) => r.values[f] !== was[f]) ||
        (r.dept !== undefined && (r.dept !== was.dept_id || r.group !== was.group_id));
      if (!changed) skips++;
      else
        updates.push({
          ...r.values,
          words: wordsOf(r.values),
          id: was.id,
          dept: r.dept ?? was.dept_id,
          group: r.dept !== undefined ? r.group : was.group_id,
        });
    }
    const col = (name: string) => `json_extract(j.value, '$.${name}')`;
    const statements = [
      ...chunkLead(
        db,
        job,
        fence.index,
        { creates: creates.map((c) => ({ row: c.row, nth: c.nth })), updates: updates.length, skips },
        fence.now,
      ),
      insertContacts(
        db,
        creates.map((c) => c.contact),
        "room",
        false,
      ),
    ];
    if (updates.length > 0) {
      statements.push(
        db
          .prepare(
            `UPDATE contacts SET ${FIELDS.map((f) => `${f} = ${col(f)}`).join(", ")}, search_words = ${col("words")}, dept_id = ${col("dept")}, group_id = ${col("group")}, updated_at = CURRENT_TIMESTAMP
             FROM json_each(?2) AS j WHERE contacts.id = ${col("id")} AND contacts.company_id = ?1`,
          )
          .bind(job.companyId, JSON.stringify(updates)),
      );
    }
    try {
      await job.db.commit(statements);
    } catch (err) {
      if (fenceRefused(err)) return null;
      throw err;
    }
    return [];
  },
};
