// What `bash scripts/dev.sh deploy-check` checks (scripts/deploy-check.ts): the placeholders a
// wrangler.toml must not carry into a deployment, which `wrangler deploy --dry-run` accepts, and,
// with the deployed Worker's secret list and its databases' settings, what is missing there.
// Pure: the caller reads the files and runs wrangler.
import { parseShardList } from "../../src/db/id-blocks.ts";

/**
 * Every key of .dev.vars.example, by what a deployment needs of it (test/tools/deploy-check.test.ts
 * keeps the two lists in step). `required`: a secret the deployed Worker needs (`wrangler secret put`).
 * `local`: local development only, never set in a deployment.
 */
export const DEV_VARS: Record<string, "required" | "local"> = {
  JWT_SIGNING_KEYS: "required", // signs and verifies the access tokens: without it no token is issued
  WEBHOOK_SECRETS_KEY: "required", // encrypts webhook signing secrets: without it webhooks answer 503
  LINK_SIGNING_KEYS: "required", // signs the links in reminder emails: without it emails go without them and the pages answer 500
  WEBHOOKS_ALLOW_PRIVATE_URLS: "local", // lets webhooks reach http://127.0.0.1; a deployment accepts only public https URLs
};

/** Secrets that are needed only together with a var: SMS_API_KEY with SMS_API_URL (src/env.ts). */
const SECRET_WITH_VAR: Record<string, string> = { SMS_API_KEY: "SMS_API_URL" };

/** Names reserved for documentation and testing (RFC 2606, RFC 6761): never a real sender or host. */
export function isExampleDomain(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  return (
    /(^|\.)example\.(com|net|org)$/.test(h) ||
    /\.(example|test|invalid|localhost)$/.test(h) ||
    ["example", "test", "invalid", "localhost"].includes(h)
  );
}

