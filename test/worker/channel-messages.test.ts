// The channel message builders (src/channels/messages/, docs/channels.md "The messages"): every
// type in English, Arabic and German shows the item, its date (format and relative), the company,
// who it is for and the action pages, and each payload is checked against its platform's
// documented limits and shapes (the checkers below cite them). Hostile user text can neither
// mention, link, format, run markup nor reverse the message; nothing is ever cut inside a
// surrogate pair or an escape.
import { describe, expect, it } from "vitest";
import { CHANNEL_TYPES, type ChannelReminder, type ChannelType, channelMessage } from "../../src/channels/messages";
import { headerValue, NTFY_LIMITS } from "../../src/channels/messages/ntfy";
import { clip, clipBytes } from "../../src/channels/messages/reminder";
import { slackEscape } from "../../src/channels/messages/slack";
import { speechFor } from "../../src/i18n/language";
import { linksOfPage } from "../../src/lib/recipient-links";
import { t } from "../../src/i18n/messages";

const page = "https://api.test/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w";
const links = linksOfPage(page);
const base: ChannelReminder = {
  speech: speechFor("en"),
  companyName: "Acme Ltd",
  itemId: 123,
  itemTitle: "Anna Smith",
  itemType: "exp",
  documentType: "Passport",
  expiryDate: "2026-12-03",
  today: "2026-11-30",
  dateFormat: "DD.MM.YYYY",
  recipientName: "Jana Weber",
  notes: "Bring the old passport.",
  links,
  template: null,
};

// biome-ignore lint/suspicious/noExplicitAny: parsed payloads, checked field by field
type Json = Record<string, any>;
const build = (type: ChannelType, overrides: Partial<ChannelReminder> = {}) =>
  channelMessage(type, { ...base, ...overrides });
const parsed = (type: ChannelType, overrides: Partial<ChannelReminder> = {}): Json =>
  JSON.parse(build(type, overrides).body);
const bytes = (s: string) => new TextEncoder().encode(s).length;

/** Every string in a JSON value. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === "object") return Object.values(value).flatMap(strings);
  return [];
}

/** The text of a header value, RFC 2047 encoded words decoded (as ntfy does). */
function decodeHeader(value: string): string {
  if (!value.startsWith("=?")) return value;
  const raw = value
    .split(" ")
    .map((word) => /^=\?UTF-8\?B\?([A-Za-z0-9+/=]*)\?=$/.exec(word)![1]!)
    .map((b64) => atob(b64))
    .join("");
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(
    Uint8Array.from(raw, (c) => c.charCodeAt(0)),
  );
}

// ---- the platforms' documented limits and shapes ----
// Slack, Block Kit reference ("Blocks", "Block elements", "Composition objects"): 50 blocks per
// message; section text 3,000 and field text 2,000 characters, 10 fields; header plain_text 150;
// button text 75, url 3,000, action_id 255; actions 25 elements; context 10 elements.
function slackProblems(body: Json): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => ok || problems.push(what);
  const text = (o: Json, max: number, types = ["mrkdwn", "plain_text"]) =>
    check(
      types.includes(o?.type) && typeof o.text === "string" && o.text.length >= 1 && o.text.length <= max,
      `text ${JSON.stringify(o)?.slice(0, 80)}`,
    );
  check(typeof body.text === "string" && body.text.length > 0 && body.text.length <= 3000, "fallback text");
  check(Array.isArray(body.blocks) && body.blocks.length <= 50, "blocks");
  for (const block of body.blocks ?? []) {
    if (block.type === "header") text(block.text, 150, ["plain_text"]);
    else if (block.type === "section") {
      check(block.text !== undefined || block.fields !== undefined, "section without text or fields");
      if (block.text) text(block.text, 3000);
      if (block.fields) {
        check(block.fields.length >= 1 && block.fields.length <= 10, "fields count");
        for (const field of block.fields) text(field, 2000);
      }
    } else if (block.type === "actions") {
      check(block.elements.length >= 1 && block.elements.length <= 25, "actions count");
      const ids = block.elements.map((e: Json) => e.action_id);
      check(new Set(ids).size === ids.length, "action_id unique");
      for (const e of block.elements) {
        check(e.type === "button", "button");
        text(e.text, 75, ["plain_text"]);
        check(typeof e.url === "string" && e.url.length <= 3000 && e.url.startsWith("https://"), "button url");
        check(typeof e.action_id === "string" && e.action_id.length <= 255, "action_id");
        check(e.style === undefined || ["primary", "danger"].includes(e.style), "style");
        check(
          Object.keys(e).every((k) => ["type", "text", "url", "action_id", "style"].includes(k)),
          "button keys",
        );
      }
    } else if (block.type === "context") {
      check(block.elements.length >= 1 && block.elements.length <= 10, "context count");
      for (const e of block.elements) text(e, 3000);
    } else problems.push(`unknown block ${block.type}`);
  }
  return problems;
}

