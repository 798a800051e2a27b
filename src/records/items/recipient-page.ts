// The data of a recipient's page (docs/recipient-journey.md): what a link from a reminder email, or
// from a reminder posted to a channel endpoint, shows, read in one statement, and what its forms do,
// through the same guarded records functions every path uses (completion and renewal of
// src/records/items/queries.ts; acknowledgement and snooze of the contract's item actions).
import { sqlText, type Db } from "../../db/client";
import { ruleStateOf } from "../../db/rule-state";
import { isChannelVia, type ActionBy, type ChannelVia } from "../../lib/actors";
import { ApiError, badRequest } from "../../lib/errors";
import type { LinkClaims } from "../../lib/recipient-links";
import { parseRuleState, renewalDate, type RecurrenceRule } from "../../lib/recurrence";
import { DATE_FORMATS, DEFAULT_DATE_FORMAT, DEFAULT_TIME_ZONE, type DateFormat } from "../../lib/time";
import type { Snapshots } from "../../company-clock/handoff/snapshots";
import type { Acknowledgement } from "../../schemas/item-actions";
import { acknowledgeItem, occurrenceState, snoozeItem, type ActionResult, type ItemAction } from "./actions";
import { renewItem, setItemStatus } from "./queries";

export type ItemType = "exp" | "due" | "apt" | "evt";

/** Everything the page shows, as of one read. */
export interface RecipientView {
  companyId: number;
  accountId: number;
  companyName: string;
  timeZone: string;
  dateFormat: DateFormat;
  /** The account is moving to another shard: its records are read-only for a few minutes. */
  readOnly: boolean;
  /** The link's contact (0 for a channel's link) and its name. */
  contactId: number;
  contactName: string;
  /** A channel's link: the channel endpoint whose message carried it (its name and type); null: a contact's link. */
  channel: { id: number; name: string; type: ChannelVia } | null;
  /**
   * The recipient's `language` (the contact's, or the channel's) and the company's `settings.language`
   * (docs/languages.md): the page speaks the first set.
   */
  recipientLanguage: string | null;
  companyLanguage: string | null;
  item: {
    id: number;
    title: string;
    itemType: ItemType;
    expiryDate: string;
    notes: string;
    documentType: string | null;
    status: "pending" | "completed";
    archived: boolean;
    /** schedule_epoch: the occurrence. */
    epoch: number;
    rule: RecurrenceRule | null;
    /** The date completing it renews it to (its rule renews on completion, not archived, not ended); else null. */
    completionRenewsTo: string | null;
  };
  /** `byName`: the acknowledger's name (a contact's, or a channel's with `byPlatform`, its type). */
  acknowledgement: (Acknowledgement & { byName: string | null; byPlatform: ChannelVia | null }) | null;
  snoozedUntil: string | null;
}

const ITEM_TYPES: readonly string[] = ["exp", "due", "apt", "evt"];

/**
 * The page's one statement: the item with its document type, its company (name, settings, account
 * and whether it is moving) and the link's recipient, each of the company: the contact of a
 * contact's link, or the channel endpoint of a channel's (?4 not 0; disabled or not: its message was
 * sent); no row when any is gone. Bound to ?1 company, ?2 item, ?3 contact, ?4 channel. The same
 * statement for every token, valid or not.
 */
const VIEW_SQL = `SELECT i.title, i.item_type, i.expiry_date, i.notes, i.status, i.archived, i.schedule_epoch AS epoch,
    i.ack_epoch, i.acknowledgement, i.snooze_epoch, i.snoozed_until,
    CASE i.acknowledgement ->> '$.by.type'
      WHEN 'contact' THEN (SELECT trim(ac.first_name || ' ' || ac.last_name) FROM contacts ac
        WHERE ac.id = i.acknowledgement ->> '$.by.id' AND ac.company_id = ?1)
      WHEN 'channel' THEN (SELECT ach.name FROM channel_endpoints ach
        WHERE ach.id = i.acknowledgement ->> '$.by.id' AND ach.company_id = ?1) END AS ack_name,
    CASE WHEN i.acknowledgement ->> '$.by.type' = 'channel' THEN i.acknowledgement ->> '$.via' END AS ack_platform,
    ${sqlText(ruleStateOf("i"))} AS rule_state, d.name AS document_type,
    co.name AS company_name, co.account_id, json_extract(co.settings, '$.timezone') AS timezone,
    json_extract(co.settings, '$.date_format') AS date_format, a.shard_state,
    trim(c.first_name || ' ' || c.last_name) AS contact_name, ch.name AS channel_name, ch.type AS channel_type,
    CASE WHEN ?4 = 0 THEN c.language ELSE ch.language END AS recipient_language,
    json_extract(co.settings, '$.language') AS company_language
  FROM items i
  JOIN companies co ON co.id = i.company_id
  JOIN accounts a ON a.id = co.account_id
  LEFT JOIN contacts c ON ?4 = 0 AND c.id = ?3 AND c.company_id = ?1
  LEFT JOIN channel_endpoints ch ON ?4 <> 0 AND ch.id = ?4 AND ch.company_id = ?1
  LEFT JOIN document_types d ON d.id = i.document_type_id
  WHERE i.id = ?2 AND i.company_id = ?1 AND (c.id IS NOT NULL OR ch.id IS NOT NULL)`;

