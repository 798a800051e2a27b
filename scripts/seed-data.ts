// The fixed local seed (README: "Demo data"). Shared by `npm start`, the benchmark and the
// Worker tests, so the documented demo credentials are exactly what the tests exercise.
// Imports only the secret hashing and the shard id blocks, so Node runs it directly and workerd bundles it.
import { hashClientSecret } from "../src/auth/secret-hash.ts";
import { idBaseStatements } from "../src/db/id-blocks.ts";

export interface DemoClient {
  clientId: string;
  secret: string;
  accountId: number;
  companyId: number;
  userId: number;
  scopes: string;
}

export const DEMO_CLIENTS: DemoClient[] = [
  { clientId: "demo-owner", secret: "demo-owner-secret", accountId: 1, companyId: 1, userId: 1, scopes: "*" },
  { clientId: "demo-member", secret: "demo-member-secret", accountId: 1, companyId: 1, userId: 2, scopes: "*" },
  {
    clientId: "demo-readonly",
    secret: "demo-readonly-secret",
    accountId: 1,
    companyId: 1,
    userId: 2,
    scopes: "contacts:read items:read",
  },
  { clientId: "demo-other", secret: "demo-other-secret", accountId: 2, companyId: 2, userId: 3, scopes: "*" },
];

/** The demo account on shard 1 (DB_1): its ids come from shard 1's blocks (src/db/shards.ts). */
export const SHARD_ONE_DEMO = {
  clientId: "demo-shard1",
  secret: "demo-shard1-secret",
  accountId: 500_001,
  companyId: 500_001,
  userId: 500_001,
  departmentId: 2 ** 25 + 1,
  scopes: "*",
};

const q = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** Idempotent SQL statements: records are inserted once; demo clients are reset to their documented state. */
export async function buildSeedStatements(): Promise<string[]> {
  const statements = [
    `INSERT OR IGNORE INTO accounts (id, name, owner_user_id, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types)
      VALUES (1, 'Demo Account', 1, 10, 100000, 100000, 102400, 50), (2, 'Other Account', 3, 3, 10000, 10000, 10240, 20)`,
    `INSERT OR IGNORE INTO users (id, account_id, email, name)
      VALUES (1, 1, 'owner@demo.example', 'Demo Owner'), (2, 1, 'member@demo.example', 'Demo Member'), (3, 2, 'owner@other.example', 'Other Owner')`,
    `INSERT OR IGNORE INTO companies (id, account_id, name, is_default, documents_limit, contacts_limit, drive_space_mb, settings)
      VALUES (1, 1, 'Demo Company', 1, 10000, 10000, 10240, '{"timezone":"UTC","date_format":"YYYY-MM-DD"}'),
             (2, 2, 'Other Company', 1, 1000, 1000, 1024, '{"timezone":"Europe/Berlin","date_format":"DD.MM.YYYY"}')`,
    `INSERT OR IGNORE INTO departments (id, company_id, name, name_key, is_default) VALUES (1, 1, 'General', 'general', 1), (2, 2, 'General', 'general', 1)`,
  ];
  for (const client of DEMO_CLIENTS) statements.push(await clientStatement(client));
  // The directory (home database): the shard-1 demo client and account live on shard 1.
  const one = SHARD_ONE_DEMO;
  statements.push(
    `INSERT OR IGNORE INTO directory_accounts (account_id, shard) VALUES (${one.accountId}, 1)`,
    `INSERT OR IGNORE INTO directory_clients (client_id, account_id, shard) VALUES (${q(one.clientId)}, ${one.accountId}, 1)`,
  );
  return statements;
}

/** Shard 1's seed (DB_1): its id blocks, then the shard-1 demo account, company, department and client. */
export async function buildShardOneSeedStatements(): Promise<string[]> {
  const one = SHARD_ONE_DEMO;
  return [
    ...idBaseStatements(1),
    `INSERT OR IGNORE INTO accounts (id, name, owner_user_id, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types)
      VALUES (${one.accountId}, 'Shard One Account', ${one.userId}, 5, 10000, 10000, 10240, 20)`,
    `INSERT OR IGNORE INTO users (id, account_id, email, name) VALUES (${one.userId}, ${one.accountId}, 'owner@shard-one.example', 'Shard One Owner')`,
    `INSERT OR IGNORE INTO companies (id, account_id, name, is_default, documents_limit, contacts_limit, drive_space_mb, settings)
      VALUES (${one.companyId}, ${one.accountId}, 'Shard One Company', 1, 1000, 1000, 1024, '{"timezone":"UTC","date_format":"YYYY-MM-DD"}')`,
    `INSERT OR IGNORE INTO departments (id, company_id, name, name_key, is_default) VALUES (${one.departmentId}, ${one.companyId}, 'General', 'general', 1)`,
    await clientStatement(one),
  ];
}

async function clientStatement(client: DemoClient): Promise<string> {
  const salt = `seed-${client.clientId}`;
  const hash = await hashClientSecret(client.secret, salt);
  return `INSERT INTO api_clients (client_id, name, secret_hash, secret_salt, account_id, company_id, user_id, scopes, active)
        VALUES (${q(client.clientId)}, ${q(`${client.clientId} (local demo)`)}, ${q(hash)}, ${q(salt)}, ${client.accountId}, ${client.companyId}, ${client.userId}, ${q(client.scopes)}, 1)
        ON CONFLICT (client_id) DO UPDATE SET secret_hash = excluded.secret_hash, secret_salt = excluded.secret_salt,
          account_id = excluded.account_id, company_id = excluded.company_id, user_id = excluded.user_id,
          scopes = excluded.scopes, active = 1`;
}