// Teams: the Workflows webhook takes { type: "message", attachments: [{ contentType:
// "application/vnd.microsoft.card.adaptive", content }] }; the Adaptive Card schema (version 1.5:
// AdaptiveCard.version, rtl, body of TextBlock/FactSet, actions of Action.OpenUrl with title and
// url); Teams renders at most 6 actions and refuses messages above about 28 KB.
function teamsProblems(body: Json, raw: string): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => ok || problems.push(what);
  check(bytes(raw) <= 28_000, "size");
  check(body.type === "message" && body.attachments?.length === 1, "message");
  const attachment = body.attachments?.[0] ?? {};
  check(attachment.contentType === "application/vnd.microsoft.card.adaptive", "contentType");
  const card = attachment.content ?? {};
  check(card.type === "AdaptiveCard", "AdaptiveCard");
  check(/^1\.(4|5|6)$/.test(card.version), "version 1.4 or higher");
  check(card.rtl === undefined || typeof card.rtl === "boolean", "rtl");
  check(Array.isArray(card.body) && card.body.length > 0, "body");
  for (const element of card.body ?? []) {
    if (element.type === "TextBlock") {
      check(typeof element.text === "string" && element.text.length > 0, "TextBlock text");
      check(
        element.size === undefined || ["Small", "Default", "Medium", "Large", "ExtraLarge"].includes(element.size),
        "size",
      );
      check(element.weight === undefined || ["Lighter", "Default", "Bolder"].includes(element.weight), "weight");
      check(element.style === undefined || ["default", "heading"].includes(element.style), "style");
    } else if (element.type === "FactSet") {
      check(element.facts.length > 0, "facts");
      for (const fact of element.facts) check(typeof fact.title === "string" && typeof fact.value === "string", "fact");
    } else problems.push(`unknown element ${element.type}`);
  }
  check((card.actions ?? []).length <= 6, "at most 6 actions");
  for (const action of card.actions ?? []) {
    check(action.type === "Action.OpenUrl", "Action.OpenUrl");
    check(typeof action.title === "string" && action.title.length > 0, "action title");
    check(typeof action.url === "string" && action.url.startsWith("https://"), "action url");
    check(action.style === undefined || ["default", "positive", "destructive"].includes(action.style), "action style");
  }
  return problems;
}

// Google Chat, cardsV2 (Card, Section, Widget, ButtonList, OnClick.openLink): a message of at most
// 32,000 bytes; at most 100 widgets per card; each widget is exactly one kind; a header has a title.
function googleChatProblems(body: Json, raw: string): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => ok || problems.push(what);
  check(bytes(raw) <= 32_000, "size");
  check(typeof body.text === "string", "text fallback");
  check(body.cardsV2?.length === 1 && typeof body.cardsV2[0].cardId === "string", "cardsV2");
  const card = body.cardsV2?.[0]?.card ?? {};
  check(typeof card.header?.title === "string" && card.header.title.length > 0, "header title");
  let widgets = 0;
  for (const section of card.sections ?? []) {
    check(section.widgets?.length > 0, "section widgets");
    for (const widget of section.widgets ?? []) {
      widgets++;
      const kinds = Object.keys(widget);
      check(kinds.length === 1 && ["textParagraph", "decoratedText", "buttonList"].includes(kinds[0]!), "widget kind");
      if (widget.textParagraph) check(typeof widget.textParagraph.text === "string", "textParagraph");
      if (widget.decoratedText) check(typeof widget.decoratedText.text === "string", "decoratedText");
      for (const button of widget.buttonList?.buttons ?? []) {
        check(typeof button.text === "string" && button.text.length > 0, "button text");
        check(button.onClick?.openLink?.url?.startsWith("https://"), "button openLink");
      }
    }
  }
  check(widgets <= 100, "at most 100 widgets");
  return problems;
}

