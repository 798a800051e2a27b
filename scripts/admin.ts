// Operator CLI: issue and manage API client credentials and create customer accounts.
// There is no web application to issue credentials, so this is how clients get them.
//
//   bash scripts/dev.sh client create|revoke|activate|list ...   (provides Node >= 22.18 first)
//   bash scripts/dev.sh account create ...
//   npm run client -- ... / npm run account -- ...               (the same, with Node >= 22.18 active)
//
// Targets the local D1 by default (`--persist-to DIR` for a non-default local state directory,
// relative to the project root) or the deployed database with `--remote`.
// Exit codes: 0 success, 1 failure (validation, not found, database error), 2 usage error.
import { applyMigrations, executeSql, queryEach, queryRows, shardBindingNames, type Target } from "./lib/local.ts";
import { MoveError, moveAccount, type ShardAccess } from "./lib/account-move.ts";
import { idBaseStatements, originShardOfCompany } from "../src/db/id-blocks.ts";
import { ALL_SCOPES, RESOURCE_SCOPES, isKnownScope, parseScopes } from "../src/auth/scopes.ts";
import { generateClientId, generateClientSecret, hashClientSecret, randomHex } from "../src/auth/secret-hash.ts";

const USAGE = `Usage:
  bash scripts/dev.sh client create --company <id> --scopes "<scope> ..." [--user <id>] [--name <label>] [target]
      Issues a client for the company. The user defaults to the account owner and must belong to
      the company's account. Prints client_id and client_secret; the secret is shown only once.
  bash scripts/dev.sh client revoke --client-id <id> [target]
      Deactivates a client (active = 0) and bumps its token generation: every token issued so far
      is refused for good, even after the client is activated again.
  bash scripts/dev.sh client activate --client-id <id> [target]
      Reactivates a client (active = 1); it needs new tokens.
  bash scripts/dev.sh client list [--company <id>] [--json] [target]
      Lists clients (never secrets or hashes).

  bash scripts/dev.sh account create --name <account name> --owner-email <email> --company <company name>
      [--owner-name <name>] [--max-companies 5] [--max-documents 10000] [--max-contacts 10000]
      [--max-drive-space-mb 10240] [--max-document-types 50] [--timezone UTC]
      [--company-documents-limit N] [--company-contacts-limit N] [--company-drive-space-mb N] [target]
      Creates the account, its owner user, its default company (quotas default to the account
      ceilings and may not exceed them) and the company's default department "General", in one
      transaction.
  bash scripts/dev.sh account move --account <id> --to <shard> [--settle 20] [--drain-timeout 1200]
      [--cleanup-after 120] [target]
      Moves the account to a higher shard (docs/scale.md "Moving an account"): read-only (writes
      answer 503, reads go on), wait --settle s, wait for in-flight work (imports, uploads, webhook
      events, reminder changes; gives up after --drain-timeout s and makes it writable again), copy
      every row with its ids, compare counts, flip the directory, then after --cleanup-after s delete
      the old copy. Run it again to resume a move that stopped.

  bash scripts/dev.sh shard init --shard <n> [target]
      Migrates shard n (the n-th binding of wrangler.toml's D1_SHARDS) and starts its id blocks, so
      its ids never meet another shard's (docs/scale.md). Run once per new shard; idempotent.
  bash scripts/dev.sh shard list [target]
      Each shard's binding and how many accounts and companies it holds.

  Shards: client commands find the client's or company's shard in the directory (shard 0);
  account create puts the account on shard 0 unless --shard <n> is given. --shard <n> overrides.

  target:  (default) the local D1 in .wrangler/state
           --persist-to <dir>   the local D1 under <dir> (as given to \`npm start -- --persist-to\`)
           --remote             the deployed D1 database (wrangler d1 ... --remote)

  Scopes: ${ALL_SCOPES} (all) or any of:
    ${RESOURCE_SCOPES.join(" ")}

  bash scripts/dev.sh provides Node >= 22.18 first. With it already active, the same commands are
  npm run client -- <command> ..., npm run account -- create ..., or
  node scripts/admin.ts <client|account> <command> [options]   (--help: this text)
`;

class UsageError extends Error {}
class CliError extends Error {}

