// The search tokenizer's table is SQLite's own (scripts/gen-search-table.ts), and migrations 0015
// and 0016 move a database that already holds items, contacts and tasks onto company-scoped search.
import { readFileSync, readdirSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { render, unicode61Table } from "../../scripts/gen-search-table";
import { companyMark, searchWords, tokenize } from "../../src/lib/search";

const migrationFiles = readdirSync("migrations")
  .filter((f) => f.endsWith(".sql"))
  .sort();
const apply = (db: DatabaseSync, file: string) => {
  for (const statement of readFileSync(`migrations/${file}`, "utf8").split("--> statement-breakpoint"))
    if (statement.trim()) db.exec(statement);
};

/**
 * A database migrated up to (not including) `migration`, holding an account, the companies 7 and
 * 6408 (marks that differ in both characters) and a department in each.
 */
function databaseBefore(migration: string): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const file of migrationFiles.slice(0, migrationFiles.indexOf(migration))) apply(db, file);
  db.exec(`INSERT INTO accounts (id, name, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types) VALUES (1, 'a', 5, 100, 100, 100, 5);
    INSERT INTO companies (id, account_id, name, documents_limit, contacts_limit, drive_space_mb) VALUES (7, 1, 'Seven', 10, 10, 10), (6408, 1, 'Other', 10, 10, 10);
    INSERT INTO departments (id, company_id, name, name_key) VALUES (1, 7, 'D', 'd'), (2, 6408, 'D', 'd');`);
  return db;
}

describe("search tokenizer", () => {
  it("src/lib/search-table.ts is what scripts/gen-search-table.ts makes from SQLite's unicode61", () => {
    expect(readFileSync("src/lib/search-table.ts", "utf8")).toBe(render(unicode61Table()));
  });

  it("tokenize() gives unicode61's tokens for mixed text in many scripts", () => {
    const db = new DatabaseSync(":memory:");
    db.exec(
      "CREATE VIRTUAL TABLE f USING fts5(b, tokenize = 'unicode61 remove_diacritics 2'); CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')",
    );
    const texts = [
      "Ölprüfung Ǆemal İstanbul straße",
      "Άδεια ЙОД ёлка",
      "東京タワー点検、年次 서울 점검",
      "निरीक्षण প্রমাণপত্র ไทยภาษา",
      "x·y o'brien 50% e-mail_me",
      "ﬁle Ⅻ ①②",
    ];
    texts.forEach((t, i) => db.prepare("INSERT INTO f (rowid, b) VALUES (?, ?)").run(i + 1, t));
    const rows = db.prepare("SELECT doc, term FROM v ORDER BY doc, offset").all() as Array<{
      doc: number;
      term: string;
    }>;
    texts.forEach((t, i) => expect(tokenize(t), t).toEqual(rows.filter((r) => r.doc === i + 1).map((r) => r.term)));
  });
});

describe("migration 0015 on a database holding data", () => {
  it("indexes existing items and contacts per company, with the words the Worker would write", () => {
    const db = databaseBefore("0015_company_search.sql");
    db.exec(`INSERT INTO items (id, company_id, dept_id, title, notes, expiry_date, archived, created_by) VALUES
        (1, 7, 1, 'Kesselprüfung Nord', 'jährlich', '2031-05-01', 0, 1),
        (2, 7, 1, 'Inspection old', '', '2030-01-01', 1, 1),
        (3, 6408, 2, 'Kesselprüfung Süd', '', '2029-01-01', 0, 1);
      INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, email_key) VALUES
        (1, 7, 1, 'Ada', 'Lovelace', 'ada@analytical.example', 'ada@analytical.example'),
        (2, 6408, 2, 'Ada', 'Byron', 'ada@byron.example', 'ada@byron.example');`);
    apply(db, "0015_company_search.sql");
    const words = db.prepare("SELECT id, search_words FROM items ORDER BY id").all() as Array<{
      id: number;
      search_words: string;
    }>;
    expect(words.map((w) => new Set(JSON.parse(w.search_words)))).toEqual([
      new Set(JSON.parse(searchWords("Kesselprüfung Nord", "jährlich"))),
      new Set(JSON.parse(searchWords("Inspection old"))),
      new Set(JSON.parse(searchWords("Kesselprüfung Süd"))),
    ]);
    const items = (company: number, match: string) =>
      (
        db
          .prepare("SELECT rowid & 4294967295 AS id FROM items_search WHERE items_search MATCH ? ORDER BY rowid")
          .all(match.replaceAll("@", companyMark(company))) as Array<{ id: number }>
      ).map((r) => r.id);
    expect(items(7, '"@kess"*')).toEqual([1]);
    expect(items(6408, '"@kess"*')).toEqual([3]);
    expect(items(7, '"@kesselprufung"')).toEqual([1]);
    expect(items(7, '"@jahr"* AND "@\uf8fel"')).toEqual([1]);
    expect(items(7, '"@insp"* AND "@\uf8fea"')).toEqual([2]);
    const terms = (db.prepare("SELECT term FROM search_terms ORDER BY term").all() as Array<{ term: string }>).map(
      (r) => r.term,
    );
    expect(terms).toContain(`${companyMark(7)}kesselprufung`);
    expect(terms).toContain(`${companyMark(6408)}kesselprufung`);
    const contacts = (company: number, match: string) =>
      (
        db
          .prepare("SELECT rowid AS id FROM contacts_search WHERE contacts_search MATCH ?")
          .all(match.replaceAll("@", companyMark(company))) as Array<{ id: number }>
      ).map((r) => r.id);
    expect(contacts(7, '"@ada"* AND "@anal"*')).toEqual([1]);
    expect(contacts(6408, '"@ada"*')).toEqual([2]);
    // The old shared tables are gone.
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name IN ('items_fts', 'contacts_fts')").all()).toEqual([]);
  });
});

