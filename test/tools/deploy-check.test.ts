// `bash scripts/dev.sh deploy-check` (scripts/deploy-check.ts): the repository's wrangler.toml is
// not ready to deploy and the check names each placeholder; a filled-in copy is; with --remote,
// what the account says (a stand-in for wrangler answers `secret list` and `d1 info`).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkDeployConfig, DEV_VARS, isExampleDomain, type DeployConfig } from "../../scripts/lib/deploy-check.ts";
import { ROOT } from "../../scripts/lib/local.ts";

const dir = mkdtempSync(join(tmpdir(), "deploy-check-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const repoToml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
const SENDER = "reminders@mail.acme-reminders.net";
/** The repository's wrangler.toml with every placeholder replaced, as an operator fills it in. */
const filledToml = repoToml
  .replace(
    'database_id = "00000000-0000-0000-0000-000000000000"',
    'database_id = "2f1c6a0e-5b7d-4c1e-9a3f-8d2b7e6c4a10"',
  )
  .replace(
    'database_id = "00000000-0000-0000-0000-000000000001"',
    'database_id = "7a9e3c21-0d4f-4b8a-b6e5-1c2d3e4f5a6b"',
  )
  .replaceAll("reminders@expiry-reminder.example", SENDER)
  .replace(
    'PUBLIC_BASE_URL = "https://expiry-reminder.example"',
    'PUBLIC_BASE_URL = "https://reminders.acme-reminders.net"',
  );

function writeConfig(name: string, toml: string): string {
  const file = join(dir, name);
  writeFileSync(file, toml);
  return file;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the check as `bash scripts/dev.sh deploy-check` does (node scripts/deploy-check.ts). */
function deployCheck(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, "scripts", "deploy-check.ts"), ...args],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

/** A stand-in for wrangler: `secret list` and `d1 info <name>` answer from `answers`, as JSON. */
function fakeWrangler(answers: {
  secrets: string[];
  databases: Record<string, { uuid: string; mode: string } | "missing">;
}): string {
  const file = join(dir, `wrangler-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(
    file,
    `const answers = ${JSON.stringify(answers)};
const args = process.argv.slice(2);
if (args[0] === "secret" && args[1] === "list") {
  console.log(JSON.stringify(answers.secrets.map((name) => ({ name, type: "secret_text" }))));
} else if (args[0] === "d1" && args[1] === "info") {
  const db = answers.databases[args[2]];
  if (!db || db === "missing") { console.error("✘ [ERROR] Couldn't find DB with name '" + args[2] + "'"); process.exit(1); }
  console.log(JSON.stringify({ uuid: db.uuid, name: args[2], read_replication: { mode: db.mode } }, null, 2));
} else { console.error("unexpected: " + args.join(" ")); process.exit(3); }
`,
  );
  return file;
}

// Each run starts node and loads wrangler's config reader: seconds each on a busy machine.
const CLI = { timeout: 60_000 };

describe("deploy-check on the repository's wrangler.toml", CLI, () => {
  it("exits 1 and names every placeholder: both database ids, the sender, the allowed sender, the public address", async () => {
    const run = await deployCheck([]);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    const problems = run.stdout.split("\n").filter((line) => line.startsWith("✗ "));
    expect(problems).toEqual([
      expect.stringMatching(
        /^✗ \[\[d1_databases\]\] DB \(expiry-reminder\): database_id "0{8}-0{4}-0{4}-0{4}-0{12}" is a placeholder; put the id printed by `wrangler d1 create expiry-reminder` there$/,
      ),
      expect.stringMatching(
        /^✗ \[\[d1_databases\]\] DB_1 \(expiry-reminder-shard-1\): database_id "0{8}-0{4}-0{4}-0{4}-0{11}1" is a placeholder/,
      ),
      expect.stringMatching(
        /^✗ vars\.EMAIL_FROM "reminders@expiry-reminder\.example": expiry-reminder\.example is an example domain; use an address of a domain onboarded to Cloudflare Email Service/,
      ),
      expect.stringMatching(
        /^✗ \[\[send_email\]\] EMAIL allowed_sender_addresses "reminders@expiry-reminder\.example": expiry-reminder\.example is an example domain/,
      ),
      expect.stringMatching(
        /^✗ vars\.PUBLIC_BASE_URL "https:\/\/expiry-reminder\.example": expiry-reminder\.example is an example domain; the links in reminder emails need the deployment's own https origin/,
      ),
    ]);
    expect(run.stdout).toContain("the Worker needs JWT_SIGNING_KEYS, WEBHOOK_SECRETS_KEY, LINK_SIGNING_KEYS");
    expect(run.stdout).toMatch(/Not ready to deploy: 5 things to fix above\.\n$/);
  });

  it("exits 0 on a filled-in copy", async () => {
    const run = await deployCheck(["--config", writeConfig("filled.toml", filledToml)]);
    expect(
      run.stdout.split("\n").filter((line) => line.startsWith("✗ ")),
      run.stdout,
    ).toEqual([]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("Ready to deploy");
  });

  it("answers a usage error with exit 2", async () => {
    expect((await deployCheck(["--colour"])).code).toBe(2);
    const missing = await deployCheck(["--config", join(dir, "nothing.toml")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("No configuration at");
  });
});

describe("deploy-check --remote (the account's secrets and databases)", CLI, () => {
  const filled = () => writeConfig("remote.toml", filledToml);
  const databases = {
    "expiry-reminder": { uuid: "2f1c6a0e-5b7d-4c1e-9a3f-8d2b7e6c4a10", mode: "auto" },
    "expiry-reminder-shard-1": { uuid: "7a9e3c21-0d4f-4b8a-b6e5-1c2d3e4f5a6b", mode: "auto" },
  };

  it("exits 0 when the secrets are set and the ids match, with read replication on", async () => {
    const wrangler = fakeWrangler({
      secrets: ["JWT_SIGNING_KEYS", "WEBHOOK_SECRETS_KEY", "LINK_SIGNING_KEYS"],
      databases,
    });
    const run = await deployCheck(["--config", filled(), "--remote"], { DEPLOY_CHECK_WRANGLER: wrangler });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).not.toContain("read replication");
  });

  it("names a missing secret, a local-only one, a database id of another database; notes read replication off", async () => {
    const wrangler = fakeWrangler({
      secrets: ["JWT_SIGNING_KEYS", "LINK_SIGNING_KEYS", "WEBHOOKS_ALLOW_PRIVATE_URLS"],
      databases: {
        ...databases,
        "expiry-reminder": { uuid: "99999999-5b7d-4c1e-9a3f-8d2b7e6c4a10", mode: "auto" },
        "expiry-reminder-shard-1": { ...databases["expiry-reminder-shard-1"], mode: "disabled" },
      },
    });
    const run = await deployCheck(["--config", filled(), "--remote"], { DEPLOY_CHECK_WRANGLER: wrangler });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stdout).toContain(
      "✗ secret WEBHOOK_SECRETS_KEY is not set on the deployed Worker: `bash scripts/dev.sh wrangler secret put WEBHOOK_SECRETS_KEY`",
    );
    expect(run.stdout).toContain(
      "✗ secret WEBHOOKS_ALLOW_PRIVATE_URLS is set on the deployed Worker: it is for local development only",
    );
    expect(run.stdout).toContain(
      '✗ [[d1_databases]] DB: database_id "2f1c6a0e-5b7d-4c1e-9a3f-8d2b7e6c4a10" is not expiry-reminder\'s id in the account (99999999-',
    );
    expect(run.stdout).toContain("- read replication is off for DB_1 (expiry-reminder-shard-1)");
    expect(run.stdout).not.toContain("JWT_SIGNING_KEYS is not set");
  });

  it("names a database the account does not have", async () => {
    const wrangler = fakeWrangler({
      secrets: ["JWT_SIGNING_KEYS", "WEBHOOK_SECRETS_KEY", "LINK_SIGNING_KEYS"],
      databases: { ...databases, "expiry-reminder-shard-1": "missing" },
    });
    const run = await deployCheck(["--config", filled(), "--remote"], { DEPLOY_CHECK_WRANGLER: wrangler });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(
      /✗ \[\[d1_databases\]\] DB_1: expiry-reminder-shard-1 could not be read from the account: .*Couldn't find DB/,
    );
  });
});

describe("the checks (scripts/lib/deploy-check.ts)", () => {
  const base: DeployConfig = {
    vars: { EMAIL_FROM: SENDER, D1_SHARDS: "DB DB_1", PUBLIC_BASE_URL: "https://reminders.acme-reminders.net" },
    d1_databases: [
      { binding: "DB", database_name: "a", database_id: "2f1c6a0e-5b7d-4c1e-9a3f-8d2b7e6c4a10" },
      { binding: "DB_1", database_name: "b", database_id: "7a9e3c21-0d4f-4b8a-b6e5-1c2d3e4f5a6b" },
    ],
    send_email: [{ name: "EMAIL", allowed_sender_addresses: [SENDER] }],
  };
  const problems = (change: (c: DeployConfig) => void) => {
    const config = structuredClone(base);
    change(config);
    return checkDeployConfig(config).problems;
  };

  it("accepts a complete configuration", () => {
    expect(checkDeployConfig(base).problems).toEqual([]);
  });

  it("knows every key of .dev.vars.example: a secret the deployment needs, or a local-only setting", () => {
    const keys = readFileSync(join(ROOT, ".dev.vars.example"), "utf8")
      .split("\n")
      .map((line) => /^([A-Z][A-Z0-9_]*)=/.exec(line)?.[1])
      .filter(Boolean);
    expect(keys.sort()).toEqual(Object.keys(DEV_VARS).sort());
  });

  it.each<[string, (c: DeployConfig) => void, RegExp]>([
    [
      "a sender outside allowed_sender_addresses",
      (c) => (c.send_email![0]!.allowed_sender_addresses = ["other@acme-reminders.net"]),
      /EMAIL_FROM .* is not in \[\[send_email\]\] EMAIL's allowed_sender_addresses/,
    ],
    ["a sender without the binding", (c) => (c.send_email = []), /there is no \[\[send_email\]\] binding named EMAIL/],
    [
      "a secret in [vars]",
      (c) => (c.vars!.JWT_SIGNING_KEYS = "k:secret"),
      /vars\.JWT_SIGNING_KEYS is set in wrangler\.toml: it is a secret/,
    ],
    [
      "a local-only setting in [vars]",
      (c) => (c.vars!.WEBHOOKS_ALLOW_PRIVATE_URLS = "true"),
      /vars\.WEBHOOKS_ALLOW_PRIVATE_URLS is set: it is for local development only/,
    ],
    [
      "an example SMS provider",
      (c) => (c.vars!.SMS_API_URL = "https://sms.example.com/v1/messages"),
      /vars\.SMS_API_URL .*sms\.example\.com is an example domain/,
    ],
    [
      "a shard without a database",
      (c) => (c.vars!.D1_SHARDS = "DB DB_1 DB_2"),
      /D1_SHARDS names DB_2, which has no \[\[d1_databases\]\] entry/,
    ],
    [
      "one database for two bindings",
      (c) => (c.d1_databases![1]!.database_id = c.d1_databases![0]!.database_id),
      /is also DB's; each binding needs its own database/,
    ],
    [
      "an id that is not a UUID",
      (c) => (c.d1_databases![0]!.database_id = "<your-database-id>"),
      /is not a D1 database id/,
    ],
    [
      "a route on an example domain",
      (c) => (c.routes = [{ pattern: "api.example.org/*" }]),
      /route "api\.example\.org\/\*": api\.example\.org is an example domain/,
    ],
    [
      "no public address for the links in emails",
      (c) => delete c.vars!.PUBLIC_BASE_URL,
      /vars\.PUBLIC_BASE_URL is not set: reminder emails would go out without their links/,
    ],
    [
      "a public address that is not https",
      (c) => (c.vars!.PUBLIC_BASE_URL = "http://reminders.acme-reminders.net"),
      /vars\.PUBLIC_BASE_URL "http:\/\/reminders\.acme-reminders\.net" is not an https URL/,
    ],
    [
      "a local public address",
      (c) => (c.vars!.PUBLIC_BASE_URL = "https://localhost:8787"),
      /vars\.PUBLIC_BASE_URL "https:\/\/localhost:8787": localhost is an example domain/,
    ],
  ])("names %s", (_, change, message) => {
    expect(problems(change)).toEqual([expect.stringMatching(message)]);
  });

  it("asks for SMS_API_KEY only where SMS_API_URL is set", () => {
    expect(
      checkDeployConfig(base, {
        secrets: ["JWT_SIGNING_KEYS", "WEBHOOK_SECRETS_KEY", "LINK_SIGNING_KEYS"],
        databases: {},
      }).problems,
    ).toEqual([]);
    const sms = structuredClone(base);
    sms.vars!.SMS_API_URL = "https://sms.acme-provider.net/send";
    expect(
      checkDeployConfig(sms, {
        secrets: ["JWT_SIGNING_KEYS", "WEBHOOK_SECRETS_KEY", "LINK_SIGNING_KEYS"],
        databases: {},
      }).problems,
    ).toEqual([expect.stringContaining("secret SMS_API_KEY is not set")]);
  });

  it("tells example domains (RFC 2606, RFC 6761) from real ones", () => {
    for (const host of [
      "example.com",
      "mail.example.org",
      "expiry-reminder.example",
      "a.test",
      "x.invalid",
      "localhost",
      "EXAMPLE.NET.",
    ])
      expect(isExampleDomain(host), host).toBe(true);
    for (const host of ["acme.com", "example.co.uk", "examples.com", "myexample.com", "testing.dev"])
      expect(isExampleDomain(host), host).toBe(false);
  });
});
