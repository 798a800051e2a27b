import { and, asc, count, desc, eq, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { MAX_ATTEMPTS, lostRace, writeBatch } from "../db/guarded";
import { channelEndpoints, companies, contactGroups, contacts, items, reminderSequences } from "../db/schema";
import type { ChannelType } from "../channels/urls";
import { echo } from "../lib/echo";
import { badRequest, conflict, notFound } from "../lib/errors";
import { toFlag } from "../lib/schemas";
import { nameKey } from "../lib/text-key";
import { parseSteps, stepOutput, type Step } from "../company-clock/sequence-steps";
import {
  MAX_SEQUENCES,
  type CreateSequenceInput,
  type ReminderSequenceOutput,
  type UpdateSequenceInput,
} from "../schemas/reminder-sequences";

const sequenceColumns = {
  id: reminderSequences.id,
  name: reminderSequences.name,
  isDefault: reminderSequences.isDefault,
  steps: reminderSequences.steps,
};

export type SequenceRow = { id: number; name: string; isDefault: number; steps: string };

export function sequenceOutput(row: SequenceRow): ReminderSequenceOutput {
  return {
    seqid: row.id,
    name: row.name,
    isdefault: toFlag(row.isDefault),
    reminders: parseSteps(row.steps).map(stepOutput),
  };
}

/**
 * Steps as stored in reminder_sequences.steps: normalised (unit singular, hour filled in), in order;
 * a recipient and an acknowledgement rule only when the step has them.
 */
export const stepsJson = (steps: Step[], channelTypes: Map<number, ChannelType> = new Map()) =>
  JSON.stringify(
    steps.map(({ period, unit, type, hour, contact_id, group_id, channel_id, always, unless_acknowledged }) => ({
      period,
      unit,
      type,
      hour,
      ...(group_id ? { group_id } : contact_id ? { contact_id } : {}),
      ...(channel_id && channelTypes.has(channel_id) ? { channel_id, channel_type: channelTypes.get(channel_id) } : {}),
      ...(always ? { always: true } : unless_acknowledged ? { unless_acknowledged: true } : {}),
    })),
  );

const REF_NAMES: Record<string, string> = {
  group_id: "contact group",
  contact_id: "contact",
  channel_id: "channel",
};

/**
 * 400 naming the first step whose contact, contact group or channel is not the company's
 * (`reminders.2.group_id`): one read for every step. The channels' types, for the stored steps. A
 * group or channel deleted later leaves its steps without recipients (their deliveries say so when they fire).
 */
async function checkStepRecipients(db: Db, companyId: number, steps: Step[]): Promise<Map<number, ChannelType>> {
  const refs = steps.flatMap((step, i) => [
    ...(step.group_id
      ? [{ i, kind: "group_id", id: step.group_id }]
      : step.contact_id
        ? [{ i, kind: "contact_id", id: step.contact_id }]
        : []),
    ...(step.channel_id ? [{ i, kind: "channel_id", id: step.channel_id }] : []),
  ]);
  if (refs.length === 0) return new Map();
  const found = await db.all<{ i: number; kind: string; id: number; channel_type: string | null; present: number }>(sql`
    SELECT r.value ->> '$.i' AS i, r.value ->> '$.kind' AS kind, r.value ->> '$.id' AS id, e.type AS channel_type,
      CASE r.value ->> '$.kind'
        WHEN 'group_id' THEN EXISTS (SELECT 1 FROM ${contactGroups} AS g WHERE g.id = r.value ->> '$.id' AND g.company_id = ${companyId})
        WHEN 'channel_id' THEN e.id IS NOT NULL
        ELSE EXISTS (SELECT 1 FROM ${contacts} AS c WHERE c.id = r.value ->> '$.id' AND c.company_id = ${companyId}) END AS present
    FROM json_each(${JSON.stringify(refs)}) AS r
    LEFT JOIN ${channelEndpoints} AS e ON r.value ->> '$.kind' = 'channel_id' AND e.id = r.value ->> '$.id' AND e.company_id = ${companyId}
    ORDER BY r.key`);
  const first = found.find((r) => r.present !== 1);
  if (first)
    throw badRequest(
      `reminders.${first.i}.${first.kind}: ${REF_NAMES[first.kind]} ${first.id} is not a ${REF_NAMES[first.kind]} of the company`,
    );
  return new Map(found.flatMap((r) => (r.channel_type ? [[Number(r.id), r.channel_type as ChannelType]] : [])));
}

// ---- for other modules (items): conditions that go inside their own statements ----

/**
 * Scalar subquery: the id of the company's default sequence (NULL when it has none). For an
 * item's `seq_id` when the request names no sequence, evaluated inside the INSERT itself.
 */
export const defaultSequenceId = (companyId: number | SQL): SQL =>
  sql`(SELECT s.id FROM reminder_sequences AS s WHERE s.company_id = ${companyId} AND s.is_default = 1)`;

/** Condition: sequence `seqId` exists in the company (aliased, so it nests in any statement). */
export const sequenceInCompany = (companyId: number | SQL, seqId: number | SQL): SQL =>
  sql`EXISTS (SELECT 1 FROM reminder_sequences AS s WHERE s.id = ${seqId} AND s.company_id = ${companyId})`;

// ---- this module ----

const inCompany = (companyId: number, seqId: number) =>
  and(eq(reminderSequences.id, seqId), eq(reminderSequences.companyId, companyId));

const duplicateName = (name: string) =>
  conflict(`A reminder sequence named "${echo(name)}" already exists in this company`);

/** One batch: a duplicate name is 409; a second default or a company gone meanwhile is a lost race. */
const writeSequence = (db: Db, name: string | undefined, statements: BatchItem<"sqlite">[]) =>
  writeBatch(db, statements, "reminder sequence", {
    marker: "reminder_sequences.name_key",
    error: () => duplicateName(name ?? ""),
  });
const lostSequenceRace = () => lostRace("reminder sequence");

const limitReached = () =>
  badRequest(`Reminder sequence limit reached: a company may have at most ${MAX_SEQUENCES} reminder sequences`);

/** All the company's sequences (at most MAX_SEQUENCES): the default first, then by seqid. */
export async function listSequences(db: Db, companyId: number) {
  const rows = await db
    .select(sequenceColumns)
    .from(reminderSequences)
    .where(eq(reminderSequences.companyId, companyId))
    .orderBy(desc(reminderSequences.isDefault), asc(reminderSequences.id));
  return { rows, meta: { total: rows.length, max_allowed: MAX_SEQUENCES } };
}

export async function getSequence(db: Db, companyId: number, seqId: number): Promise<SequenceRow> {
  const row = await db.select(sequenceColumns).from(reminderSequences).where(inCompany(companyId, seqId)).get();
  if (!row) throw notFound("Reminder sequence");
  return row;
}

/**
 * Inserts a sequence only while the company has fewer than MAX_SEQUENCES (counted inside the
 * INSERT, so concurrent creates cannot overshoot). `isdefault: 1` unsets the current default in the
 * same batch, under the same guard; otherwise the new sequence becomes the default only when the
 * company has none (a company made outside the API), so a company with sequences always has one.
 */
export async function createSequence(db: Db, companyId: number, input: CreateSequenceInput): Promise<SequenceRow> {
  const name = input.name;
  const key = nameKey(name);
  const steps = stepsJson(input.reminders, await checkStepRecipients(db, companyId, input.reminders));
  const underLimit = sql`(SELECT count(*) FROM reminder_sequences AS q WHERE q.company_id = ${companyId}) < ${MAX_SEQUENCES}`;
  const isDefault =
    input.isdefault === 1
      ? sql`1`
      : sql`NOT EXISTS (SELECT 1 FROM reminder_sequences AS d WHERE d.company_id = ${companyId} AND d.is_default = 1)`;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const statements: BatchItem<"sqlite">[] = [];
    if (input.isdefault === 1) {
      statements.push(
        db
          .update(reminderSequences)
          .set({ isDefault: 0, updatedAt: sql`CURRENT_TIMESTAMP` })
          .where(and(eq(reminderSequences.companyId, companyId), eq(reminderSequences.isDefault, 1), underLimit)),
      );
    }
    const insertAt = statements.length;
    statements.push(
      db
        .insert(reminderSequences)
        .select(
          (qb) =>
            qb
              .select({
                id: sql`NULL`,
                companyId: sql`${companyId}`,
                name: sql`${name}`,
                nameKey: sql`${key}`,
                isDefault,
                steps: sql`${steps}`,
                createdAt: sql`CURRENT_TIMESTAMP`,
                updatedAt: sql`CURRENT_TIMESTAMP`,
              })
              .from(companies)
              .where(and(eq(companies.id, companyId), underLimit)) as never,
        )
        .returning({ id: reminderSequences.id }),
    );
    const results = await writeSequence(db, name, statements);
    const [inserted] = results[insertAt] as Array<{ id: number }>;
    if (inserted) return getSequence(db, companyId, inserted.id);
    const used = await db
      .select({ n: count() })
      .from(reminderSequences)
      .where(eq(reminderSequences.companyId, companyId))
      .get();
    if ((used?.n ?? 0) >= MAX_SEQUENCES) throw limitReached();
    // Under the limit again (a sequence was deleted meanwhile): try once more.
  }
  throw lostSequenceRace();
}

