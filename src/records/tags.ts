import { and, asc, eq, gt, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { writeBatch } from "../db/guarded";
import { cappedListPage, countMatches } from "../db/pages";
import { MAX_EXACT_SEARCH_TOTAL } from "../lib/search";
import { items, itemTags, tags } from "../db/schema";
import { notFound } from "../lib/errors";
import { nameKey } from "../lib/text-key";
import type { ListTagsInput, TagOutput } from "../schemas/tags";

// Tags are per company and case-insensitively unique (`tags.name_key`, nameKey()). An item's tags
// are its item_tags rows, ordered by `position`. `tags.items_count` is kept by the triggers on
// item_tags insert and delete (docs/triggers.md), which also fire for the rows that
// `ON DELETE CASCADE` removes with their item. A tag that no item uses any more is deleted in the
// same batch that made it unused, so `GET /v1/tags` lists only tags in use.

type TagRow = { id: number; name: string; itemsCount: number };

export function tagOutput(row: TagRow): TagOutput {
  return { tag_id: row.id, name: row.name, items_count: row.itemsCount };
}

/** Item `itemId` is (still) an item of the company: the guard of every write of a PUT. */
const itemExists = (companyId: number, itemId: number) =>
  sql`EXISTS (SELECT 1 FROM items AS i WHERE i.id = ${itemId} AND i.company_id = ${companyId})`;

/** One JSON parameter for a list (D1 binds at most 100 parameters per statement). */
const jsonList = (values: unknown[]) => JSON.stringify(values);

/**
 * The tag names of items `itemIds` in ONE query (the ids travel as one JSON parameter, so any
 * number of them), ordered by item and then by the position the tags were given in. A query
 * builder, so it can go into a `db.batch` with the item's own read. Rows: `{ itemId, name }`;
 * `groupTagNames` turns them into a map.
 */
export function tagsOfItems(db: Db, companyId: number, itemIds: number[]) {
  return db
    .select({ itemId: itemTags.itemId, name: tags.name })
    .from(itemTags)
    .innerJoin(tags, eq(tags.id, itemTags.tagId))
    .where(
      and(
        eq(itemTags.companyId, companyId),
        sql`${itemTags.itemId} IN (SELECT value FROM json_each(${jsonList(itemIds)}))`,
      ),
    )
    .orderBy(asc(itemTags.itemId), asc(itemTags.position), asc(itemTags.tagId));
}

/** `tagsOfItems` rows as item id -> tag names (in order); items without tags are absent. */
export function groupTagNames(rows: Array<{ itemId: number; name: string }>): Map<number, string[]> {
  const byItem = new Map<number, string[]>();
  for (const row of rows) {
    const names = byItem.get(row.itemId);
    if (names) names.push(row.name);
    else byItem.set(row.itemId, [row.name]);
  }
  return byItem;
}

/**
 * Deletes the company's tags that no item uses any more. The company's zero-count tags are few
 * (every write that frees a tag runs this), and the NOT EXISTS keeps a drifted counter from
 * turning into a foreign-key failure.
 */
export function deleteUnusedTags(db: Db, companyId: number) {
  return db
    .delete(tags)
    .where(
      and(
        eq(tags.companyId, companyId),
        eq(tags.itemsCount, 0),
        sql`NOT EXISTS (SELECT 1 FROM item_tags AS it WHERE it.tag_id = ${tags.id})`,
      ),
    );
}

/**
 * For the item delete: statements to put in its batch AFTER the `DELETE FROM items`. The cascade
 * of `item_tags.item_id` removes the item's tag rows, and the count triggers fire for those rows
 * too (test/worker/tags.test.ts checks it), but nothing removes the tags left unused: the second
 * statement does. The first is a safety net that removes the rows itself, only once the item is
 * gone, so a delete refused by its own guard leaves the item's tags alone.
 */
export function deleteItemTags(db: Db, companyId: number, itemId: number) {
  return [
    db
      .delete(itemTags)
      .where(
        and(eq(itemTags.itemId, itemId), eq(itemTags.companyId, companyId), sql`NOT ${itemExists(companyId, itemId)}`),
      ),
    deleteUnusedTags(db, companyId),
  ] as const;
}

/** Collapses names equal under nameKey() to the first spelling, keeping the order. */
export function distinctTagNames(names: readonly string[]): Array<{ name: string; key: string }> {
  const seen = new Set<string>();
  const out: Array<{ name: string; key: string }> = [];
  for (const name of names) {
    const key = nameKey(name);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ name, key });
  }
  return out;
}

/** A field of the JSON object of one tag inside `json_each(...) AS j`. */
const fromJson = (field: "name" | "key" | "position") => sql.raw(`json_extract(j.value, '$.${field}')`);

