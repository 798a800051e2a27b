// Local Durable Object state across a class rename: what wrangler.toml's `renamed_classes` migration
// does when deployed, done once for the state `wrangler dev` keeps under --persist-to.
//
// Locally every Durable Object class keeps its state in <persist>/v3/do/<worker>-<Class>/ (miniflare's
// unique key for the class): one SQLite file per object, named by the object's id, and the class's
// alarms in that directory's metadata.sqlite (_cf_ALARM, by object id). workerd derives an id from
// the unique key and the object's name (idFromName below), so a renamed class has another directory
// AND other ids for the same names. `wrangler dev` reads `renamed_classes` only to know which classes
// exist and whether they use SQLite: the renamed class starts empty. So, before `wrangler dev`
// starts (scripts/start.ts), each object of the old class is copied to the new class's directory
// under the id the new key gives its name, and the alarms are re-keyed with it. The old directory is
// left as it was (an older checkout still finds its state there).
import { createHash, createHmac } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync, type Database } from "./node-sqlite.ts";

export interface ClassRename {
  from: string;
  to: string;
}

/** The worker's name and the class renames of its migrations, in order, as wrangler reads the config. */
export async function classRenames(configPath: string): Promise<{ worker: string; renames: ClassRename[] }> {
  const { experimental_readRawConfig } = await import("wrangler");
  const { rawConfig } = experimental_readRawConfig({ config: configPath });
  return {
    worker: rawConfig.name ?? "",
    renames: (rawConfig.migrations ?? []).flatMap((m: { renamed_classes?: ClassRename[] }) => m.renamed_classes ?? []),
  };
}

/** The directory of a class's local objects: miniflare's unique key `<worker>-<Class>`. */
export const classKey = (worker: string, className: string) => `${worker}-${className}`;
export const classDir = (persistTo: string, worker: string, className: string) =>
  join(persistTo, "v3", "do", classKey(worker, className));

/**
 * workerd's `idFromName` for a namespace (ActorIdFactoryImpl in workerd's server.c++): the key is
 * SHA-256 of the unique key; the id's first 16 bytes are HMAC-SHA-256(key, name), the next 16
 * HMAC-SHA-256(key, those 16 bytes), in hex.
 */
export function durableObjectId(uniqueKey: string, name: string): string {
  const key = createHash("sha256").update(uniqueKey).digest();
  const base = createHmac("sha256", key).update(name).digest().subarray(0, 16);
  const mac = createHmac("sha256", key).update(base).digest().subarray(0, 16);
  return Buffer.concat([base, mac]).toString("hex");
}

const isObjectFile = (name: string) => /^[0-9a-f]{64}\.sqlite$/.test(name);
/** A SQLite database's files: the database, its write-ahead log and shared-memory index (when present). */
const sqliteFiles = (dir: string, base: string) =>
  ["", "-wal", "-shm"].map((suffix) => `${base}${suffix}`).filter((f) => existsSync(join(dir, f)));

function withDatabase<T>(file: string, options: { readOnly: boolean }, use: (db: Database) => T): T {
  const db = new DatabaseSync(file, options);
  try {
    return use(db);
  } finally {
    db.close();
  }
}

const hasTable = (db: Database, table: string) =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;

/**
 * The name an object was addressed by: what miniflare recorded with it (__miniflare_do_name), or,
 * for a company clock from before miniflare recorded names, `company:<id>` from its own meta table.
 */
function objectName(db: Database): string | null {
  if (hasTable(db, "__miniflare_do_name")) {
    const row = db.prepare("SELECT name FROM __miniflare_do_name LIMIT 1").get() as { name: string | null } | undefined;
    if (row?.name) return row.name;
  }
  if (hasTable(db, "meta")) {
    const row = db.prepare("SELECT value FROM meta WHERE key = 'company_id'").get() as { value: string } | undefined;
    if (row) return `company:${row.value}`;
  }
  return null;
}

export interface Carried {
  rename: ClassRename;
  objects: number;
  /** Objects of the old class with no name to derive a new id from (never addressed by name): not carried. */
  skipped: string[];
}

/**
 * For each rename whose old class has local state and whose new class has no object yet, copies the
 * old class's objects and alarms to the new class (see the top of this file). Renames apply in
 * order, so A -> B -> C carries A's state on to C. Run while no `wrangler dev` uses `persistTo`.
 */
export function carryRenamedClasses(persistTo: string, worker: string, renames: ClassRename[]): Carried[] {
  const carried: Carried[] = [];
  for (const rename of renames) {
    const from = classDir(persistTo, worker, rename.from);
    const to = classDir(persistTo, worker, rename.to);
    if (!existsSync(from)) continue;
    if (existsSync(to) && readdirSync(to).some(isObjectFile)) continue; // carried before, or in use already
    const staging = `${to}.carrying`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    const newIds = new Map<string, string>();
    const skipped: string[] = [];
    for (const file of readdirSync(from).filter(isObjectFile)) {
      const oldId = file.slice(0, -".sqlite".length);
      const name = withDatabase(join(from, file), { readOnly: true }, objectName);
      if (name === null) {
        skipped.push(oldId);
        continue;
      }
      // The name must give the object's id under the old key: then the new id is the one workerd will derive.
      if (durableObjectId(classKey(worker, rename.from), name) !== oldId) {
        rmSync(staging, { recursive: true, force: true });
        throw new Error(
          `${join(from, file)}: its name ${JSON.stringify(name)} does not give its id; not carrying ${rename.from} to ${rename.to}`,
        );
      }
      const newId = durableObjectId(classKey(worker, rename.to), name);
      newIds.set(oldId, newId);
      for (const f of sqliteFiles(from, file)) copyFileSync(join(from, f), join(staging, f.replace(oldId, newId)));
    }
    const metadata = sqliteFiles(from, "metadata.sqlite");
    if (metadata.length > 0) {
      for (const f of metadata) copyFileSync(join(from, f), join(staging, f));
      withDatabase(join(staging, "metadata.sqlite"), { readOnly: false }, (db) => {
        if (!hasTable(db, "_cf_ALARM")) return;
        const alarms = db.prepare("SELECT actor_id FROM _cf_ALARM").all() as Array<{ actor_id: string }>;
        for (const { actor_id } of alarms) {
          const newId = newIds.get(actor_id);
          if (newId) db.prepare("UPDATE _cf_ALARM SET actor_id = ? WHERE actor_id = ?").run(newId, actor_id);
          else db.prepare("DELETE FROM _cf_ALARM WHERE actor_id = ?").run(actor_id); // no object carried for it
        }
      });
    }
    rmSync(to, { recursive: true, force: true });
    renameSync(staging, to);
    carried.push({ rename, objects: newIds.size, skipped });
  }
  return carried;
}

/** For scripts/start.ts: carries the renamed classes' local state under `persistTo` (a fresh one has none: nothing is read). */
export async function carryLocalRenames(persistTo: string, configPath: string): Promise<Carried[]> {
  if (!existsSync(join(persistTo, "v3", "do"))) return [];
  const { worker, renames } = await classRenames(configPath);
  return carryRenamedClasses(persistTo, worker, renames);
}
