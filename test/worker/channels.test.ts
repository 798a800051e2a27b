import { describe, expect, it } from "vitest";
import { CHANNEL_TYPES, type ChannelType, checkChannelUrl, maskUrl } from "../../src/channels/urls";
import { MAX_EXCERPT_CHARS, sendToChannel } from "../../src/channels/send";
import { testMessage } from "../../src/channels/test-message";
import { decryptSecret, encryptSecret } from "../../src/webhooks/secrets";
import {
  type CallResult,
  type Fields,
  call,
  callWithEnv,
  createAccount,
  createExtraCompany,
  createOwnerWithScopes,
  env,
  expectShapeA,
  expectShapeB,
  expectStatus,
  ok,
  TIMESTAMP,
} from "./helpers";

// Channel endpoints (docs/channels.md): CRUD, the URL shown in full only when it was sent, secrets
// encrypted at rest, per-platform URL rules in both modes and the SSRF encodings for every type,
// access tokens (ntfy only), language, disabling, the limit under concurrency, owner-only access and
// scopes, tenancy, keyset pages, Idempotency-Key, and an audit log without secrets.

const FIELDS = [
  "channel_id",
  "type",
  "name",
  "url",
  "has_access_token",
  "language",
  "disabled",
  "disabled_reason",
  "created_at",
  "updated_at",
].sort();

/** A real-looking URL of each platform (what a deployment accepts). */
const VALID: Record<ChannelType, string> = {
  slack: "https://hooks.slack.com/services/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",
  teams:
    "https://default0a1b2c3d4e5f.09.environment.api.powerplatform.com:443/powerautomate/automations/direct/workflows/86ffea6392fe4f3f9555f5e8f9b1f06e/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg",
  google_chat:
    "https://chat.googleapis.com/v1/spaces/AAAAb3XyZ12/messages?key=AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI&token=Qe1vDWzT8sKd6rLX9pN2mA4bC7fG0hJ3kL5nP8rS1tU%3D",
  discord: "https://discord.com/api/webhooks/1234567890123456789/AbC-dEf_GhIjKlMnOpQrStUvWxYz0123456789",
  ntfy: "https://ntfy.sh/expiry-alerts-7f3a",
};
const LOCAL = "http://127.0.0.1:9/receiver";
const STRICT = { WEBHOOKS_ALLOW_PRIVATE_URLS: undefined };

/** A fresh account (owner, member), plus a client of the owner that can ask for narrower scopes. */
const freshOwner = () => createOwnerWithScopes("chclient");

const create = (token: string, body: Fields, envOverrides?: Fields) =>
  envOverrides
    ? callWithEnv(envOverrides, "createChannel", "/v1/channels", { token, body })
    : call("createChannel", "/v1/channels", { token, body });

async function created(token: string, body: Fields = {}) {
  const res = await create(token, { type: "slack", name: "#facilities", url: LOCAL, ...body });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data;
}

type Row = Fields & { url_ciphertext: string; token_ciphertext: string | null; url_hint: string };
const row = (id: number) => env.DB.prepare("SELECT * FROM channel_endpoints WHERE id = ?").bind(id).first<Row>();