// Discord, Embed Limits (Message resource): title 256, description 4,096, 25 fields (name 256, value
// 1,024), footer 2,048, 6,000 characters in all; a webhook without an application sends no link
// buttons (components); allowed_mentions { parse: [] } pings nobody.
function discordProblems(body: Json): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => ok || problems.push(what);
  check(JSON.stringify(body.allowed_mentions) === '{"parse":[]}', "allowed_mentions");
  check(body.components === undefined, "no components");
  check(body.embeds?.length === 1, "one embed");
  const e = body.embeds?.[0] ?? {};
  check(typeof e.title === "string" && e.title.length >= 1 && e.title.length <= 256, "title");
  check(typeof e.description === "string" && e.description.length <= 4096, "description");
  check(e.fields.length <= 25, "fields");
  for (const f of e.fields) {
    check(f.name.length >= 1 && f.name.length <= 256, "field name");
    check(f.value.length >= 1 && f.value.length <= 1024, "field value");
  }
  check(e.footer.text.length <= 2048, "footer");
  const total =
    e.title.length +
    e.description.length +
    e.footer.text.length +
    e.fields.reduce((n: number, f: Json) => n + f.name.length + f.value.length, 0);
  check(total <= 6000, `total ${total}`);
  check(Number.isInteger(e.color) && e.color >= 0 && e.color <= 0xffffff, "color");
  return problems;
}

// ntfy, "Publishing": headers Title, Priority (1-5), Tags, Click, Actions (at most 3; view actions
// have a label and a URL); header values are ASCII (non-ASCII RFC 2047-encoded); a body above the
// default message-size-limit (4,096 bytes) becomes an attachment.
function ntfyProblems(headers: Record<string, string>, body: string): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => ok || problems.push(what);
  for (const [name, value] of Object.entries(headers)) check(/^[\x20-\x7e]*$/.test(value), `header ${name} is ASCII`);
  check(["1", "2", "3", "4", "5"].includes(headers.priority!), "priority");
  check(decodeHeader(headers.title!).length > 0, "title");
  check(bytes(body) <= 4096, "body size");
  if (headers.actions) {
    const actions = JSON.parse(headers.actions) as Json[];
    check(actions.length <= 3, "at most 3 actions");
    for (const a of actions) check(a.action === "view" && a.label && a.url.startsWith("https://"), "view action");
  }
  return problems;
}

function problems(type: ChannelType, overrides: Partial<ChannelReminder> = {}): string[] {
  const { headers, body } = build(type, overrides);
  if (type === "ntfy") return ntfyProblems(headers, body);
  expect(headers["content-type"]).toBe("application/json; charset=utf-8");
  const json = JSON.parse(body);
  const found =
    type === "slack"
      ? slackProblems(json)
      : type === "teams"
        ? teamsProblems(json, body)
        : type === "google_chat"
          ? googleChatProblems(json, body)
          : discordProblems(json);
  for (const s of strings(json))
    if (!s.isWellFormed()) found.push(`lone surrogate in ${JSON.stringify(s).slice(0, 40)}`);
  return found;
}

/** Everything a reader of the message sees, as one string (ntfy: the decoded headers and the body). */
function shown(type: ChannelType, overrides: Partial<ChannelReminder> = {}): string {
  const { headers, body } = build(type, overrides);
  if (type === "ntfy") {
    const actions = headers.actions ? strings(JSON.parse(headers.actions)) : [];
    return [...Object.values(headers).map(decodeHeader), ...actions, body].join("\n");
  }
  return strings(JSON.parse(body)).join("\n");
}