type FlagKind = "string" | "boolean";
type FlagSpec = Record<string, FlagKind>;
type Flags = Record<string, string | true | undefined>;

const TARGET_FLAGS: FlagSpec = { "--remote": "boolean", "--persist-to": "string", "--shard": "string" };

const COMMANDS: Record<string, Record<string, FlagSpec>> = {
  client: {
    create: { "--company": "string", "--scopes": "string", "--user": "string", "--name": "string" },
    revoke: { "--client-id": "string" },
    activate: { "--client-id": "string" },
    list: { "--company": "string", "--json": "boolean" },
  },
  shard: {
    init: {},
    list: {},
  },
  account: {
    create: {
      "--name": "string",
      "--owner-email": "string",
      "--owner-name": "string",
      "--company": "string",
      "--max-companies": "string",
      "--max-documents": "string",
      "--max-contacts": "string",
      "--max-drive-space-mb": "string",
      "--max-document-types": "string",
      "--timezone": "string",
      "--company-documents-limit": "string",
      "--company-contacts-limit": "string",
      "--company-drive-space-mb": "string",
    },
    move: {
      "--account": "string",
      "--to": "string",
      "--settle": "string",
      "--drain-timeout": "string",
      "--cleanup-after": "string",
    },
  },
};

/** Parses `--flag value`, `--flag=value` and boolean `--flag`; rejects anything not in `spec`. */
function parseFlags(argv: string[], spec: FlagSpec): Flags {
  const flags: Flags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!kind) throw new UsageError(arg.startsWith("-") ? `Unknown option: ${name}` : `Unexpected argument: ${arg}`);
    if (flags[name] !== undefined) throw new UsageError(`Option given twice: ${name}`);
    if (kind === "boolean") {
      if (eq > 0 && name !== arg) throw new UsageError(`${name} takes no value`);
      flags[name] = true;
      continue;
    }
    let value: string | undefined;
    if (name !== arg) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      // A value starting with "--" is taken for a forgotten value; `--name=--x` still works.
      if (value === undefined || value.startsWith("--")) throw new UsageError(`${name} needs a value`);
      i++;
    }
    flags[name] = value;
  }
  return flags;
}

function str(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === "string" ? value : undefined;
}

function required(flags: Flags, name: string): string {
  const value = str(flags, name);
  if (value === undefined || value.trim() === "") throw new UsageError(`${name} is required`);
  return value.trim();
}

/** A positive integer id or quota; anything else (including SQL) is refused. */
function positiveInt(name: string, value: string): number {
  if (!/^[1-9][0-9]{0,14}$/.test(value.trim()))
    throw new CliError(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
  return Number(value.trim());
}

/** A SQL string literal. wrangler's CLI cannot bind parameters, so every text value goes through this. */
function sqlText(value: string): string {
  // SQLite string literals cannot carry NUL; refuse control characters other than tab altogether.
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value))
    throw new CliError(`Control characters are not allowed: ${JSON.stringify(value)}`);
  return `'${value.replace(/'/g, "''")}'`;
}

function targetOf(flags: Flags): Target {
  const remote = flags["--remote"] === true;
  const persistTo = str(flags, "--persist-to");
  if (remote && persistTo !== undefined) throw new UsageError("--remote and --persist-to cannot be combined");
  if (persistTo !== undefined && persistTo.trim() === "") throw new UsageError("--persist-to needs a directory");
  return remote ? { remote: true } : { persistTo };
}

/** `--shard N` as a number checked against wrangler.toml's D1_SHARDS; undefined without the flag. */
function shardFlag(flags: Flags): number | undefined {
  const value = str(flags, "--shard");
  if (value === undefined) return undefined;
  const shard = /^\d{1,2}$/.test(value) ? Number(value) : -1;
  const names = shardBindingNames();
  if (shard < 0 || shard >= names.length)
    throw new UsageError(`--shard must be 0 to ${names.length - 1} (wrangler.toml D1_SHARDS: ${names.join(" ")})`);
  return shard;
}

/** The target on shard `shard` (its D1 binding); shard 0 is the home database with the directory. */
function onShard(target: Target, shard: number): Target {
  return { ...target, binding: shardBindingNames()[shard]! };
}

