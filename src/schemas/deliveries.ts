// GET /v1/deliveries: the company's problem deliveries (docs/bounces.md).
import { z } from "@hono/zod-openapi";
import { PROBLEM_STATES } from "../company-clock/store";
import { CHANNEL_TYPES } from "../channels/urls";
import { keysetPageQuery } from "../lib/schemas";
import { instant } from "./audit-log";

export const MAX_DELIVERY_PAGE = 100;

export const ListDeliveriesQuery = z.object({
  state: z
    .enum(PROBLEM_STATES, { error: `state must be one of: ${PROBLEM_STATES.join(", ")}` })
    .optional()
    .openapi({
      param: { name: "state", in: "query" },
      description: "Only deliveries in this state (default: every problem state)",
    }),
  since: instant("since").openapi({
    param: { name: "since", in: "query" },
    description: "Deliveries whose state changed at or after this instant (a date: its UTC midnight)",
    example: "2026-11-01T00:00:00Z",
  }),
  ...keysetPageQuery(MAX_DELIVERY_PAGE),
});
export type ListDeliveriesInput = z.infer<typeof ListDeliveriesQuery>;

export const ProblemDeliverySchema = z
  .object({
    reminder_id: z.number().int().openapi({ example: 311 }),
    channel: z.enum(["email", "sms", ...CHANNEL_TYPES]).openapi({
      example: "email",
      description: "email or sms to a contact, or a channel endpoint's platform (then `channel_endpoint` names it)",
    }),
    state: z.enum(PROBLEM_STATES).openapi({
      description:
        "bounced: a delivery status notification said it failed (hard or soft); complained: its " +
        "recipient reported it as spam (ARF); suppressed: not sent, the address is suppressed " +
        "for the company, or (a channel endpoint's) the channel is disabled or the contact it is for declined `chat`; " +
        "failed: every attempt to hand it to the provider failed, or (a channel endpoint's) the platform refused it",
    }),
    item: z.object({
      item_id: z.number().int().openapi({ example: 1201 }),
      title: z.string().nullable().openapi({ example: "Boiler inspection", description: "null: the item was deleted" }),
    }),
    // Inline objects, not $refs: a nullable reference is published as allOf without a type.
    contact: z
      .object({
        contact_id: z.number().int().openapi({ example: 42 }),
        name: z.string().nullable().openapi({ example: "Ada Lovelace", description: "null: the contact was deleted" }),
        address: z
          .string()
          .nullable()
          .openapi({ example: "ada@example.com", description: "Where it was (to be) sent" }),
      })
      .nullable()
      .openapi({ description: "The contact it went to; null for a delivery to a channel endpoint" }),
    channel_endpoint: z
      .object({
        channel_id: z.number().int().openapi({ example: 3 }),
        name: z
          .string()
          .nullable()
          .openapi({ example: "#facilities", description: "The channel's name when it was sent" }),
      })
      .nullable()
      .openapi({
        description: "Extension: the channel endpoint it was posted to (docs/channels.md); null: a contact's",
      }),
    reason: z.string().nullable().openapi({ example: "smtp; 550 5.1.1 user unknown" }),
    bounce: z
      .object({
        kind: z.enum(["hard", "soft", "complaint"]),
        status: z.string().openapi({ example: "5.1.1" }),
      })
      .nullable()
      .openapi({ description: "What the report said (bounced, complained); null otherwise" }),
    attempts: z.number().int().openapi({ example: 1 }),
    at: z.string().openapi({ example: "2026-11-27T08:00:04.120Z", description: "When the state was reached" }),
  })
  .openapi("ProblemDelivery");
export type ProblemDelivery = z.infer<typeof ProblemDeliverySchema>;

export const ProblemDeliveryPage = z
  .object({
    success: z.literal(true),
    data: z.array(ProblemDeliverySchema),
    meta: z.object({
      limit: z.number().int(),
      next_cursor: z
        .string()
        .nullable()
        .openapi({ description: "Pass as `cursor` for the next (older) page; null on the last page" }),
    }),
  })
  .openapi("ProblemDeliveryPage");