type ViewRow = {
  title: string;
  item_type: string;
  expiry_date: string;
  notes: string;
  status: string;
  archived: number;
  epoch: number;
  ack_epoch: number | null;
  acknowledgement: string | null;
  snooze_epoch: number | null;
  snoozed_until: string | null;
  ack_name: string | null;
  ack_platform: string | null;
  rule_state: string;
  document_type: string | null;
  company_name: string;
  account_id: number;
  timezone: string | null;
  date_format: string | null;
  shard_state: string;
  contact_name: string | null;
  channel_name: string | null;
  channel_type: string | null;
  recipient_language: string | null;
  company_language: string | null;
};

/** The view for a link's claims (read on `d1` whatever the token's state); null when the item, its company or the recipient is gone. */
export async function readRecipientView(d1: D1Database, claims: LinkClaims): Promise<RecipientView | null> {
  const row = await d1
    .prepare(VIEW_SQL)
    .bind(claims.companyId, claims.itemId, claims.contactId, claims.channelId)
    .first<ViewRow>();
  if (!row) return null;
  const channelType = row.channel_type;
  if (claims.channelId !== 0 && !isChannelVia(channelType)) return null;
  const { rule, archived } = parseRuleState(row.rule_state);
  const status = row.status === "completed" ? "completed" : "pending";
  const timeZone = row.timezone || DEFAULT_TIME_ZONE;
  const { acknowledgement, snoozed_until: snoozedUntil } = occurrenceState(
    {
      epoch: row.epoch,
      ackEpoch: row.ack_epoch,
      acknowledgement: row.acknowledgement,
      snoozeEpoch: row.snooze_epoch,
      snoozedUntil: row.snoozed_until,
    },
    () => timeZone,
  );
  return {
    companyId: claims.companyId,
    accountId: row.account_id,
    companyName: row.company_name,
    timeZone,
    dateFormat: (DATE_FORMATS as readonly string[]).includes(row.date_format ?? "")
      ? (row.date_format as DateFormat)
      : DEFAULT_DATE_FORMAT,
    readOnly: row.shard_state !== "active",
    contactId: claims.contactId,
    contactName: row.contact_name ?? "",
    channel:
      claims.channelId !== 0 && isChannelVia(channelType)
        ? { id: claims.channelId, name: row.channel_name ?? "", type: channelType }
        : null,
    recipientLanguage: row.recipient_language,
    companyLanguage: typeof row.company_language === "string" ? row.company_language : null,
    item: {
      id: claims.itemId,
      title: row.title,
      itemType: (ITEM_TYPES.includes(row.item_type) ? row.item_type : "exp") as ItemType,
      expiryDate: row.expiry_date,
      notes: row.notes,
      documentType: row.document_type,
      status,
      archived,
      epoch: row.epoch,
      rule,
      completionRenewsTo:
        status === "pending" && !archived && rule?.renewOn === "completed" ? renewalDate(rule, row.expiry_date) : null,
    },
    acknowledgement: acknowledgement && {
      ...acknowledgement,
      byName: row.ack_name || null,
      byPlatform: isChannelVia(row.ack_platform) ? row.ack_platform : null,
    },
    snoozedUntil,
  };
}

/** What a form asks for. */
export type LinkRequest =
  | { action: "acknowledge"; note: string | null }
  | { action: "complete" }
  | { action: "renew"; date: string }
  | { action: "snooze"; until: string };

/**
 * What came of it. `applied`: this request changed the item; `unchanged`: the item already was so
 * (a repeat, or another click that won), nothing written; `moved_on`: the link's occurrence is not
 * the item's any more (renewed since) or the item was archived, nothing written. `snapshot`: the
 * reminder state a completion or renewal wrote, for the company clock.
 */