/**
 * Renames, replaces the steps and/or makes the sequence the default, in one batch. Every statement
 * requires the sequence to be still in the company with the default flag it was read with, so a
 * concurrent default switch makes this request read again (and answer from the new state) instead
 * of writing over it. Making it the default unsets the previous default first, in the same batch.
 */
export async function updateSequence(
  db: Db,
  companyId: number,
  seqId: number,
  input: UpdateSequenceInput,
): Promise<SequenceRow> {
  const channelTypes =
    input.reminders !== undefined ? await checkStepRecipients(db, companyId, input.reminders) : undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await getSequence(db, companyId, seqId);
    if (current.isDefault === 1 && input.isdefault === 0) {
      throw badRequest(
        "A company keeps exactly one default reminder sequence: make another sequence " + "the default instead",
      );
    }
    const changes: Partial<typeof reminderSequences.$inferInsert> = {};
    if (input.name !== undefined) {
      changes.name = input.name;
      changes.nameKey = nameKey(input.name);
    }
    if (input.reminders !== undefined) changes.steps = stepsJson(input.reminders, channelTypes);
    const makeDefault = input.isdefault === 1 && current.isDefault === 0;
    if (makeDefault) changes.isDefault = 1;
    // isdefault that is already so, alone: nothing to write.
    if (Object.keys(changes).length === 0) return current;

    const asRead = sql`EXISTS (SELECT 1 FROM reminder_sequences AS s WHERE s.id = ${seqId} AND s.company_id = ${companyId} AND s.is_default = ${current.isDefault})`;
    const statements: BatchItem<"sqlite">[] = [];
    if (makeDefault) {
      statements.push(
        db
          .update(reminderSequences)
          .set({ isDefault: 0, updatedAt: sql`CURRENT_TIMESTAMP` })
          .where(
            and(
              eq(reminderSequences.companyId, companyId),
              eq(reminderSequences.isDefault, 1),
              ne(reminderSequences.id, seqId),
              asRead,
            ),
          ),
      );
    }
    const check = statements.length;
    statements.push(
      db
        .update(reminderSequences)
        .set({ ...changes, updatedAt: sql`CURRENT_TIMESTAMP` })
        .where(and(inCompany(companyId, seqId), eq(reminderSequences.isDefault, current.isDefault)))
        .returning({ id: reminderSequences.id }),
    );
    const results = await writeSequence(db, input.name, statements);
    if ((results[check] as unknown[]).length > 0) return getSequence(db, companyId, seqId);
    // Deleted, or made (or unmade) the default meanwhile: read again.
  }
  throw lostSequenceRace();
}