describe("channel messages: content, in English, Arabic and German", () => {
  const cases = [
    { tag: "en", date: "03.12.2026", when: "in 3 days", for: "For" },
    { tag: "ar", date: "03.12.2026", when: "خلال 3 أيام", for: "موجّه إلى" },
    { tag: "de", date: "03.12.2026", when: "in 3 Tagen", for: "Für" },
  ];
  for (const type of CHANNEL_TYPES) {
    for (const c of cases) {
      it(`${type} in ${c.tag}: valid, with the item, date, company, recipient and the action pages`, () => {
        const speech = speechFor(c.tag);
        expect(problems(type, { speech })).toEqual([]);
        const text = shown(type, { speech });
        for (const part of ["Anna Smith", "Acme Ltd", "Jana Weber", c.when, c.for]) expect(text).toContain(part);
        expect(text).toMatch(/03\.12\.2026/);
        const labels = ["email.link.acknowledge", "email.link.complete", "email.link.snooze"] as const;
        for (const key of labels) expect(text).toContain(t(speech.language, key));
        for (const url of [links.acknowledge, links.complete, links.snooze]) expect(text).toContain(url);
        if (type !== "ntfy") expect(text).toContain(links.renew);
        expect(text).toContain(page);
      });
    }
  }

  it("Teams marks the Arabic card right-to-left, and only it", () => {
    expect(parsed("teams", { speech: speechFor("ar") }).attachments[0].content.rtl).toBe(true);
    expect(parsed("teams").attachments[0].content.rtl).toBeUndefined();
  });

  it("offers renew for an expiration only", () => {
    for (const type of ["slack", "teams", "google_chat", "discord"] as const) {
      expect(shown(type, { itemType: "due" })).not.toContain(links.renew);
      expect(shown(type, { itemType: "due" })).toContain(links.complete);
    }
  });

  it("uses the company's template: subject as the title and fallback, intro, footer", () => {
    const template = {
      subject: "Heads up: {item.title} {item.when}",
      intro: "Team,\n{item.title} is due.",
      footer: "— {company.name} facilities",
    };
    expect(parsed("slack", { template }).text).toBe("Heads up: Anna Smith in 3 days");
    expect(parsed("google_chat", { template }).text).toBe("Heads up: Anna Smith in 3 days");
    expect(decodeHeader(build("ntfy", { template }).headers.title!)).toBe("Heads up: Anna Smith in 3 days");
    for (const type of CHANNEL_TYPES) {
      expect(problems(type, { template })).toEqual([]);
      expect(shown(type, { template })).toContain("Anna Smith is due.");
      expect(shown(type, { template })).toContain("Acme Ltd facilities");
    }
  });

  it("without a recipient, names nobody; without notes, shows no notes", () => {
    for (const type of CHANNEL_TYPES) {
      const text = shown(type, { recipientName: null, notes: null });
      expect(problems(type, { recipientName: null, notes: null })).toEqual([]);
      expect(text).not.toContain("Jana");
      expect(text).not.toContain("Notes:");
    }
  });
});

describe("channel messages: without links", () => {
  for (const type of CHANNEL_TYPES) {
    it(`${type}: valid, with no button, link or action and no note about them`, () => {
      expect(problems(type, { links: null })).toEqual([]);
      const text = shown(type, { links: null });
      expect(text).not.toContain("https://");
      expect(text).not.toContain(t("en", "channel.links_note"));
      expect(text).toContain("Anna Smith");
    });
  }
  it("has no actions block, card actions, button list or ntfy Actions/Click", () => {
    expect(parsed("slack", { links: null }).blocks.some((b: Json) => b.type === "actions")).toBe(false);
    expect(parsed("teams", { links: null }).attachments[0].content.actions).toBeUndefined();
    expect(JSON.stringify(parsed("google_chat", { links: null }))).not.toContain("buttonList");
    expect(parsed("discord", { links: null }).embeds[0].url).toBeUndefined();
    const { headers } = build("ntfy", { links: null });
    expect(headers.actions).toBeUndefined();
    expect(headers.click).toBeUndefined();
  });
});