export interface LinkOutcome {
  outcome: "applied" | "unchanged" | "moved_on";
  /** The date a completion renewed the item to, or a renewal moved it to. */
  renewedTo?: string | null;
  snapshot?: Snapshots | null;
  /** The page's data after the action, when the action's own answer tells all of it; else the page is read again. */
  view?: RecipientView;
}

/** Who a link acts as: the channel of a channel's link (`via` its type), else the contact (`via: link`). */
export function linkActor(view: RecipientView, claims: LinkClaims): Pick<ItemAction, "by" | "via"> {
  return view.channel
    ? { by: { type: "channel", id: view.channel.id }, via: view.channel.type }
    : { by: { type: "contact", id: claims.contactId }, via: "link" };
}

const sameActor = (a: Acknowledgement["by"], b: ActionBy) => a.type === b.type && a.id === b.id;

/**
 * The view after an acknowledgement or a snooze, from the state the action's write returned: no
 * second read. Undefined when it cannot tell (moved on, or acknowledged by another recipient whose
 * name it does not have).
 */
function viewAfter(view: RecipientView, claims: LinkClaims, result: ActionResult): RecipientView | undefined {
  if (result.outcome === "moved_on") return undefined;
  const { item } = result;
  const ack = item.acknowledgement;
  let byName: string | null = null;
  let byPlatform: ChannelVia | null = null;
  if (ack && ack.by.type !== "client") {
    if (sameActor(ack.by, linkActor(view, claims).by)) {
      byName = view.channel ? view.channel.name : view.contactName;
      byPlatform = view.channel?.type ?? null;
    } else if (view.acknowledgement?.at === ack.at) {
      byName = view.acknowledgement.byName;
      byPlatform = view.acknowledgement.byPlatform;
    } else return undefined;
  }
  return {
    ...view,
    item: {
      ...view.item,
      status: item.status === "completed" ? "completed" : "pending",
      archived: item.archived,
      epoch: item.epoch,
    },
    acknowledgement: ack && { ...ack, byName, byPlatform },
    snoozedUntil: item.snoozed_until,
  };
}

const conflictOf = (error: unknown) => error instanceof ApiError && error.status === 409;

/**
 * Carries out `request` for the link's recipient on the item as `view` read it. Every write is one
 * of the records functions with its own guards: of two requests sent together one applies and the
 * other finds the item changed (unchanged or moved on), whatever their order. A request that is
 * not valid for the item (a renewal date not after its date) throws a 400 naming the field.
 */
export async function actFromLink(
  db: Db,
  view: RecipientView,
  claims: LinkClaims,
  request: LinkRequest,
): Promise<LinkOutcome> {
  const { item } = view;
  if (item.epoch !== claims.epoch || item.archived) return { outcome: "moved_on" };
  const action: ItemAction = { ...linkActor(view, claims), occurrence: claims.epoch };
  switch (request.action) {
    case "acknowledge": {
      const done = await acknowledgeItem(db, view.companyId, item.id, { ...action, note: request.note });
      return { outcome: done.outcome, snapshot: done.snapshot, view: viewAfter(view, claims, done) };
    }
    case "snooze": {
      const done = await snoozeItem(db, view.companyId, item.id, { ...action, until: request.until });
      return { outcome: done.outcome, snapshot: done.snapshot, view: viewAfter(view, claims, done) };
    }
    case "complete": {
      if (item.status === "completed") return { outcome: "unchanged" };
      try {
        const done = await setItemStatus(
          db,
          view.companyId,
          0,
          item.id,
          "completed",
          { date: item.expiryDate },
          { onlyFromOther: true },
        );
        return { outcome: "applied", renewedTo: done.renewedTo, snapshot: done.snapshot };
      } catch (error) {
        if (!conflictOf(error)) throw error;
        // Lost to a request sent together: it completed the item, or completed and renewed it.
        const now = await readRecipientView(db.d1, claims);
        return { outcome: now && now.item.epoch === claims.epoch && !now.item.archived ? "unchanged" : "moved_on" };
      }
    }
    case "renew": {
      if (request.date <= item.expiryDate)
        throw badRequest(`date must be later than the item's date ${item.expiryDate}`);
      try {
        const renewed = await renewItem(db, view.companyId, 0, item.id, request.date, item.expiryDate);
        return { outcome: "applied", renewedTo: renewed.row.expiryDate, snapshot: renewed.snapshot };
      } catch (error) {
        if (!conflictOf(error)) throw error;
        return { outcome: "moved_on" };
      }
    }
  }
}