describe("migration 0016 on a database holding tasks", () => {
  it("indexes existing tasks per company in (due minute, id) rowid order, with the Worker's words", () => {
    const db = databaseBefore("0016_tasks_search.sql");
    db.exec(`INSERT INTO tasks (id, public_id, company_id, title, description, due_at, owner_id, created_by) VALUES
        (1, 't1', 7, 'Renew Genehmigung', 'städtisch', '2031-05-01 10:00:59', 1, 1),
        (2, 't2', 7, 'Renew early', '', '1900-01-01 00:00:00', 1, 1),
        (3, 't3', 6408, 'Renew other', '', '9999-12-31 23:59:59', 1, 1),
        (4, 't4', 7, 'Renew same minute', '', '2031-05-01 10:00:01', 1, 1);`);
    apply(db, "0016_tasks_search.sql");
    const words = db.prepare("SELECT search_words FROM tasks WHERE id = 1").get() as { search_words: string };
    expect(new Set(JSON.parse(words.search_words))).toEqual(
      new Set(JSON.parse(searchWords("Renew Genehmigung", "städtisch"))),
    );
    const tasks = (company: number, match: string) =>
      (
        db
          .prepare(
            "SELECT rowid >> 31 AS minute, rowid & 2147483647 AS id FROM tasks_search WHERE tasks_search MATCH ? ORDER BY rowid",
          )
          .all(match.replaceAll("@", companyMark(company))) as Array<{
          minute: number;
          id: number;
        }>
      ).map((r) => [r.minute, r.id]);
    const minute = (at: string) => (Date.parse(`${at.replace(" ", "T")}Z`) - Date.UTC(1900, 0, 1)) / 60_000;
    // Rowid order is (minute, id): the two tasks of 10:00 come by id, the query sorts them by second.
    expect(tasks(7, '"@ren"*')).toEqual([
      [0, 2],
      [Math.floor(minute("2031-05-01 10:00:00")), 1],
      [Math.floor(minute("2031-05-01 10:00:00")), 4],
    ]);
    expect(tasks(6408, '"@renew"')).toEqual([[Math.floor(minute("9999-12-31 23:59:00")), 3]]);
    expect(tasks(7, '"@stad"*')).toEqual([[Math.floor(minute("2031-05-01 10:00:00")), 1]]);
    const terms = (db.prepare("SELECT term FROM search_terms").all() as Array<{ term: string }>).map((r) => r.term);
    expect(terms).toContain(`${companyMark(7)}genehmigung`);
    // A changed date moves the task's row; the old shared table is gone.
    db.exec("UPDATE tasks SET due_at = '2040-01-01 00:00:00' WHERE id = 2");
    expect(tasks(7, '"@ren"*').map(([, id]) => id)).toEqual([1, 4, 2]);
    db.exec("DELETE FROM tasks WHERE id = 1");
    expect(tasks(7, '"@ren"*').map(([, id]) => id)).toEqual([4, 2]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'tasks_fts'").all()).toEqual([]);
  });
});

describe("migration 0019 on a database holding items", () => {
  it("re-indexes every item with its state in each token, and the triggers keep it so", () => {
    const db = databaseBefore("0019_item_search_states.sql");
    const words = (...t: string[]) => `'${searchWords(...t)}'`;
    db.exec(`INSERT INTO items (id, company_id, dept_id, title, notes, expiry_date, archived, created_by, search_words) VALUES
        (1, 7, 1, 'Kesselprüfung Nord', '', '2031-05-01', 0, 1, ${words("Kesselprüfung Nord")}),
        (2, 7, 1, 'Kessel old', '', '2030-01-01', 1, 1, ${words("Kessel old")}),
        (3, 6408, 2, 'Kesselprüfung Süd', '', '2029-01-01', 0, 1, ${words("Kesselprüfung Süd")});`);
    apply(db, "0019_item_search_states.sql");
    const items = (company: number, match: string) =>
      (
        db
          .prepare("SELECT rowid & 4294967295 AS id FROM items_search WHERE items_search MATCH ? ORDER BY rowid")
          .all(match.replaceAll("@", companyMark(company))) as Array<{ id: number }>
      ).map((r) => r.id);
    const live = "@\uf8fd";
    const archived = "@\uf8fc";
    expect(items(7, `"${live}kess"*`)).toEqual([1]);
    expect(items(7, `"${archived}kess"*`)).toEqual([2]);
    expect(items(7, `"${live}kess"* OR "${archived}kess"*`)).toEqual([2, 1]);
    expect(items(6408, `"${live}kesselprufung"`)).toEqual([3]);
    expect(items(7, '"@\uf8fel"')).toEqual([]); // the old state token is gone
    db.exec("UPDATE items SET archived = 1 WHERE id = 1");
    expect(items(7, `"${archived}kess"*`)).toEqual([2, 1]);
    expect(items(7, `"${live}kess"*`)).toEqual([]);
  });
});
