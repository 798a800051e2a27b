// Company-scoped full-text search (docs/search.md). Items, contacts and tasks carry
// `search_words`: a JSON array of their words, tokenized and folded here exactly as SQLite's
// `unicode61 remove_diacritics 2` tokenizer would (the table is generated from it). D1 triggers
// write each word into the resource's FTS5 table behind the company's mark (two private-use
// characters), so a term's postings are per company and a search never reads another company's.
// The FTS rowid is the list's sort key, so a page of matches streams from the index in list order.

import { sql, type SQL } from "drizzle-orm";
import { FOLDS, TOKEN_RANGES } from "./search-table.ts";

/** Characters of a term the FTS prefix indexes cover (contacts, tasks `prefix = '3 4 5 6'`: the mark's 2 + 1..4; items '4 5 6 7': mark, state, 1..4). */
export const INDEXED_PREFIX = 4;
/** Longer terms expand to the company's words that start with them, up to this many. */
export const MAX_EXPANSION = 64;
/** Words of a query that count (the rest are ignored, as before). */
export const MAX_QUERY_WORDS = 8;
/** A search's total is counted up to this many matches (items, contacts, tasks); beyond it `meta.total_exact` is false. */
export const MAX_EXACT_SEARCH_TOTAL = 1_000;
/** Distinct words kept per record (title and notes of 10,000 characters stay well below). */
export const MAX_RECORD_WORDS = 2_000;

const PRIVATE_USE = 0xe000;
const MARKS = 6_400; // U+E000..U+F8FF
/** Companies the two-character mark can tell apart. */
export const MAX_SEARCH_COMPANY = MARKS * MARKS - 1;

/** The company's mark: two private-use characters that start every token of its records. */
export function companyMark(companyId: number): string {
  if (!Number.isSafeInteger(companyId) || companyId < 0 || companyId > MAX_SEARCH_COMPANY)
    throw new Error(`company id ${companyId} has no search mark`);
  return String.fromCharCode(PRIVATE_USE + Math.floor(companyId / MARKS), PRIVATE_USE + (companyId % MARKS));
}

const FOLD = new Map(FOLDS);

function isTokenChar(cp: number): boolean {
  let lo = 0;
  let hi = TOKEN_RANGES.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [from, to] = TOKEN_RANGES[mid]!;
    if (cp < from) hi = mid - 1;
    else if (cp > to) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The tokens of `text`, folded: what `unicode61 remove_diacritics 2` makes of it. */
export function tokenize(text: string): string[] {
  const words: string[] = [];
  let word = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (isTokenChar(cp)) {
      word += FOLD.get(cp) ?? ch;
    } else if (word) {
      words.push(word);
      word = "";
    }
  }
  if (word) words.push(word);
  return words;
}

/** `search_words` of a record: the distinct words of its searchable texts, as a JSON array. */
export function searchWords(...texts: Array<string | null | undefined>): string {
  const words = new Set<string>();
  for (const text of texts) {
    if (!text) continue;
    for (const word of tokenize(text)) {
      if (words.size >= MAX_RECORD_WORDS) break;
      words.add(word);
    }
  }
  return JSON.stringify([...words]);
}

/** A token no record has: the match expression of a term no word starts with. */
const NOTHING = '"\uf8ff\uf8ff"';

/**
 * The FTS5 expression for `q` in the company: every word must start a word of the record.
 * A word of up to INDEXED_PREFIX characters is a prefix query the prefix index answers as a
 * stream; a longer one becomes an OR of the company's words that start with it (read from
 * search_terms in the same statement), since FTS5 would otherwise merge every posting of a
 * prefix before returning the first row. Null when `q` has no searchable word.
 *
 * `states` (items): the tokens are `mark + state + word`, so a term is looked up under each
 * state asked for (one: a single stream of the records in that state; both: an OR of two).
 */
export function matchExpression(companyId: number, q: string, states: string[] = [""]): SQL | null {
  const terms = [...new Set(tokenize(q))].slice(0, MAX_QUERY_WORDS);
  if (terms.length === 0) return null;
  const mark = companyMark(companyId);
  const parts = terms.map((term) => {
    const perState = states.map((state) => termExpression(mark, state, term));
    return perState.length === 1 ? perState[0]! : sql`'(' || ${sql.join(perState, sql` || ' OR ' || `)} || ')'`;
  });
  return sql.join(parts, sql` || ' AND ' || `);
}

/** One term under one token prefix (`mark + state`): a prefix query, or the expansion of a long term. */
function termExpression(mark: string, state: string, term: string): SQL {
  const prefix = mark + state;
  if ([...term].length <= INDEXED_PREFIX) return sql`${`"${prefix}${term}"*`}`;
  const from = mark + term;
  // search_terms holds `mark + word`; the token of that word in this state is `mark + state + word`.
  return sql`(SELECT CASE WHEN count(*) = 0 THEN ${NOTHING} WHEN count(*) > ${MAX_EXPANSION} THEN ${`"${prefix}${term}"*`}
      ELSE '(' || group_concat('"' || ${prefix} || substr(term, ${[...mark].length + 1}) || '"', ' OR ') || ')' END
      FROM (SELECT term FROM search_terms WHERE term >= ${from} AND term < ${`${from}\u{10ffff}`} ORDER BY term LIMIT ${MAX_EXPANSION + 1}))`;
}

/** The state character of a live (not archived) item's tokens: private-use, so no word starts with it. */
export const LIVE_STATE = "\uf8fd";
/** The state character of an archived item's tokens. */
export const ARCHIVED_STATE = "\uf8fc";

/** The states an item search covers for the list's `archived` filter (default false: live items). */
export const itemStates = (archived: "true" | "false" | "any" | undefined) =>
  archived === "any" ? [LIVE_STATE, ARCHIVED_STATE] : [archived === "true" ? ARCHIVED_STATE : LIVE_STATE];