describe("channel messages: hostile text", () => {
  const hostile = {
    itemTitle:
      "@everyone <!channel> <@U123> *bold* [click](https://evil.example) <script>alert(1)</script> \u202eevil\u2066",
    companyName: "<users/all> & Co `x` ~~s~~ #h",
    recipientName: "@here <b>Jana</b>",
    notes: "[phish](https://evil.example)\n<script>x</script>\n\u202eoverride",
  };
  for (const type of CHANNEL_TYPES) {
    it(`${type}: still valid; no bidi control survives`, () => {
      expect(problems(type, hostile)).toEqual([]);
      expect(build(type, hostile).body).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
      expect(shown(type, hostile)).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
    });
  }

  it("Slack: the user's <, > and & are escaped (no mention, link or markup)", () => {
    // mrkdwn texts and the fallback: plain_text (the header, buttons) is never parsed for markup.
    const json = parsed("slack", hostile);
    const mrkdwn = (value: unknown): string[] =>
      Array.isArray(value)
        ? value.flatMap(mrkdwn)
        : value && typeof value === "object"
          ? (value as Json).type === "mrkdwn"
            ? [(value as Json).text]
            : Object.values(value).flatMap(mrkdwn)
          : [];
    const body = [json.text, ...mrkdwn(json.blocks)].join("\n");
    expect(body).toContain("@everyone");
    expect(body).not.toContain("<!channel>");
    expect(body).not.toContain("<@U123>");
    expect(body).not.toContain("<script>");
    expect(body).toContain("&lt;!channel&gt;");
    expect(body).toContain("&lt;users/all&gt; &amp; Co");
  });

  it("Teams: the user's Markdown is escaped (no link, no emphasis)", () => {
    const body = build("teams", hostile).body;
    expect(body).not.toContain("[click](https://evil.example)");
    expect(body).toContain("\\\\[click\\\\](https://evil.example)");
    expect(body).toContain("\\\\*bold\\\\*");
  });

  it("Google Chat: card text is HTML-escaped; the fallback cannot mention", () => {
    const json = parsed("google_chat", hostile);
    // The header's title is plain text in Chat; the widgets' texts take its HTML subset.
    const card = JSON.stringify(json.cardsV2[0].card.sections);
    expect(card).not.toContain("<script>");
    expect(card).not.toContain("<b>Jana</b>");
    expect(card).toContain("&lt;script&gt;");
    expect(json.text).not.toMatch(/[<>]/);
    const chatWithUsers = parsed("google_chat", {
      ...hostile,
      template: { subject: "<users/all> {item.title}", intro: null, footer: null },
    });
    expect(chatWithUsers.text).not.toContain("<users/all>");
  });

  it("Discord: nobody is pinged and the user's Markdown is escaped", () => {
    const json = parsed("discord", hostile);
    expect(json.allowed_mentions).toEqual({ parse: [] });
    const embed = JSON.stringify(json.embeds);
    expect(embed).not.toContain("[click](https://evil.example)");
    expect(embed).not.toContain("[phish](https://evil.example)");
    expect(embed).toContain("\\\\[phish\\\\]");
    expect(embed).not.toContain("<@U123>");
  });

  it("ntfy: header values carry no line break, whatever the title", () => {
    const { headers } = build("ntfy", { itemTitle: "a\r\nX-Injected: 1\n\nbody" });
    for (const value of Object.values(headers)) expect(value).not.toMatch(/[\r\n]/);
    expect(decodeHeader(headers.title!)).toContain("a X-Injected: 1 body");
  });
});

describe("channel messages: limits", () => {
  const long = {
    itemTitle: "T".repeat(10_000),
    companyName: "C".repeat(10_000),
    recipientName: "R".repeat(10_000),
    documentType: "D".repeat(10_000),
    notes: `${"n".repeat(9_000)}\n${"<&>".repeat(1000)}`,
    template: { subject: "S".repeat(5000), intro: `{item.title} ${"i".repeat(5000)}`, footer: "*".repeat(5000) },
  };
  // Emoji are two UTF-16 code units each: a cut must never leave half of one.
  const emoji = { itemTitle: "😀".repeat(10_000), notes: "👍".repeat(10_000), companyName: "🏢".repeat(500) };
  for (const type of CHANNEL_TYPES) {
    for (const [name, overrides] of [
      ["10,000-character texts", long],
      ["10,000 emoji", emoji],
    ] as const) {
      it(`${type}: ${name} are cut to the limits, with an ellipsis`, () => {
        expect(problems(type, overrides)).toEqual([]);
        expect(shown(type, overrides)).toContain("…");
        const { body, headers } = build(type, overrides);
        expect(bytes(body) + bytes(JSON.stringify(headers))).toBeLessThan(32_000);
      });
    }
  }

  it("Discord keeps the embed within 6,000 characters: every text escaping to twice its length, long action URLs", () => {
    const starred = {
      links: linksOfPage(`https://api.test/${"p".repeat(600)}/r/token`),
      itemTitle: "*".repeat(10_000),
      companyName: "_".repeat(10_000),
      recipientName: "~".repeat(10_000),
      documentType: "`".repeat(10_000),
      notes: "|".repeat(10_000),
      template: { subject: null, intro: "#".repeat(5000), footer: ">".repeat(5000) },
    };
    expect(problems("discord", starred)).toEqual([]);
    expect(parsed("discord", starred).embeds[0].description.endsWith("…")).toBe(true);
  });

  it("ntfy cuts its body to 4,096 bytes, notes last", () => {
    const { body } = build("ntfy", { notes: "é".repeat(5000) });
    expect(bytes(body)).toBeLessThanOrEqual(NTFY_LIMITS.bodyBytes);
    expect(body.endsWith("…")).toBe(true);
    expect(body).toContain("Acme Ltd");
  });
});