describe("channel endpoints: create, read, update, delete", () => {
  it.each(CHANNEL_TYPES)(
    "creates a %s channel in a deployment: the full URL once, masked on every read, encrypted at rest",
    async (type) => {
      const owner = await freshOwner();
      const res = await create(owner.ownerToken, { type, name: `My ${type}`, url: VALID[type] }, STRICT);
      expectStatus(res, 201, JSON.stringify(res.body));
      const data = res.body.data;
      expect(Object.keys(data).sort()).toEqual(FIELDS);
      const normalised = new URL(VALID[type]).href;
      expect(data).toMatchObject({
        type,
        name: `My ${type}`,
        url: normalised,
        has_access_token: false,
        language: null,
        disabled: false,
        disabled_reason: null,
      });
      expect(data.created_at).toMatch(TIMESTAMP);

      const masked = maskUrl(normalised);
      expect(masked).toMatch(/^https:\/\/[^/]+\/…/);
      const detail = await call("getChannel", `/v1/channels/${data.channel_id}`, { token: owner.ownerToken });
      expectStatus(detail, 200);
      expect(ok(detail).body.data).toEqual({ ...data, url: masked });
      const list = await call("listChannels", "/v1/channels", { token: owner.ownerToken });
      expectStatus(list, 200);
      expect(list.body.data).toEqual([{ ...data, url: masked }]);
      const secretPart = normalised.slice(new URL(normalised).origin.length);
      for (const body of [detail.body, list.body]) expect(JSON.stringify(body)).not.toContain(secretPart.slice(0, 12));

      const stored = await row(data.channel_id);
      expect(stored!.url_ciphertext).toMatch(/^v1\./);
      expect(JSON.stringify(stored)).not.toContain(secretPart.slice(0, 12));
      expect(await decryptSecret(stored!.url_ciphertext, env.WEBHOOK_SECRETS_KEY)).toBe(normalised);
    },
  );

  it("masks as scheme and host, then … and the last 4 characters when the rest has at least 16", () => {
    expect(maskUrl("https://hooks.slack.com/services/T1/B1/abcdefgh")).toBe("https://hooks.slack.com/…efgh");
    expect(maskUrl("https://ntfy.sh/short")).toBe("https://ntfy.sh/…");
    expect(maskUrl("http://127.0.0.1:9/receiver/abcdefghijkl")).toBe("http://127.0.0.1:9/…ijkl");
  });

  it("updates name, language and url (shown in full only in that answer); the type cannot change", async () => {
    const owner = await freshOwner();
    const channel = await created(owner.ownerToken);
    const path = `/v1/channels/${channel.channel_id}`;
    const renamed = await call("updateChannel", path, {
      token: owner.ownerToken,
      body: { name: "  #ops  ", language: "PT-br" },
    });
    expectStatus(renamed, 200, JSON.stringify(renamed.body));
    expect(renamed.body.data).toMatchObject({ name: "#ops", language: "pt-BR", url: maskUrl(LOCAL) });
    const newUrl = "http://127.0.0.1:9/receiver/another-one";
    const moved = await call("updateChannel", path, { token: owner.ownerToken, body: { url: newUrl } });
    expectStatus(moved, 200);
    expect(moved.body.data.url).toBe(newUrl);
    expect(await decryptSecret((await row(channel.channel_id))!.url_ciphertext, env.WEBHOOK_SECRETS_KEY)).toBe(newUrl);
    const detail = await call("getChannel", path, { token: owner.ownerToken });
    expect(ok(detail).body.data).toMatchObject({ url: "http://127.0.0.1:9/…-one", language: "pt-BR" });

    const back = await call("updateChannel", path, { token: owner.ownerToken, body: { language: null } });
    expect(ok(back).body.data.language).toBeNull();
    expectShapeB(await call("updateChannel", path, { token: owner.ownerToken, body: {} }), 400, /No updatable fields/);
    expectShapeB(
      await call("updateChannel", path, { token: owner.ownerToken, body: { type: "discord" } }),
      400,
      /type/,
    );
    expectShapeB(
      await call("updateChannel", path, { token: owner.ownerToken, body: { language: "tlh" } }),
      400,
      /language must be a BCP 47 tag in one of the supported languages/,
    );
    // A new URL is checked against the channel's own type.
    const wrong = await callWithEnv(STRICT, "updateChannel", path, {
      token: owner.ownerToken,
      body: { url: VALID.discord },
    });
    expectShapeB(wrong, 400, /^url of a slack channel must be a Slack incoming webhook URL/);
  });

  it("disabled: true records the owner's reason; disabled: false re-enables and clears it", async () => {
    const owner = await freshOwner();
    const off = await created(owner.ownerToken, { disabled: true });
    expect(off).toMatchObject({ disabled: true, disabled_reason: "disabled by the account owner" });
    const path = `/v1/channels/${off.channel_id}`;
    const on = await call("updateChannel", path, { token: owner.ownerToken, body: { disabled: false } });
    expect(ok(on).body.data).toMatchObject({ disabled: false, disabled_reason: null });
    // A reason set by the service (part 4: the platform said 404/410) is cleared the same way.
    await env.DB.prepare(
      "UPDATE channel_endpoints SET disabled = 1, disabled_reason = 'the platform answered 404' WHERE id = ?",
    )
      .bind(off.channel_id)
      .run();
    const again = await call("updateChannel", path, { token: owner.ownerToken, body: { disabled: true } });
    expect(ok(again).body.data.disabled_reason).toBe("the platform answered 404");
    const cleared = await call("updateChannel", path, { token: owner.ownerToken, body: { disabled: false } });
    expect(ok(cleared).body.data).toMatchObject({ disabled: false, disabled_reason: null });
  });

  it("deletes a channel: 404 afterwards, the row gone", async () => {
    const owner = await freshOwner();
    const channel = await created(owner.ownerToken);
    const path = `/v1/channels/${channel.channel_id}`;
    expectStatus(await call("deleteChannel", path, { token: owner.ownerToken }), 200);
    expectShapeB(await call("getChannel", path, { token: owner.ownerToken }), 404);
    expectShapeB(await call("deleteChannel", path, { token: owner.ownerToken }), 404);
    expect(await row(channel.channel_id)).toBeNull();
  });

  it("validates name, type and language, naming the field", async () => {
    const owner = await freshOwner();
    const post = (body: Fields) => create(owner.ownerToken, { type: "slack", name: "x", url: LOCAL, ...body });
    expectShapeB(await post({ name: "" }), 400, /name must not be empty/);
    expectShapeB(await post({ name: "x".repeat(101) }), 400, /name must be at most 100 characters/);
    expect((await created(owner.ownerToken, { name: "x".repeat(100) })).name).toHaveLength(100);
    expectShapeB(
      await post({ type: "telegram" }),
      400,
      /type must be one of: slack, teams, google_chat, discord, ntfy/,
    );
    expectShapeB(await post({ url: "" }), 400, /url must not be empty/);
    expectShapeB(await post({ language: "xx" }), 400, /language must be a BCP 47 tag/);
    expect((await created(owner.ownerToken, { language: "de" })).language).toBe("de");
    expectShapeB(await post({ extra: 1 }), 400);
  });
});