/** Where a company's rows are: its directory entry (its account moved), else the shard its id came from. */
function shardOfCompany(target: Target, companyId: number): number {
  const moved = queryRows<{ shard: number }>(
    onShard(target, 0),
    `SELECT shard FROM directory_companies WHERE company_id = ${companyId}`,
  )[0];
  return moved?.shard ?? originShardOfCompany(companyId);
}

/** Where a client's rows are: its directory entry, else shard 0. */
function shardOfClient(target: Target, clientId: string): number {
  return (
    queryRows<{ shard: number }>(
      onShard(target, 0),
      `SELECT shard FROM directory_clients WHERE client_id = ${sqlText(clientId)}`,
    )[0]?.shard ?? 0
  );
}

function targetLabel(target: Target): string {
  const shard =
    target.binding && target.binding !== "DB"
      ? `, shard ${shardBindingNames().indexOf(target.binding)} (${target.binding})`
      : "";
  if (target.remote) return `remote D1${shard}`;
  return target.persistTo ? `local D1 (${target.persistTo})${shard}` : `local D1${shard}`;
}

/** The target options again, for printing follow-up commands. */
function targetSuffix(target: Target): string {
  if (target.remote) return " --remote";
  return target.persistTo ? ` --persist-to ${shellQuote(target.persistTo)}` : "";
}

function shellQuote(value: string): string {
  return /^[\w./:@=+-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}

function validateScopes(value: string): string {
  const scopes = parseScopes(value);
  if (scopes.length === 0) throw new CliError("--scopes must list at least one scope");
  const unknown = scopes.filter((s) => !isKnownScope(s));
  if (unknown.length > 0) {
    throw new CliError(
      `Unknown scope${unknown.length > 1 ? "s" : ""}: ${unknown.join(" ")}\n` +
        `Allowed: ${ALL_SCOPES} (all) or any of: ${RESOURCE_SCOPES.join(" ")}`,
    );
  }
  // `*` already grants everything; storing more next to it would only confuse.
  return scopes.includes(ALL_SCOPES) ? ALL_SCOPES : scopes.join(" ");
}

// ---------------------------------------------------------------------------------------------
// client

async function clientCreate(flags: Flags, home: Target): Promise<void> {
  const companyId = positiveInt("--company", required(flags, "--company"));
  const shard = shardFlag(flags) ?? shardOfCompany(home, companyId);
  const target = onShard(home, shard);
  const scopes = validateScopes(required(flags, "--scopes"));
  const userFlag = str(flags, "--user");
  const userId = userFlag === undefined ? undefined : positiveInt("--user", userFlag);
  const name = str(flags, "--name") ?? "";

  const clientId = generateClientId();
  const secret = generateClientSecret();
  const salt = randomHex(16);
  const hash = await hashClientSecret(secret, salt);
  const user = userId === undefined ? "a.owner_user_id" : String(userId);

  // One wrangler call (each costs seconds): the INSERT writes a row only when the company exists
  // and the user belongs to its account; the SELECT then says what happened and, if nothing, why.
  // wrangler's error output repeats the SQL: keep the hash and salt out of it.
  const redacted = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      throw new CliError(text.replaceAll(hash, "<hash>").replaceAll(salt, "<salt>"));
    }
  };
  const rows = redacted(() =>
    queryRows<{
      company_id: number;
      company_name: string;
      account_id: number;
      owner_user_id: number | null;
      user_id: number | null;
      user_account_id: number | null;
      inserted: number;
    }>(
      target,
      `INSERT INTO api_clients (client_id, name, secret_hash, secret_salt, account_id, company_id, user_id, scopes, active)
       SELECT ${sqlText(clientId)}, ${sqlText(name)}, ${sqlText(hash)}, ${sqlText(salt)}, c.account_id, c.id, u.id, ${sqlText(scopes)}, 1
       FROM companies c JOIN accounts a ON a.id = c.account_id
       JOIN users u ON u.id = ${user} AND u.account_id = c.account_id
       WHERE c.id = ${companyId};
     SELECT c.id AS company_id, c.name AS company_name, c.account_id, a.owner_user_id,
       u.id AS user_id, u.account_id AS user_account_id,
       (SELECT count(*) FROM api_clients WHERE client_id = ${sqlText(clientId)}) AS inserted
       FROM companies c JOIN accounts a ON a.id = c.account_id
       LEFT JOIN users u ON u.id = ${user}
       WHERE c.id = ${companyId}`,
    ),
  );
  const company = rows[0];
  if (!company) throw new CliError(`Company ${companyId} does not exist (${targetLabel(target)})`);
  if (company.user_id === null) {
    throw new CliError(
      userId === undefined
        ? `Account ${company.account_id} has no owner user; pass --user <id>`
        : `User ${userId} does not exist`,
    );
  }
  if (company.user_account_id !== company.account_id) {
    throw new CliError(
      `User ${company.user_id} belongs to account ${company.user_account_id}, not to account ${company.account_id} of company ${companyId}`,
    );
  }
  if (company.inserted !== 1) throw new CliError("The client was not stored; check the database");
  // Off shard 0, the directory tells the token endpoint where the client is.
  if (shard !== 0) {
    executeSql(onShard(home, 0), [
      `INSERT INTO directory_clients (client_id, account_id, shard) VALUES (${sqlText(clientId)}, ${company.account_id}, ${shard})`,
    ]);
  }

  const owner = company.user_id === company.owner_user_id ? " (account owner)" : "";
  console.log(`Created API client in ${targetLabel(target)}`);
  console.log(`  company:       ${companyId} (${company.company_name}), account ${company.account_id}`);
  console.log(`  user:          ${company.user_id}${owner}`);
  console.log(`  scopes:        ${scopes}`);
  console.log(`  client_id:     ${clientId}`);
  console.log(`  client_secret: ${secret}`);
  console.log("");
  console.log("WARNING: this is the only time the client secret is shown. Only a salted hash is stored,");
  console.log("so it cannot be shown again; if it is lost, revoke this client and create a new one.");
}