/**
 * Deletes a sequence that is not the default; in the same batch, the items that use it move to the
 * company's default sequence. Both statements require "still in the company and not the default".
 * Returns how many items moved. Reminders already queued for those items are left as they are.
 */
export async function deleteSequence(db: Db, companyId: number, seqId: number): Promise<number> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await getSequence(db, companyId, seqId);
    if (current.isDefault === 1) {
      throw badRequest("The default reminder sequence cannot be deleted: make another sequence the default first");
    }
    const deletable = sql`EXISTS (SELECT 1 FROM reminder_sequences AS s WHERE s.id = ${seqId} AND s.company_id = ${companyId} AND s.is_default = 0)`;
    const [moved, deleted] = await writeSequence(db, undefined, [
      // items_company_sequence_idx (company_id, seq_id).
      db
        .update(items)
        .set({ seqId: defaultSequenceId(companyId), updatedAt: sql`CURRENT_TIMESTAMP` })
        .where(and(eq(items.companyId, companyId), eq(items.seqId, seqId), deletable))
        // Counted from RETURNING: D1's meta.changes also counts the rows triggers change (row versions).
        .returning({ id: items.id }),
      db
        .delete(reminderSequences)
        .where(and(inCompany(companyId, seqId), eq(reminderSequences.isDefault, 0)))
        .returning({ id: reminderSequences.id }),
    ]);
    if ((deleted as unknown[]).length > 0) return (moved as unknown[]).length;
  }
  throw lostSequenceRace();
}