describe("channel endpoints: access tokens (ntfy)", () => {
  it("stores an ntfy token encrypted, never shows it, and null removes it", async () => {
    const owner = await freshOwner();
    const token = "tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2";
    const channel = await created(owner.ownerToken, { type: "ntfy", url: LOCAL, access_token: token });
    expect(channel.has_access_token).toBe(true);
    expect(JSON.stringify(channel)).not.toContain(token);
    const stored = await row(channel.channel_id);
    expect(JSON.stringify(stored)).not.toContain(token.slice(0, 10));
    expect(await decryptSecret(stored!.token_ciphertext!, env.WEBHOOK_SECRETS_KEY)).toBe(token);
    const path = `/v1/channels/${channel.channel_id}`;
    const removed = await call("updateChannel", path, { token: owner.ownerToken, body: { access_token: null } });
    expect(ok(removed).body.data.has_access_token).toBe(false);
    expect((await row(channel.channel_id))!.token_ciphertext).toBeNull();
    const set = await call("updateChannel", path, { token: owner.ownerToken, body: { access_token: "tk_other" } });
    expect(ok(set).body.data.has_access_token).toBe(true);
  });

  it("refuses a token for the other types, and a malformed one", async () => {
    const owner = await freshOwner();
    for (const type of ["slack", "teams", "google_chat", "discord"] as const)
      expectShapeB(
        await create(owner.ownerToken, { type, name: "x", url: LOCAL, access_token: "tk_x" }),
        400,
        new RegExp(`^access_token is only for ntfy channels, not ${type}$`),
      );
    const slack = await created(owner.ownerToken);
    expectShapeB(
      await call("updateChannel", `/v1/channels/${slack.channel_id}`, {
        token: owner.ownerToken,
        body: { access_token: "tk_x" },
      }),
      400,
      /only for ntfy/,
    );
    const post = (access_token: unknown) =>
      create(owner.ownerToken, { type: "ntfy", name: "x", url: LOCAL, access_token });
    expectShapeB(await post(""), 400, /access_token must not be empty/);
    expectShapeB(await post("tk with space"), 400, /printable ASCII without spaces/);
    expectShapeB(await post("x".repeat(257)), 400, /at most 256/);
  });
});