/** One wrangler call: the client's state before, then `UPDATE api_clients SET <assignments>`. */
function updateClient(target: Target, clientId: string, assignments: string) {
  const id = sqlText(clientId);
  const rows = queryRows<{ client_id: string; active: number; company_id: number }>(
    target,
    `SELECT client_id, active, company_id FROM api_clients WHERE client_id = ${id};
     UPDATE api_clients SET ${assignments} WHERE client_id = ${id}`,
  );
  return rows[0];
}

/**
 * Revocation deactivates the client and bumps its token generation in one UPDATE: tokens carry the
 * generation they were issued under, so none issued before the revocation works again after
 * `activate` (which leaves the generation alone). Revoking an already revoked client bumps it again,
 * which also covers a client deactivated some other way (e.g. by hand, without a bump).
 */
function clientRevoke(flags: Flags, home: Target): void {
  const clientId = required(flags, "--client-id");
  const target = onShard(home, shardFlag(flags) ?? shardOfClient(home, clientId));
  const client = updateClient(target, clientId, "active = 0, token_generation = token_generation + 1");
  if (!client) throw new CliError(`No API client with id ${clientId} in ${targetLabel(target)}; nothing to revoke`);
  if (client.active === 0) {
    console.log(
      `Client ${clientId} (company ${client.company_id}) existed and was already revoked; its tokens stay invalid.`,
    );
  } else {
    console.log(`Client ${clientId} (company ${client.company_id}) existed and is now revoked.`);
    console.log("The token endpoint refuses it at once; tokens already issued are refused within");
    console.log(
      "CLIENT_STATUS_TTL_SECONDS (wrangler.toml) seconds, and stay refused if the " + "client is activated again.",
    );
  }
}

function clientActivate(flags: Flags, home: Target): void {
  const clientId = required(flags, "--client-id");
  const target = onShard(home, shardFlag(flags) ?? shardOfClient(home, clientId));
  // Idempotent; the token generation is kept.
  const client = updateClient(target, clientId, "active = 1");
  if (!client) throw new CliError(`No API client with id ${clientId} in ${targetLabel(target)}; nothing to activate`);
  if (client.active === 1) {
    console.log(`Client ${clientId} (company ${client.company_id}) existed and was already active; nothing changed.`);
  } else {
    console.log(`Client ${clientId} (company ${client.company_id}) existed and is active again.`);
    console.log("Tokens issued before its revocation stay invalid; request new ones from /v1/oauth/token.");
  }
}

