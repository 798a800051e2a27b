// A reminder email as its recipient gets it, and the pages its links open: the email captured from
// the company clock's transport when a real alarm fires it, the pages fetched through the Worker's
// own fetch as a browser would (GET, and forms posted as application/x-www-form-urlencoded).
import { exports } from "cloudflare:workers";
import {
  createExecutionContext,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import worker from "../../../src/index";
import type { OutgoingEmail } from "../../../src/company-clock/reminder-delivery";
import type { CompanyClock } from "../../../src/company-clock/object";
import { clockFor } from "../../../src/company-clock/handoff/worker";
import { env } from "cloudflare:workers";
import { database } from "../../../src/db/client";
import { call } from "./http";

/** A reminder for the coming minutes, as POST /v1/items/{id}/reminders takes it. */
export function minutesAhead(minutes: number) {
  const at = new Date(Date.now() + minutes * 60_000);
  return { date: at.toISOString().slice(0, 10), hour: at.toISOString().slice(11, 16) };
}

/**
 * Fires a reminder of the item now (queued a few minutes ahead, moved into the past in the
 * company's clock, the alarm run) and answers the emails it sent, as the email binding got them.
 * `body`: more of the reminder (e.g. `contact_id`).
 */
export async function fireReminder(
  companyId: number,
  token: string,
  itemId: number,
  body: Record<string, unknown> = {},
): Promise<OutgoingEmail[]> {
  const created = await call("createItemReminder", `/v1/items/${itemId}/reminders`, {
    token,
    body: { ...minutesAhead(3), ...body },
  });
  if (created.status !== 201) throw new Error(`reminder: ${created.status} ${JSON.stringify(created.body)}`);
  const sent: OutgoingEmail[] = [];
  const stub = clockFor(env, companyId);
  let original: CompanyClock["transports"] | undefined;
  await runInDurableObject(stub, (instance: CompanyClock, state) => {
    original = instance.transports;
    instance.transports = {
      ...original,
      email: async (message, delivery) => (sent.push(message), original!.email(message, delivery)),
    };
    state.storage.sql.exec(
      "UPDATE reminders SET due_at = ? WHERE reminder_id = ?",
      Date.now() - 1000,
      created.body.data.reminder_id,
    );
  });
  try {
    await runDurableObjectAlarm(stub);
  } finally {
    await runInDurableObject(stub, (instance: CompanyClock) => {
      instance.transports = original!;
    });
  }
  return sent;
}

export interface EmailLinks {
  page: string;
  acknowledge: string;
  complete: string;
  renew?: string;
  snooze: string;
}

const PAGE_LINK = /https:\/\/api\.test\/r\/[A-Za-z0-9_-]+(?:\/[a-z]+)?/g;

/** Every link to a recipient page in a text, in order. */
export const pageLinksIn = (text: string) => [...text.matchAll(PAGE_LINK)].map((m) => m[0]);

/** The links of an email's text part, by what they do (the page, then each action). */
export function linksOf(email: OutgoingEmail): EmailLinks {
  const links = pageLinksIn(email.text);
  const page = links.find((l) => !/\/r\/[^/]+\/[a-z]+$/.test(l));
  if (!page) throw new Error(`no page link in:\n${email.text}`);
  const action = (name: string) => links.find((l) => l === `${page}/${name}`);
  return {
    page,
    acknowledge: action("acknowledge")!,
    complete: action("complete")!,
    renew: action("renew"),
    snooze: action("snooze")!,
  };
}

export interface PageResult {
  status: number;
  headers: Headers;
  html: string;
}

async function read(response: Response): Promise<PageResult> {
  return { status: response.status, headers: response.headers, html: await response.text() };
}

/** GET of a page link, as a browser's navigation sends it. */
export async function getPage(url: string, headers: Record<string, string> = {}): Promise<PageResult> {
  return read(
    await exports.default.fetch(
      new Request(url, { headers: { Accept: "text/html,application/xhtml+xml,*/*;q=0.8", ...headers } }),
    ),
  );
}

/** A form posted as a browser posts it: to `url`, its fields url-encoded. */
export async function postForm(
  url: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<PageResult> {
  return read(
    await exports.default.fetch(
      new Request(url, {
        method: "POST",
        headers: { Accept: "text/html", "Content-Type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(fields).toString(),
      }),
    ),
  );
}

/** A request to the Worker with a modified environment (RATE_LIMITS, REQUEST_LOGS on). */
export async function fetchWithEnv(overrides: Record<string, unknown>, request: Request): Promise<PageResult> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    request as Request<unknown, IncomingRequestCfProperties>,
    { ...env, ...overrides } as Cloudflare.Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return read(response);
}

/** The forms of a page: where each posts and its fields (hidden ones with their values). */
export function formsOf(html: string): Array<{ method: string; action: string; fields: Record<string, string> }> {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)].map(([, attributes, inner]) => {
    const attr = (name: string, text: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(text)?.[1] ?? "";
    const fields: Record<string, string> = {};
    for (const [tag] of inner!.matchAll(/<(?:input|textarea)\b[^>]*>/g)) fields[attr("name", tag)] = attr("value", tag);
    return { method: attr("method", attributes!), action: attr("action", attributes!), fields };
  });
}

/** A database handle whose writes are a recipient's, as a reminder's page makes it. */
export const recipientDb = (contactId: number, requestId = crypto.randomUUID()) =>
  database(env.DB, {
    committed: 0,
    actor: {
      accountId: null,
      companyId: null,
      clientId: null,
      userId: null,
      requestId,
      operationId: "recipientAction",
      contactId,
      via: "link",
    },
  });