describe("channel endpoints: URL rules per platform", () => {
  const REFUSED: Array<[ChannelType, string]> = [
    ["slack", "https://hooks.slack.com/workflows/T1/A1/123/abc"],
    ["slack", "https://hooks.slack.com/triggers/T1/123/abc"],
    ["slack", "https://hooks.slack.com/services/T1/B1"],
    ["slack", "https://hooks.slack.com/services/T1/B1/abc?x=1"],
    ["slack", "https://hooks.slack.com/services/T1/B1/abc#frag"],
    ["slack", "https://evil.example/services/T1/B1/abc"],
    ["slack", "https://hooks.slack.com.evil.example/services/T1/B1/abc"],
    ["slack", VALID.discord],
    ["teams", "https://outlook.office.com/webhook/abc/IncomingWebhook/def/ghi"],
    ["teams", "https://contoso.webhook.office.com/webhookb2/abc/IncomingWebhook/def/ghi"],
    [
      "teams",
      "https://prod-01.westus.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01",
    ],
    ["teams", "https://evil.example/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=x"],
    ["teams", "https://logic.azure.com.evil.example/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=x"],
    ["google_chat", "https://chat.googleapis.com/v1/spaces/AAA/messages?key=k"],
    ["google_chat", "https://chat.googleapis.com/v1/spaces/AAA/members?key=k&token=t"],
    ["google_chat", "https://chat.google.com/v1/spaces/AAA/messages?key=k&token=t"],
    ["google_chat", "https://chat.googleapis.com/v1/spaces/AAA/messages?key=k&token=t&evil=1"],
    ["discord", "https://discord.com/api/webhooks/abc/def"],
    ["discord", "https://discord.com/api/webhooks/123"],
    ["discord", "https://discord.gg/api/webhooks/123/abc"],
    ["discord", "https://discord.com/api/webhooks/123/abc?redirect=https://x"],
    ["ntfy", "https://ntfy.sh/"],
    ["ntfy", "https://ntfy.sh/topic?auth=abc"],
    ["ntfy", "https://ntfy.sh/bad.topic!"],
    ["ntfy", "http://ntfy.sh/topic"],
  ];
  it.each(REFUSED.map(([type, url]) => ({ type, url })))(
    "refuses $url for $type, naming the field and the expected shape",
    async ({ type, url }) => {
      const owner = await freshOwner();
      const res = await create(owner.ownerToken, { type, name: "x", url }, STRICT);
      expectShapeB(res, 400, /^url /);
    },
  );

  it("the 400 of a wrong shape says what is expected", async () => {
    const owner = await freshOwner();
    const expected: Record<ChannelType, RegExp> = {
      slack:
        /^url of a slack channel must be a Slack incoming webhook URL: https:\/\/hooks\.slack\.com\/services\/T…\/B…\/…$/,
      teams:
        /^url of a teams channel must be a Teams Workflows \(Power Automate or Logic Apps\) webhook URL with its sig/,
      google_chat:
        /^url of a google_chat channel must be a Google Chat space webhook URL: https:\/\/chat\.googleapis\.com\/v1\/spaces\/…\/messages\?key=…&token=…$/,
      discord:
        /^url of a discord channel must be a Discord channel webhook URL: https:\/\/discord\.com\/api\/webhooks\/\{id\}\/\{token\}$/,
      ntfy: /^url of a ntfy channel must be an ntfy topic URL/,
    };
    for (const type of CHANNEL_TYPES) {
      const other = type === "slack" ? VALID.discord : type === "ntfy" ? "https://ntfy.sh/" : VALID.slack;
      expectShapeB(await create(owner.ownerToken, { type, name: "x", url: other }, STRICT), 400, expected[type]);
    }
  });

  it("accepts the documented variants of each platform", () => {
    const accepts = (type: ChannelType, url: string) =>
      expect(checkChannelUrl(type, url, false), url).toMatchObject({ ok: true });
    accepts(
      "teams",
      "https://prod-12.westeurope.logic.azure.com:443/workflows/0a1b2c/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=abc",
    );
    accepts("discord", "https://discordapp.com/api/webhooks/123/abc");
    accepts("discord", "https://discord.com/api/v10/webhooks/123/abc?thread_id=456");
    accepts(
      "google_chat",
      "https://chat.googleapis.com/v1/spaces/AAA/messages?key=k&token=t&threadKey=x&messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD",
    );
    accepts("ntfy", "https://push.example.org/ntfy/alerts_1");
  });

  it("lets a loopback receiver stand in for every type only where WEBHOOKS_ALLOW_PRIVATE_URLS=true", async () => {
    const owner = await freshOwner();
    for (const type of CHANNEL_TYPES) {
      for (const url of ["http://127.0.0.1:8099/slack/hook", "http://localhost:8099/x", "http://[::1]:8099/"]) {
        const local = await create(owner.ownerToken, { type, name: "x", url }, { WEBHOOKS_ALLOW_PRIVATE_URLS: "true" });
        expectStatus(local, 201, `${type} ${url}: ${JSON.stringify(local.body)}`);
        expectShapeB(await create(owner.ownerToken, { type, name: "x", url }, STRICT), 400, /^url must use https$/);
        expectShapeB(
          await create(
            owner.ownerToken,
            { type, name: "x", url: url.replace("http:", "https:").replace(":8099", "") },
            STRICT,
          ),
          400,
          /loopback|localhost/,
        );
      }
    }
  });

  // Every encoding the webhook filter refuses, on each platform's own path: refused for every type,
  // in a deployment and (for these, which are not plain loopback) in local development too.
  const HOSTS: Array<[string, RegExp]> = [
    ["10.0.0.1", /private \(10\.0\.0\.0\/8\)/],
    ["172.16.0.1", /private/],
    ["192.168.1.10", /private/],
    ["169.254.169.254", /cloud metadata/],
    ["169.254.1.1", /link-local/],
    ["100.64.0.1", /carrier-grade NAT/],
    ["0.0.0.0", /unspecified/],
    ["0xa9.0xfe.0xa9.0xfe", /cloud metadata/],
    ["2852039166", /cloud metadata/],
    ["012.0.0.1", /private/],
    ["[fe80::1]", /link-local/],
    ["[fd00:ec2::254]", /unique-local/],
    ["[::ffff:169.254.169.254]", /IPv4-mapped cloud metadata/],
    ["[::ffff:127.0.0.1]", /IPv4-mapped loopback/],
    ["[::127.0.0.1]", /IPv4-compatible loopback/],
    ["[::ffff:0:169.254.169.254]", /IPv4-translated cloud metadata/],
    ["[64:ff9b::a9fe:a9fe]", /NAT64-mapped cloud metadata/],
    ["[64:ff9b:1::a9fe:a9fe]", /local-use NAT64/],
    ["[2002:a9fe:a9fe::1]", /6to4-mapped cloud metadata/],
    ["[2001:0:808:808::5601:5601]", /Teredo client cloud metadata/],
    ["[::5efe:a9fe:a9fe]", /ISATAP cloud metadata/],
    ["[ff02::1]", /multicast/],
    ["metadata.google.internal", /cloud metadata host/],
    ["printer.local", /\*\.local/],
    ["db.corp.internal", /\*\.internal/],
    ["intranet", /single-label host/],
    ["hooks..slack.com", /empty label/],
  ];
  const PATHS: Record<ChannelType, string> = {
    slack: "/services/T1/B1/abc",
    teams: "/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=x",
    google_chat: "/v1/spaces/AAA/messages?key=k&token=t",
    discord: "/api/webhooks/123/abc",
    ntfy: "/topic",
  };
  it.each(CHANNEL_TYPES)(
    "refuses every private, loopback, link-local and metadata encoding for %s, in both modes",
    (type) => {
      for (const allowPrivate of [false, true])
        for (const [host, msg] of HOSTS) {
          const result = checkChannelUrl(type, `https://${host}${PATHS[type]}`, allowPrivate);
          expect(result.ok, `${host} ${allowPrivate}`).toBe(false);
          if (!result.ok) expect(result.msg, host).toMatch(msg);
        }
      // Plain loopback, credentials, other ports and schemes: refused in a deployment.
      for (const url of [
        `https://127.0.0.1${PATHS[type]}`,
        `https://[::1]${PATHS[type]}`,
        `https://localhost${PATHS[type]}`,
        `https://user:pw@hooks.slack.com${PATHS[type]}`,
        `https://hooks.slack.com:8443${PATHS[type]}`,
        `https://hooks.slack.com\\@127.0.0.1${PATHS[type]}`,
        `ftp://hooks.slack.com${PATHS[type]}`,
      ])
        expect(checkChannelUrl(type, url, false).ok, url).toBe(false);
    },
  );

  it("the API answers the same: an encoded metadata address is 400 for every type", async () => {
    const owner = await freshOwner();
    for (const type of CHANNEL_TYPES)
      for (const mode of [STRICT, { WEBHOOKS_ALLOW_PRIVATE_URLS: "true" }])
        expectShapeB(
          await create(owner.ownerToken, { type, name: "x", url: `https://[::ffff:a9fe:a9fe]${PATHS[type]}` }, mode),
          400,
          /^url must not point to a private or reserved address: .* cloud metadata/,
        );
  });
});