function clientList(flags: Flags, home: Target): void {
  const companyFlag = str(flags, "--company");
  const companyId = companyFlag === undefined ? undefined : positiveInt("--company", companyFlag);
  const target = onShard(home, shardFlag(flags) ?? (companyId === undefined ? 0 : shardOfCompany(home, companyId)));
  // Only these columns: never secret_hash or secret_salt.
  const rows = queryRows<{
    client_id: string;
    name: string;
    account_id: number;
    company_id: number;
    user_id: number;
    scopes: string;
    active: number;
    token_generation: number;
    created_at: string;
  }>(
    target,
    `SELECT client_id, name, account_id, company_id, user_id, scopes, active, token_generation, created_at FROM api_clients
     ${companyId === undefined ? "" : `WHERE company_id = ${companyId}`}
     ORDER BY company_id, created_at, client_id`,
  );
  if (flags["--json"] === true) {
    console.log(
      JSON.stringify(
        rows.map((r) => ({ ...r, active: r.active === 1 })),
        null,
        2,
      ),
    );
    return;
  }
  if (rows.length === 0) {
    console.log(
      `No API clients${companyId === undefined ? "" : ` for company ${companyId}`} in ${targetLabel(target)}.`,
    );
    return;
  }
  // GEN: the token generation, bumped by every revocation.
  const header = ["CLIENT_ID", "COMPANY", "ACCOUNT", "USER", "ACTIVE", "GEN", "CREATED_AT", "SCOPES", "NAME"];
  const table = rows.map((r) => [
    r.client_id,
    String(r.company_id),
    String(r.account_id),
    String(r.user_id),
    r.active === 1 ? "yes" : "no",
    String(r.token_generation),
    r.created_at,
    r.scopes,
    r.name,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  for (const row of [header, ...table]) {
    console.log(
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// account

function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function accountCreate(flags: Flags, home: Target): void {
  const shard = shardFlag(flags) ?? 0;
  const target = onShard(home, shard);
  const name = required(flags, "--name");
  const ownerEmail = required(flags, "--owner-email").toLowerCase();
  const companyName = required(flags, "--company");
  const ownerName = str(flags, "--owner-name")?.trim() ?? "";
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(ownerEmail))
    throw new CliError(`--owner-email is not an email address: ${ownerEmail}`);

  const int = (flag: string, fallback: number) => {
    const value = str(flags, flag);
    return value === undefined ? fallback : positiveInt(flag, value);
  };
  const limits = {
    maxCompanies: int("--max-companies", 5),
    maxDocuments: int("--max-documents", 10000),
    maxContacts: int("--max-contacts", 10000),
    maxDriveSpaceMb: int("--max-drive-space-mb", 10240),
    maxDocumentTypes: int("--max-document-types", 50),
  };
  const quotas = {
    documents: int("--company-documents-limit", limits.maxDocuments),
    contacts: int("--company-contacts-limit", limits.maxContacts),
    driveSpaceMb: int("--company-drive-space-mb", limits.maxDriveSpaceMb),
  };
  const over = [
    quotas.documents > limits.maxDocuments &&
      `--company-documents-limit ${quotas.documents} > --max-documents ${limits.maxDocuments}`,
    quotas.contacts > limits.maxContacts &&
      `--company-contacts-limit ${quotas.contacts} > --max-contacts ${limits.maxContacts}`,
    quotas.driveSpaceMb > limits.maxDriveSpaceMb &&
      `--company-drive-space-mb ${quotas.driveSpaceMb} > --max-drive-space-mb ${limits.maxDriveSpaceMb}`,
  ].filter(Boolean);
  if (over.length > 0) throw new CliError(`Company quotas may not exceed the account ceilings: ${over.join("; ")}`);
  const timezone = str(flags, "--timezone")?.trim() || "UTC";
  if (!isValidTimeZone(timezone)) throw new CliError(`--timezone is not a known IANA time zone: ${timezone}`);
  const settings = JSON.stringify({ timezone, date_format: "YYYY-MM-DD" });

  const email = sqlText(ownerEmail);
  const existing = queryRows<{ id: number; account_id: number }>(
    target,
    `SELECT id, account_id FROM users WHERE email = ${email}`,
  );
  if (existing[0]) {
    throw new CliError(
      `A user with email ${ownerEmail} already exists (user ${existing[0].id}, account ${existing[0].account_id})`,
    );
  }

  // One file = one transaction: either all five rows exist afterwards or none. The owner's
  // email (unique) identifies the new rows, so no id is guessed.
  const accountOfOwner = `(SELECT account_id FROM users WHERE email = ${email})`;
  executeSql(target, [
    `INSERT INTO accounts (name, owner_user_id, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types)
     VALUES (${sqlText(name)}, NULL, ${limits.maxCompanies}, ${limits.maxDocuments}, ${limits.maxContacts},
       ${limits.maxDriveSpaceMb}, ${limits.maxDocumentTypes})`,
    `INSERT INTO users (account_id, email, name) VALUES (last_insert_rowid(), ${email}, ${sqlText(ownerName)})`,
    `UPDATE accounts SET owner_user_id = (SELECT id FROM users WHERE email = ${email}) WHERE id = ${accountOfOwner}`,
    `INSERT INTO companies (account_id, name, is_default, documents_limit, contacts_limit, drive_space_mb, settings)
     VALUES (${accountOfOwner}, ${sqlText(companyName)}, 1, ${quotas.documents}, ${quotas.contacts}, ${quotas.driveSpaceMb},
       ${sqlText(settings)})`,
    `INSERT INTO departments (company_id, name, name_key, is_default)
     VALUES ((SELECT id FROM companies WHERE account_id = ${accountOfOwner} AND is_default = 1), 'General', 'general', 1)`,
    // The department's default contact group, as for companies created through the API.
    `INSERT INTO contact_groups (company_id, dept_id, name, name_key, is_default)
     SELECT d.company_id, d.id, 'General', 'general', 1 FROM departments d
     JOIN companies c ON c.id = d.company_id AND c.account_id = ${accountOfOwner} AND c.is_default = 1 WHERE d.is_default = 1`,
  ]);

  const created = queryRows<{ account_id: number; user_id: number; company_id: number; department_id: number }>(
    target,
    `SELECT a.id AS account_id, u.id AS user_id, c.id AS company_id, d.id AS department_id
     FROM users u JOIN accounts a ON a.id = u.account_id AND a.owner_user_id = u.id
     JOIN companies c ON c.account_id = a.id AND c.is_default = 1
     JOIN departments d ON d.company_id = c.id AND d.is_default = 1
     WHERE u.email = ${email}`,
  )[0];
  if (!created) throw new CliError("The account was written but could not be read back; check the database");
  if (shard !== 0)
    executeSql(onShard(home, 0), [
      `INSERT OR REPLACE INTO directory_accounts (account_id, shard) VALUES (${created.account_id}, ${shard})`,
    ]);

  console.log(`Created account in ${targetLabel(target)}`);
  console.log(`  account_id:    ${created.account_id} (${name})`);
  console.log(`  user_id:       ${created.user_id} (owner, ${ownerEmail})`);
  console.log(`  company_id:    ${created.company_id} (${companyName}, default)`);
  console.log(`  department_id: ${created.department_id} (General, default)`);
  console.log(
    `  limits:        companies ${limits.maxCompanies}, documents ${limits.maxDocuments}, contacts ${limits.maxContacts}, ` +
      `drive ${limits.maxDriveSpaceMb} MB, document types ${limits.maxDocumentTypes}`,
  );
  console.log(
    `  company quota: documents ${quotas.documents}, contacts ${quotas.contacts}, drive ${quotas.driveSpaceMb} MB; timezone ${timezone}`,
  );
  console.log("");
  console.log("Next, issue API credentials for the company (pick the scopes it needs; * grants all):");
  console.log(
    `  bash scripts/dev.sh client create --company ${created.company_id} --scopes "contacts:read contacts:write"` +
      ` --name "${name.replace(/["\\$`]/g, "")} integration"${targetSuffix(target)}`,
  );
}

async function accountMove(flags: Flags, home: Target): Promise<void> {
  const seconds = (flag: string, fallback: number) => {
    const value = str(flags, flag);
    if (value === undefined) return fallback;
    if (!/^\d{1,6}$/.test(value)) throw new UsageError(`${flag} must be a number of seconds`);
    return Number(value);
  };
  const shards: ShardAccess = {
    query: (shard, sql) => queryRows(onShard(home, shard), sql),
    queryEach: (shard, sqls) => queryEach(onShard(home, shard), sqls),
    execute: (shard, statements) => executeSql(onShard(home, shard), statements),
  };
  try {
    await moveAccount(shards, shardBindingNames().length, {
      accountId: positiveInt("--account", required(flags, "--account")),
      to: Number(required(flags, "--to")),
      settleSeconds: seconds("--settle", 20),
      drainTimeoutSeconds: seconds("--drain-timeout", 1200),
      cleanupAfterSeconds: seconds("--cleanup-after", 120),
      log: (line) => console.log(line),
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    });
  } catch (err) {
    if (err instanceof MoveError) throw new CliError(err.message);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// shard

/** Migrates a shard and starts its id blocks (idempotent): run once when a shard is added to D1_SHARDS. */
function shardInit(flags: Flags, home: Target): void {
  const shard = shardFlag(flags);
  if (shard === undefined) throw new UsageError("shard init needs --shard <n>");
  const target = onShard(home, shard);
  applyMigrations(target, [target.binding!]);
  executeSql(target, idBaseStatements(shard));
  const seq = queryRows<{ name: string; seq: number }>(
    target,
    "SELECT name, seq FROM sqlite_sequence WHERE name IN ('companies', 'items')",
  );
  console.log(
    `Shard ${shard} (${target.binding}) migrated; id blocks: ${seq.map((r) => `${r.name} from ${r.seq + 1}`).join(", ")} (${targetLabel(target)})`,
  );
}

/** Each shard's binding and how many accounts and companies it holds. */
function shardList(home: Target): void {
  for (const [shard, binding] of shardBindingNames().entries()) {
    const target = onShard(home, shard);
    const row = queryRows<{ accounts: number; companies: number }>(
      target,
      "SELECT (SELECT count(*) FROM accounts) AS accounts, (SELECT count(*) FROM " + "companies) AS companies",
    )[0];
    console.log(
      `shard ${shard}  ${binding.padEnd(8)}  accounts ${row?.accounts ?? 0}  companies ${row?.companies ?? 0}${shard === 0 ? "  (home: directory)" : ""}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------

async function run(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    process.stderr.write(USAGE);
    return 2;
  }
  if (argv.includes("--help") || argv.includes("-h") || argv[0] === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  const [group, command, ...rest] = argv;
  const commands = Object.hasOwn(COMMANDS, group!) ? COMMANDS[group!] : undefined;
  if (!commands) throw new UsageError(`Unknown command group: ${group} (expected client, account or shard)`);
  if (command === undefined)
    throw new UsageError(`Missing command after "${group}" (${Object.keys(commands).join(", ")})`);
  const spec = Object.hasOwn(commands, command) ? commands[command] : undefined;
  if (!spec)
    throw new UsageError(`Unknown ${group} command: ${command} (expected ${Object.keys(commands).join(", ")})`);
  const flags = parseFlags(rest, { ...spec, ...TARGET_FLAGS });
  const target = targetOf(flags);

  if (group === "shard") {
    if (command === "init") shardInit(flags, target);
    else shardList(target);
    return 0;
  }
  if (group === "client") {
    if (command === "create") await clientCreate(flags, target);
    else if (command === "revoke") clientRevoke(flags, target);
    else if (command === "activate") clientActivate(flags, target);
    else clientList(flags, target);
  } else if (command === "move") {
    await accountMove(flags, target);
  } else {
    accountCreate(flags, target);
  }
  return 0;
}

function describeFailure(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  if (/no such (table|column)/i.test(text)) {
    return (
      `${text}\n\nThe database has no schema yet, or an older one than this version. Locally, run ` +
      "`bash scripts/dev.sh start` once (it migrates and seeds) or `bash " +
      "scripts/dev.sh wrangler d1 migrations apply DB --local` " +
      "(add the same --persist-to); remotely, apply the migrations with --remote."
    );
  }
  return text;
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    console.error(`Error: ${err.message}\n`);
    process.stderr.write(USAGE);
    process.exitCode = 2;
  } else {
    console.error(`Error: ${describeFailure(err)}`);
    process.exitCode = 1;
  }
}
