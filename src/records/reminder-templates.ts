// Company reminder templates (docs/languages.md, "Company templates"): one row per company and
// supported language, written through `commit` (audited: scripts/triggers/audit.ts), and what a
// preview renders from.
import { and, asc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { reminderTemplates } from "../db/schema";
import { notFound } from "../lib/errors";
import type { Language } from "../lib/languages";
import { DEFAULT_TIME_ZONE, dateFormatOr, type DateFormat } from "../lib/time";
import type { PutTemplateInput, ReminderTemplateOutput } from "../schemas/reminder-templates";

type Row = typeof reminderTemplates.$inferSelect;

/** `created_at` (ms) as a record timestamp, UTC `YYYY-MM-DD HH:MM:SS`. */
const timestamp = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace("T", " ");

export function templateOutput(row: Row): ReminderTemplateOutput {
  return {
    language: row.language as Language,
    subject: row.subject,
    intro: row.intro,
    footer: row.footer,
    created_at: timestamp(row.createdAt),
    updated_at: timestamp(row.updatedAt),
  };
}

/** Every template of the company (at most one per supported language), by language. */
export async function listTemplates(db: Db, companyId: number): Promise<Row[]> {
  return db
    .select()
    .from(reminderTemplates)
    .where(eq(reminderTemplates.companyId, companyId))
    .orderBy(asc(reminderTemplates.language));
}

export async function getTemplate(db: Db, companyId: number, language: Language): Promise<Row> {
  const [row] = await db
    .select()
    .from(reminderTemplates)
    .where(and(eq(reminderTemplates.companyId, companyId), eq(reminderTemplates.language, language)));
  if (!row) throw notFound("Reminder template");
  return row;
}

/**
 * Creates or replaces the company's template for `language` in one upsert (two concurrent PUTs:
 * the later wins, whole). `created`: there was none before.
 */
export async function putTemplate(
  db: Db,
  companyId: number,
  language: Language,
  input: PutTemplateInput,
): Promise<{ row: Row; created: boolean }> {
  const now = Date.now();
  const texts = { subject: input.subject || null, intro: input.intro || null, footer: input.footer || null };
  const [[row]] = await db.commit([
    db
      .insert(reminderTemplates)
      .values({ companyId, language, ...texts, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: [reminderTemplates.companyId, reminderTemplates.language],
        set: { ...texts, updatedAt: sql`max(${now}, ${reminderTemplates.updatedAt} + 1)` },
      })
      .returning(),
  ]);
  return { row: row!, created: row!.updatedAt === row!.createdAt };
}

export async function deleteTemplate(db: Db, companyId: number, language: Language): Promise<void> {
  const [deleted] = await db.commit([
    db
      .delete(reminderTemplates)
      .where(and(eq(reminderTemplates.companyId, companyId), eq(reminderTemplates.language, language)))
      .returning({ language: reminderTemplates.language }),
  ]);
  if (deleted.length === 0) throw notFound("Reminder template");
}

/** What a preview renders: the company, its saved templates, and the item when one is named. */
export interface PreviewFacts {
  company: { name: string; timeZone: string; dateFormat: DateFormat; language: string | null };
  templates: Row[];
  item: {
    id: number;
    title: string;
    itemType: "exp" | "due" | "apt" | "evt";
    expiryDate: string;
    notes: string | null;
    documentType: string | null;
    firstName: string | null;
    lastName: string | null;
  } | null;
}

/** One batch: the company's settings, its templates, and the item (with its contact) when `itemId` is given. 404 for an item not in the company. */
export async function previewFacts(db: Db, companyId: number, itemId: number | undefined): Promise<PreviewFacts> {
  const d1 = db.d1;
  const [company, templates, item] = await d1.batch<Record<string, unknown>>([
    d1
      .prepare(
        "SELECT name, json_extract(settings, '$.timezone') AS timezone, json_extract(settings, '$.date_format') AS date_format, " +
          "json_extract(settings, '$.language') AS language FROM companies WHERE id = ?",
      )
      .bind(companyId),
    d1
      .prepare(
        "SELECT company_id, language, subject, intro, footer, created_at, updated_at FROM reminder_templates WHERE company_id = ? ORDER BY language",
      )
      .bind(companyId),
    d1
      .prepare(
        `SELECT i.id, i.title, i.item_type, i.expiry_date, i.notes, d.name AS document_type, c.first_name, c.last_name
         FROM items i LEFT JOIN document_types d ON d.id = i.document_type_id LEFT JOIN contacts c ON c.id = i.contact_id AND c.company_id = i.company_id
         WHERE i.id = ? AND i.company_id = ?`,
      )
      .bind(itemId ?? 0, companyId),
  ]);
  const c = company!.results[0] ?? {};
  const i = item!.results[0];
  if (itemId !== undefined && !i) throw notFound("Item");
  return {
    company: {
      name: String(c.name ?? ""),
      timeZone: (c.timezone as string | null) || DEFAULT_TIME_ZONE,
      dateFormat: dateFormatOr(c.date_format),
      language: typeof c.language === "string" ? c.language : null,
    },
    templates: templates!.results.map((r) => ({
      companyId: Number(r.company_id),
      language: String(r.language),
      subject: (r.subject as string | null) ?? null,
      intro: (r.intro as string | null) ?? null,
      footer: (r.footer as string | null) ?? null,
      createdAt: Number(r.created_at),
      updatedAt: Number(r.updated_at),
    })),
    item: i
      ? {
          id: Number(i.id),
          title: String(i.title ?? ""),
          itemType: (i.item_type as "exp" | "due" | "apt" | "evt") ?? "exp",
          expiryDate: String(i.expiry_date),
          notes: (i.notes as string | null) ?? null,
          documentType: (i.document_type as string | null) ?? null,
          firstName: (i.first_name as string | null) ?? null,
          lastName: (i.last_name as string | null) ?? null,
        }
      : null,
  };
}