describe("channel endpoints: limit, pages, idempotency", () => {
  it("holds the limit of 50 under concurrent creates", async () => {
    const owner = await freshOwner();
    await env.DB.batch(
      Array.from({ length: 44 }, (_, i) =>
        env.DB.prepare(
          "INSERT INTO channel_endpoints (company_id, type, name, url_ciphertext, url_hint, created_by) VALUES (?, 'slack', ?, 'v1.x.y', 'http://127.0.0.1/…', 1)",
        ).bind(owner.companyId, `pre ${i}`),
      ),
    );
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => create(owner.ownerToken, { type: "slack", name: `c${i}`, url: LOCAL })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(6);
    for (const res of results.filter((r) => r.status !== 201))
      expectShapeB(res as CallResult, 400, /^Channel limit reached: a company may have at most 50 channel endpoints$/);
    const n = await env.DB.prepare("SELECT count(*) AS n FROM channel_endpoints WHERE company_id = ?")
      .bind(owner.companyId)
      .first<number>("n");
    expect(n).toBe(50);
  });

  it("lists in keyset pages by channel_id", async () => {
    const owner = await freshOwner();
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await created(owner.ownerToken, { name: `c${i}` })).channel_id);
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `&cursor=${cursor}` : "";
      const res = ok(await call("listChannels", `/v1/channels?limit=2${query}`, { token: owner.ownerToken }));
      expect(res.body.meta).toMatchObject({ limit: 2, max_allowed: 50 });
      seen.push(...res.body.data.map((c) => c.channel_id));
      cursor = res.body.meta.next_cursor;
    } while (cursor);
    expect(seen).toEqual(ids);
    expectShapeB(await call("listChannels", "/v1/channels?cursor=nope", { token: owner.ownerToken }), 400, /cursor/);
    expectShapeB(await call("listChannels", "/v1/channels?limit=101", { token: owner.ownerToken }), 400, /limit/);
  });

  it("replays a create with the same Idempotency-Key: one channel", async () => {
    const owner = await freshOwner();
    const body = { type: "slack", name: "once", url: LOCAL };
    const headers = { "Idempotency-Key": `ch-${crypto.randomUUID()}` };
    const first = await call("createChannel", "/v1/channels", { token: owner.ownerToken, body, headers });
    const second = await call("createChannel", "/v1/channels", { token: owner.ownerToken, body, headers });
    expectStatus(first, 201);
    expectStatus(second, 201);
    expect(second.body.data).toEqual(first.body.data);
    const n = await env.DB.prepare("SELECT count(*) AS n FROM channel_endpoints WHERE company_id = ?")
      .bind(owner.companyId)
      .first<number>("n");
    expect(n).toBe(1);
  });
});