describe("ntfy priority and tags: how near the date is", () => {
  const at = (expiryDate: string) => build("ntfy", { expiryDate }).headers;
  it.each([
    ["2026-11-20", "5", "rotating_light"],
    ["2026-11-30", "5", "rotating_light"],
    ["2026-12-01", "4", "warning"],
    ["2026-12-03", "4", "warning"],
    ["2026-12-04", "3", "hourglass_flowing_sand"],
    ["2026-12-07", "3", "hourglass_flowing_sand"],
    ["2026-12-08", "2", "date"],
  ])("dated %s (today 2026-11-30): priority %s, tag %s", (date, priority, tag) => {
    expect(at(date).priority).toBe(priority);
    expect(at(date).tags).toBe(tag);
  });
  it("sends the Actions JSON in ASCII, other characters escaped (ntfy before 2.5 decodes no RFC 2047 there)", () => {
    const { headers } = build("ntfy", { speech: speechFor("ar") });
    expect(headers.actions).toMatch(/^\[[\x20-\x7e]+\]$/);
    expect(headers.actions).not.toContain("=?");
    expect(JSON.parse(headers.actions!).map((a: Json) => a.label)).toEqual([
      t("ar", "email.link.acknowledge"),
      t("ar", "email.link.complete"),
      t("ar", "email.link.snooze"),
    ]);
  });

  it("has at most 3 actions: acknowledge, complete, snooze; the page is the Click", () => {
    const { headers } = build("ntfy");
    const actions = JSON.parse(headers.actions!);
    expect(actions.map((a: Json) => a.url)).toEqual([links.acknowledge, links.complete, links.snooze]);
    expect(headers.click).toBe(page);
  });
});

describe("text cutting helpers", () => {
  it("headerValue: ASCII as is; otherwise RFC 2047 words of at most 75 characters, each whole UTF-8", () => {
    expect(headerValue("Plain title")).toBe("Plain title");
    expect(headerValue("=?x")).toMatch(/^=\?UTF-8\?B\?/);
    const value = `تذكير ${"😀".repeat(40)} Für`;
    const encoded = headerValue(value);
    for (const word of encoded.split(" ")) {
      expect(word.length).toBeLessThanOrEqual(75);
      expect(() => decodeHeader(word)).not.toThrow();
    }
    expect(decodeHeader(encoded)).toBe(value);
  });

  it("clip: at most max UTF-16 units, never half a surrogate pair or an escape, … when cut", () => {
    expect(clip("abc", 3)).toBe("abc");
    expect(clip("abcd", 3)).toBe("ab…");
    expect(clip("😀😀😀", 4)).toBe("😀…");
    expect(clip("😀😀😀", 5)).toBe("😀😀…");
    expect(clip("a<b", 5, slackEscape)).toBe("a…");
    expect(clip("a<b", 6, slackEscape)).toBe("a&lt;b");
    expect(clip("a<b", 7, slackEscape)).toBe("a&lt;b");
    for (let max = 1; max < 12; max++) {
      const out = clip("x😀<y😀z", max, slackEscape);
      expect(out.length).toBeLessThanOrEqual(max);
      expect(out.isWellFormed()).toBe(true);
      expect(out).not.toMatch(/&(?!lt;)|&l?t?$/);
    }
    expect(clipBytes("éééé", 7)).toBe("éé…");
  });
});