/** The hosts a string names: the domains of its e-mail addresses and the hosts of its URLs. */
function hostsIn(value: string): string[] {
  const hosts = [...value.matchAll(/[^\s@"'<>]+@([a-z0-9.-]+)/gi)].map((m) => m[1]!);
  for (const m of value.matchAll(/[a-z][a-z0-9+.-]*:\/\/([^/\s:"'<>]+)/gi)) hosts.push(m[1]!);
  return hosts;
}

/** A D1 id that only holds the repository's placeholder: zeros, perhaps with a last digit. */
const PLACEHOLDER_ID = /^0{8}-0{4}-0{4}-0{4}-0{11}[0-9]$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The parts of wrangler's raw configuration that the check reads. */
export interface DeployConfig {
  name?: string;
  vars?: Record<string, unknown>;
  d1_databases?: Array<{ binding: string; database_name?: string; database_id?: string }>;
  send_email?: Array<{ name: string; allowed_sender_addresses?: string[] }>;
  routes?: Array<string | { pattern: string }>;
  route?: string | { pattern: string };
}

/** What was learnt from the Cloudflare account (`--remote`); absent: not checked. */
export interface RemoteFacts {
  /** Names of the deployed Worker's secrets (`wrangler secret list`). */
  secrets?: string[];
  /** Per D1 binding: its database's uuid and read replication mode (`wrangler d1 info --json`), or why it could not be read. */
  databases?: Record<string, { uuid?: string; readReplication?: string; error?: string }>;
}

export interface CheckResult {
  /** What stops a deployment: placeholders, missing secrets, settings a deployment must not have. */
  problems: string[];
  /** What the operator should know or do, which does not stop a deployment. */
  notes: string[];
}

export function checkDeployConfig(config: DeployConfig, remote: RemoteFacts = {}): CheckResult {
  const problems: string[] = [];
  const notes: string[] = [];
  const vars = config.vars ?? {};
  const text = (key: string) => (typeof vars[key] === "string" ? (vars[key] as string) : undefined);

  // D1: every database id filled in, every shard bound, no database twice.
  const databases = config.d1_databases ?? [];
  const seen = new Map<string, string>();
  for (const db of databases) {
    const where = `[[d1_databases]] ${db.binding}${db.database_name ? ` (${db.database_name})` : ""}`;
    const id = db.database_id ?? "";
    const create = `the id printed by \`wrangler d1 create ${db.database_name ?? "<name>"}\``;
    if (id === "") problems.push(`${where}: database_id is missing; put ${create} there`);
    else if (PLACEHOLDER_ID.test(id))
      problems.push(`${where}: database_id "${id}" is a placeholder; put ${create} there`);
    else if (!UUID.test(id)) problems.push(`${where}: database_id "${id}" is not a D1 database id (a UUID)`);
    else if (seen.has(id.toLowerCase()))
      problems.push(
        `${where}: database_id "${id}" is also ${seen.get(id.toLowerCase())}'s; each binding needs its own database`,
      );
    seen.set(id.toLowerCase(), db.binding);
  }
  const bound = new Set(databases.map((db) => db.binding));
  for (const shard of parseShardList(text("D1_SHARDS"))) {
    if (!bound.has(shard)) problems.push(`vars.D1_SHARDS names ${shard}, which has no [[d1_databases]] entry`);
  }

  // The sender of reminder emails: a real address, allowed by the binding.
  const from = text("EMAIL_FROM");
  const email = (config.send_email ?? []).find((b) => b.name === "EMAIL");
  const onboard = 'an address of a domain onboarded to Cloudflare Email Service (README, "Deploying")';
  if (from !== undefined) {
    for (const host of hostsIn(from))
      if (isExampleDomain(host))
        problems.push(`vars.EMAIL_FROM "${from}": ${host} is an example domain; use ${onboard}`);
    if (!from.includes("@")) problems.push(`vars.EMAIL_FROM "${from}" is not an e-mail address`);
  }
  if (email) {
    for (const address of email.allowed_sender_addresses ?? []) {
      for (const host of hostsIn(address)) {
        if (isExampleDomain(host))
          problems.push(
            `[[send_email]] EMAIL allowed_sender_addresses "${address}": ${host} is an example domain; list EMAIL_FROM's address`,
          );
      }
    }
    if (
      from !== undefined &&
      email.allowed_sender_addresses &&
      !email.allowed_sender_addresses.some((a) => a.toLowerCase() === from.toLowerCase())
    ) {
      problems.push(
        `vars.EMAIL_FROM "${from}" is not in [[send_email]] EMAIL's allowed_sender_addresses, so every send would be refused`,
      );
    }
    if (from === undefined)
      notes.push("vars.EMAIL_FROM is not set: the email channel is off (reminders go by SMS or " + "not at all)");
  } else if (from !== undefined) {
    problems.push(
      `vars.EMAIL_FROM is set, but there is no [[send_email]] binding named EMAIL: the email channel would be off`,
    );
  } else {
    notes.push("no [[send_email]] binding EMAIL and no EMAIL_FROM: the email channel is off");
  }

  // The public address the links in reminder emails open on (the recipient's page).
  const publicBase = text("PUBLIC_BASE_URL");
  const origin = 'the deployment\'s own https origin (README, "Deploying")';
  if (publicBase === undefined) {
    problems.push(
      `vars.PUBLIC_BASE_URL is not set: reminder emails would go out without their links to the recipient's page; set it to ${origin}`,
    );
  } else if (!/^https:\/\/[^/\s?#@]+(\/[^\s?#]*)?$/.test(publicBase)) {
    problems.push(
      `vars.PUBLIC_BASE_URL "${publicBase}" is not an https URL: the links in reminder emails need ${origin}`,
    );
  } else {
    for (const host of hostsIn(publicBase))
      if (isExampleDomain(host))
        problems.push(
          `vars.PUBLIC_BASE_URL "${publicBase}": ${host} is an example domain; the links in reminder emails need ${origin}`,
        );
  }

  // Other example hosts in vars and routes (SMS_API_URL, a custom domain).
  for (const [key, value] of Object.entries(vars)) {
    if (key === "EMAIL_FROM" || key === "PUBLIC_BASE_URL" || typeof value !== "string") continue;
    for (const host of hostsIn(value))
      if (isExampleDomain(host)) problems.push(`vars.${key} "${value}": ${host} is an example domain`);
  }
  const routes = [...(config.routes ?? []), ...(config.route ? [config.route] : [])];
  for (const route of routes) {
    const pattern = typeof route === "string" ? route : route.pattern;
    const host = pattern
      .replace(/^[a-z]+:\/\//i, "")
      .split("/")[0]!
      .replace(/^\*\.?/, "");
    if (isExampleDomain(host)) problems.push(`route "${pattern}": ${host} is an example domain`);
  }

  // Secrets: never in [vars] (plain text in the dashboard and the repository), local-only settings off.
  for (const [key, kind] of Object.entries(DEV_VARS)) {
    if (kind === "required" && key in vars)
      problems.push(
        `vars.${key} is set in wrangler.toml: it is a secret; remove it and use \`wrangler secret put ${key}\``,
      );
    if (kind === "local" && key in vars)
      problems.push(`vars.${key} is set: it is for local development only (.dev.vars); remove it`);
  }
  for (const secret of Object.keys(SECRET_WITH_VAR)) {
    if (secret in vars)
      problems.push(
        `vars.${secret} is set in wrangler.toml: it is a secret; remove it and use \`wrangler secret put ${secret}\``,
      );
  }
  const required = [
    ...Object.entries(DEV_VARS)
      .filter(([, kind]) => kind === "required")
      .map(([key]) => key),
    ...Object.entries(SECRET_WITH_VAR)
      .filter(([, withVar]) => text(withVar) !== undefined)
      .map(([secret]) => secret),
  ];
  if (remote.secrets === undefined) {
    notes.push(
      `secrets not checked (add --remote to read \`wrangler secret list\`): the Worker needs ${required.join(", ")}`,
    );
  } else {
    const deployed = new Set(remote.secrets);
    for (const key of required)
      if (!deployed.has(key))
        problems.push(
          `secret ${key} is not set on the deployed Worker: \`bash scripts/dev.sh wrangler secret put ${key}\``,
        );
    for (const [key, kind] of Object.entries(DEV_VARS))
      if (kind === "local" && deployed.has(key))
        problems.push(
          `secret ${key} is set on the deployed Worker: it is for local development only; \`wrangler secret delete ${key}\``,
        );
  }

  // The databases in the account: the ids match, and read replication is on (a note: the API works without it).
  if (remote.databases === undefined) {
    notes.push('read replication not checked (add --remote): turn it on for each D1 database (README, "Deploying")');
  } else {
    for (const db of databases) {
      const facts = remote.databases[db.binding];
      if (!facts) continue;
      if (facts.error !== undefined) {
        problems.push(
          `[[d1_databases]] ${db.binding}: ${db.database_name ?? "the database"} could not be read from the account: ${facts.error}`,
        );
        continue;
      }
      if (facts.uuid && db.database_id && facts.uuid.toLowerCase() !== db.database_id.toLowerCase()) {
        problems.push(
          `[[d1_databases]] ${db.binding}: database_id "${db.database_id}" is not ${db.database_name}'s id in the account (${facts.uuid})`,
        );
      }
      if (facts.readReplication !== "auto")
        notes.push(`read replication is off for ${db.binding} (${db.database_name}): turn it on (README, "Deploying")`);
    }
  }
  return { problems, notes };
}