describe("channel endpoints: who may manage them", () => {
  it("is for the account owner only, with channels:read / channels:write", async () => {
    const owner = await freshOwner();
    const { channel_id: id } = await created(owner.ownerToken);
    const member = owner.memberToken;
    for (const res of [
      await call("listChannels", "/v1/channels", { token: member }),
      await create(member, { type: "slack", name: "x", url: LOCAL }),
      await call("getChannel", `/v1/channels/${id}`, { token: member }),
      await call("updateChannel", `/v1/channels/${id}`, { token: member, body: { name: "x" } }),
      await call("deleteChannel", `/v1/channels/${id}`, { token: member }),
    ])
      expectShapeB(res, 403);
    const items = await owner.token("items:read items:write webhooks:read webhooks:write");
    for (const res of [
      await call("listChannels", "/v1/channels", { token: items }),
      await call("getChannel", `/v1/channels/${id}`, { token: items }),
    ]) {
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("channels:read");
    }
    const read = await owner.token("channels:read");
    expectStatus(await call("getChannel", `/v1/channels/${id}`, { token: read }), 200);
    const denied = await call("updateChannel", `/v1/channels/${id}`, { token: read, body: { name: "x" } });
    expectShapeA(denied, 403, "insufficient_scope");
    expect(denied.body.required_scope).toBe("channels:write");
    const write = await owner.token("channels:write");
    expectStatus(await call("updateChannel", `/v1/channels/${id}`, { token: write, body: { name: "w" } }), 200);
  });

  it("keeps companies apart: another company's channel is 404 and left alone", async () => {
    const a = await freshOwner();
    const b = await freshOwner();
    const channel = await created(a.ownerToken, { name: "mine" });
    const path = `/v1/channels/${channel.channel_id}`;
    expectShapeB(await call("getChannel", path, { token: b.ownerToken }), 404);
    expectShapeB(await call("updateChannel", path, { token: b.ownerToken, body: { name: "x" } }), 404);
    expectShapeB(await call("deleteChannel", path, { token: b.ownerToken }), 404);
    expect(ok(await call("listChannels", "/v1/channels", { token: b.ownerToken })).body.data).toEqual([]);
    expect((await row(channel.channel_id))!.name).toBe("mine");
  });

  it("answers 503 Shape B when the deployment has no secrets key", async () => {
    const owner = await freshOwner();
    expectShapeB(
      await create(owner.ownerToken, { type: "slack", name: "x", url: LOCAL }, { WEBHOOK_SECRETS_KEY: undefined }),
      503,
      /^channels are not configured on this deployment$/,
    );
  });
});

describe("channel endpoints: the audit log", () => {
  it("records created, updated and deleted with masked url and token, never the secrets", async () => {
    const owner = await freshOwner();
    const url = "http://127.0.0.1:9/receiver/secret-path-abcdefghijkl";
    const token = "tk_SecretTokenValue0123456789";
    const channel = await created(owner.ownerToken, { type: "ntfy", url, access_token: token });
    const path = `/v1/channels/${channel.channel_id}`;
    await call("updateChannel", path, { token: owner.ownerToken, body: { access_token: "tk_AnotherSecretValue9876" } });
    await call("deleteChannel", path, { token: owner.ownerToken });
    const log = await call("listAuditLog", `/v1/audit-log?resource_type=channel&resource_id=${channel.channel_id}`, {
      token: owner.ownerToken,
    });
    expectStatus(log, 200, JSON.stringify(log.body));
    const entries = log.body.data as Array<{ action: string; before: Fields | null; after: Fields | null }>;
    expect(entries.map((e) => e.action)).toEqual(["deleted", "updated", "created"]);
    expect(entries[2]!.after).toMatchObject({
      type: "ntfy",
      url: "http://127.0.0.1:9/…ijkl",
      access_token: "…6789",
      disabled: 0,
    });
    expect(entries[1]).toMatchObject({ before: { access_token: "…6789" }, after: { access_token: "…9876" } });
    const text = JSON.stringify(log.body);
    for (const secret of ["secret-path", "SecretToken", "AnotherSecret", "v1."]) expect(text).not.toContain(secret);
  });
});