/**
 * Replaces ALL tags of item `itemId` with `names` (validated, trimmed, NFC) and returns the item's
 * tag names now, in the given order, in each tag's stored spelling. One batch, so one transaction,
 * of a fixed number of statements whatever the number of tags (the list is one JSON parameter):
 *
 *  1. touch the item (`updated_at`): the tag list is part of the item;
 *  2. delete the item's tag rows whose tag is not in the new list;
 *  3. insert the tags the company does not have yet; an existing tag keeps its stored spelling
 *     (the first spelling wins), unless no item uses it (a leftover), which takes the new spelling;
 *  4. insert the item's new tag rows, and set the position of the kept ones;
 *  5. delete the company's tags that no item uses any more;
 *  6. read the item and its tags back.
 *
 * Every write but 5 (which is right in any state) requires the item to be in the company when it
 * runs, so for an item that is missing, in another company or deleted concurrently nothing is
 * written and the answer is 404. Two concurrent PUTs on one item are two transactions: the item
 * ends with exactly one of the two lists.
 */
export async function setItemTags(
  db: Db,
  companyId: number,
  itemId: number,
  names: readonly string[],
): Promise<string[]> {
  const wanted = distinctTagNames(names).map((t, position) => ({ ...t, position }));
  const guard = itemExists(companyId, itemId);
  const entries = jsonList(wanted);
  const keys = jsonList(wanted.map((t) => t.key));

  const statements: BatchItem<"sqlite">[] = [
    db
      .update(items)
      .set({ updatedAt: sql`CURRENT_TIMESTAMP` })
      .where(and(eq(items.id, itemId), eq(items.companyId, companyId))),
    db
      .delete(itemTags)
      .where(
        and(
          eq(itemTags.itemId, itemId),
          eq(itemTags.companyId, companyId),
          sql`${itemTags.tagId} NOT IN (SELECT t.id FROM tags AS t WHERE t.company_id = ${companyId} AND t.name_key IN (SELECT value FROM json_each(${keys})))`,
          guard,
        ),
      ),
  ];
  if (wanted.length > 0) {
    statements.push(
      db
        .insert(tags)
        .select(
          // drizzle types insert-select fields as columns; these are SQL expressions in column order.
          (qb) =>
            qb
              .select({
                id: sql`NULL`,
                companyId: sql`${companyId}`,
                name: fromJson("name"),
                nameKey: fromJson("key"),
                itemsCount: sql`0`,
                createdAt: sql`CURRENT_TIMESTAMP`,
              })
              .from(sql`json_each(${entries}) AS j`)
              // The WHERE also keeps SQLite from reading ON CONFLICT as a join constraint.
              .where(guard)
              .orderBy(sql`j.key`) as never,
        )
        .onConflictDoUpdate({
          target: [tags.companyId, tags.nameKey],
          set: { name: sql`excluded.name` },
          setWhere: sql`${tags.itemsCount} = 0`,
        }),
      db
        .insert(itemTags)
        .select(
          (qb) =>
            qb
              .select({
                itemId: sql`${itemId}`,
                tagId: sql`(SELECT t.id FROM tags AS t WHERE t.company_id = ${companyId} AND t.name_key = ${fromJson("key")})`,
                companyId: sql`${companyId}`,
                position: fromJson("position"),
              })
              .from(sql`json_each(${entries}) AS j`)
              .where(guard)
              .orderBy(sql`j.key`) as never,
        )
        .onConflictDoUpdate({ target: [itemTags.itemId, itemTags.tagId], set: { position: sql`excluded.position` } }),
    );
  }
  const readAt = statements.length;
  statements.push(
    deleteUnusedTags(db, companyId),
    db
      .select({ id: items.id })
      .from(items)
      .where(and(eq(items.id, itemId), eq(items.companyId, companyId))),
    tagsOfItems(db, companyId, [itemId]),
  );
  const results = await writeBatch(db, statements, "item's tag list");
  const item = results[readAt + 1] as Array<{ id: number }>;
  if (item.length === 0) throw notFound("Item");
  return (results[readAt + 2] as Array<{ name: string }>).map((r) => r.name);
}

/** The page and total of a list request, unexecuted (tests read their query plans). */
export function tagListQueries(db: Db, companyId: number, query: ListTagsInput) {
  // Tags in use only: a tag left at 0 by a write that did not clean up is never listed.
  const conditions: SQL[] = [eq(tags.companyId, companyId), gt(tags.itemsCount, 0)];
  // instr() on the folded key: case-insensitive in every script, % and _ are plain characters.
  if (query.q) conditions.push(sql`instr(${tags.nameKey}, ${nameKey(query.q)}) > 0`);
  const where = and(...conditions);
  // With `q` the total stops counting after the cap + 1 matches.
  const cap = query.q ? MAX_EXACT_SEARCH_TOTAL : Number.POSITIVE_INFINITY;
  return {
    page: db
      .select({ id: tags.id, name: tags.name, itemsCount: tags.itemsCount })
      .from(tags)
      .where(where)
      .orderBy(asc(tags.nameKey), asc(tags.id))
      .limit(query.limit)
      .offset(query.offset),
    total: countMatches(db, tags, where, cap),
    cap,
  };
}

export async function listTags(db: Db, companyId: number, query: ListTagsInput) {
  return cappedListPage(db, query, tagListQueries(db, companyId, query));
}