describe("POST /v1/channels/{channel_id}/test (what worker tests can see: no port to listen on)", () => {
  it("checks the URL again at send time: a loopback channel saved with the switch on is not called once it is off", async () => {
    const owner = await freshOwner();
    const channel = await created(owner.ownerToken, { url: "http://127.0.0.1:9/slack" });
    const res = await callWithEnv(STRICT, "testChannel", `/v1/channels/${channel.channel_id}/test`, {
      token: owner.ownerToken,
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(ok(res).body.data).toEqual({
      delivered: false,
      status: null,
      body: "",
      truncated: false,
      error: "not sent: url not allowed on this deployment: url must use https",
      duration_ms: expect.any(Number),
    });
    expect(JSON.stringify(res.body)).not.toContain("127.0.0.1:9/slack");
  });

  it("tests a disabled channel too; another company's is 404, a member 403, no secrets key 503", async () => {
    const owner = await freshOwner();
    const other = await freshOwner();
    const channel = await created(owner.ownerToken, { url: "http://127.0.0.1:9/slack", disabled: true });
    const path = `/v1/channels/${channel.channel_id}/test`;
    expectStatus(await callWithEnv(STRICT, "testChannel", path, { token: owner.ownerToken }), 200);
    expectShapeB(await call("testChannel", path, { token: other.ownerToken }), 404);
    expectShapeB(await call("testChannel", path, { token: owner.memberToken }), 403);
    expectShapeA(
      await call("testChannel", path, { token: await owner.token("channels:read") }),
      403,
      "insufficient_scope",
    );
    expectShapeB(
      await callWithEnv({ WEBHOOK_SECRETS_KEY: undefined }, "testChannel", path, { token: owner.ownerToken }),
      503,
      /channels are not configured/,
    );
    // Stored with another key: said plainly, nothing sent.
    await env.DB.prepare("UPDATE channel_endpoints SET url_ciphertext = ? WHERE id = ?")
      .bind(await encryptSecret("http://127.0.0.1:9/x", "another-key-another-key-another-key-0123"), channel.channel_id)
      .run();
    const unreadable = ok(await call("testChannel", path, { token: owner.ownerToken }));
    expect(unreadable.body.data).toMatchObject({
      delivered: false,
      status: null,
      error: expect.stringMatching(/cannot be read/),
    });
  });
});

describe("the test message of each platform", () => {
  it("is the minimal payload each platform accepts, in the channel's language", () => {
    const slack = testMessage("slack", "en", "Acme <!channel> & Co");
    expect(slack.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(slack.body)).toEqual({
      text: "*Test message from Acme &lt;!channel&gt; &amp; Co*\nThis channel is set up: reminders from Acme &lt;!channel&gt; &amp; Co will be posted here.",
    });
    expect(Object.keys(JSON.parse(testMessage("google_chat", "de", "Acme").body))).toEqual(["text"]);
    expect(JSON.parse(testMessage("google_chat", "de", "Acme").body).text).toContain("Testnachricht von Acme");
    const discord = JSON.parse(testMessage("discord", "fr-CA", "Acme").body);
    expect(discord.content).toContain("Message de test de Acme");
    expect(discord.allowed_mentions).toEqual({ parse: [] });
    const teams = JSON.parse(testMessage("teams", "es", "Acme").body);
    expect(teams).toMatchObject({
      type: "message",
      attachments: [
        { contentType: "application/vnd.microsoft.card.adaptive", content: { type: "AdaptiveCard", version: "1.4" } },
      ],
    });
    expect(teams.attachments[0].content.body[0].text).toBe("Mensaje de prueba de Acme");
    const ntfy = testMessage("ntfy", "xx", "Acme");
    expect(ntfy.headers.title).toBe("Test message from Acme");
    expect(ntfy.body).toBe("This channel is set up: reminders from Acme will be posted here.");
    // A title that is not ASCII travels RFC 2047-encoded (a header value is Latin-1).
    const arabic = testMessage("ntfy", "ar", "Acme").headers.title!;
    expect(arabic).toMatch(/^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
    const decoded = new TextDecoder().decode(Uint8Array.from(atob(arabic.slice(10, -2)), (ch) => ch.charCodeAt(0)));
    expect(decoded).toBe("رسالة اختبار من Acme");
  });
});

describe("sendToChannel (src/channels/send.ts), with a fetch standing in for the platform", () => {
  const target = { type: "slack" as const, url: "http://127.0.0.1:9/hook", token: null };
  const message = { headers: { "content-type": "application/json" }, body: '{"text":"x"}' };

  it("posts once, follows no redirect, and reports the answer", async () => {
    const seen: Array<{ url: string; init: RequestInit }> = [];
    const fetcher = (async (url: string, init: RequestInit) => {
      seen.push({ url, init });
      return new Response("moved", { status: 302, headers: { location: "https://elsewhere.example/" } });
    }) as unknown as typeof fetch;
    const result = await sendToChannel(target, message, { allowPrivate: true, fetcher });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.init).toMatchObject({ method: "POST", redirect: "manual", body: '{"text":"x"}' });
    expect(result).toMatchObject({
      delivered: false,
      status: 302,
      body: "moved",
      error: expect.stringMatching(/redirect, not followed/),
    });
  });

  it("sends the ntfy token as a bearer token", async () => {
    let auth: string | null = null;
    const fetcher = (async (_url: string, init: RequestInit) => {
      auth = new Headers(init.headers).get("authorization");
      return new Response("{}", { status: 200 });
    }) as unknown as typeof fetch;
    const result = await sendToChannel({ type: "ntfy", url: "http://127.0.0.1:9/topic", token: "tk_abc" }, message, {
      allowPrivate: true,
      fetcher,
    });
    expect(result).toMatchObject({ delivered: true, status: 200, error: null });
    expect(auth).toBe("Bearer tk_abc");
  });

  it("reads at most 16 KiB of a 10 MB answer and cancels the rest", async () => {
    let pulled = 0;
    let cancelled = false;
    const chunk = new TextEncoder().encode("x".repeat(1024));
    const fetcher = (async () =>
      new Response(
        new ReadableStream({
          pull(controller) {
            pulled += chunk.byteLength;
            if (pulled > 10 * 1024 * 1024) controller.close();
            else controller.enqueue(chunk);
          },
          cancel() {
            cancelled = true;
          },
        }),
        { status: 500 },
      )) as unknown as typeof fetch;
    const result = await sendToChannel(target, message, { allowPrivate: true, fetcher });
    expect(result).toMatchObject({
      delivered: false,
      status: 500,
      truncated: true,
      error: "the platform answered HTTP 500",
    });
    expect(result.body).toHaveLength(MAX_EXCERPT_CHARS);
    expect(cancelled).toBe(true);
    expect(pulled).toBeLessThan(64 * 1024);
  });

  it("gives up after its timeout on a receiver that never answers", async () => {
    const fetcher = ((_url: string, init: RequestInit) =>
      new Promise((_resolve, reject) =>
        init.signal!.addEventListener("abort", () => reject(init.signal!.reason)),
      )) as unknown as typeof fetch;
    const result = await sendToChannel(target, message, { allowPrivate: true, fetcher, timeoutMs: 50 });
    expect(result).toMatchObject({ delivered: false, status: null, error: "no complete answer within 0.05 s" });
  });

  it("never calls a URL the rules refuse now, and never quotes the URL in an error", async () => {
    let calls = 0;
    const fetcher = (async () => {
      calls++;
      throw new Error("connect failed to http://127.0.0.1:9/hook");
    }) as unknown as typeof fetch;
    expect(await sendToChannel(target, message, { allowPrivate: false, fetcher })).toMatchObject({
      status: null,
      error: "not sent: url not allowed on this deployment: url must use https",
    });
    expect(calls).toBe(0);
    const failed = await sendToChannel(target, message, { allowPrivate: true, fetcher });
    expect(calls).toBe(1);
    expect(failed.error).toBe("request failed: connect failed to http://127.0.0.1:9/…");
  });
});

describe("channel endpoints and company deletion", () => {
  it("deleting a company deletes its channels in the same batch", async () => {
    const account = await createAccount({ companies: 5 });
    const { companyId, token } = await createExtraCompany(account, "chdel");
    await created(token);
    await created(token, { type: "ntfy", access_token: "tk_x" });
    expectStatus(await call("deleteCompany", `/v1/companies/${companyId}`, { token: account.ownerToken }), 200);
    const n = await env.DB.prepare("SELECT count(*) AS n FROM channel_endpoints WHERE company_id = ?")
      .bind(companyId)
      .first<number>("n");
    expect(n).toBe(0);
  });
});
