import {
  MessageEnvelope,
  createRouter,
  dataEnvelope,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  scopedRoute,
} from "../../lib/openapi";
import { created, done, ok, page, updated } from "../../lib/respond";
import {
  createSequence,
  deleteSequence,
  getSequence,
  listSequences,
  sequenceOutput,
  updateSequence,
} from "../../records/reminder-sequences";
import {
  CreateSequenceSchema,
  MAX_SEQUENCES,
  MAX_STEPS,
  ReminderSequenceListEnvelope,
  ReminderSequenceSchema,
  UpdateSequenceSchema,
} from "../../schemas/reminder-sequences";

const tags = ["Reminder sequences"];
const SequenceParams = idParam("seqid");
const SequenceEnvelope = dataEnvelope(ReminderSequenceSchema, "ReminderSequenceEnvelope");
const SequenceResult = resultEnvelope(ReminderSequenceSchema, "ReminderSequenceResult");

const LATER_ONLY =
  "A change applies to reminders queued from then on (new items, renewals, " +
  "rescheduling); reminders already queued stay as they are.";

export const reminderSequencesRouter = createRouter();

reminderSequencesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/reminder-sequences",
    operationId: "listReminderSequences",
    scope: "items:read",
    tags,
    summary: "List reminder sequences",
    description: `Every sequence of the company (at most ${MAX_SEQUENCES}, so there is no pagination): the default first, then by seqid. Each company starts with the default sequence "Standard" (30, 14, 7 and 1 days before the item's date and on the day, at 09:00).`,
    responses: { 200: jsonResponse(ReminderSequenceListEnvelope, "The company's reminder sequences") },
  }),
  async (c) => {
    const result = await listSequences(c.var.db, c.var.companyId);
    return page(c, { rows: result.rows.map(sequenceOutput), meta: result.meta });
  },
);

reminderSequencesRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/reminder-sequences",
    operationId: "createReminderSequence",
    scope: "items:write",
    tags,
    summary: "Create a reminder sequence",
    description: `Extension. name is unique within the company, case-insensitively: a duplicate is 409. reminders holds 1 to ${MAX_STEPS} steps. isdefault=1 makes it the company's only default (the previous default is unset in the same transaction). A company has at most ${MAX_SEQUENCES} sequences: one more is 400 (checked inside the insert, so concurrent creates cannot overshoot).`,
    request: { body: jsonBody(CreateSequenceSchema) },
    responses: { 201: jsonResponse(SequenceResult, "Sequence created"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await createSequence(c.var.db, c.var.companyId, c.req.valid("json"));
    return created(c, "Reminder sequence created", sequenceOutput(row));
  },
);

reminderSequencesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/reminder-sequences/{seqid}",
    operationId: "getReminderSequence",
    scope: "items:read",
    tags,
    summary: "Get a reminder sequence",
    description: "Extension. Another company's sequence is 404.",
    request: { params: SequenceParams },
    responses: { 200: jsonResponse(SequenceEnvelope, "The sequence") },
  }),
  async (c) => {
    const row = await getSequence(c.var.db, c.var.companyId, c.req.valid("param").seqid);
    return ok(c, sequenceOutput(row));
  },
);

reminderSequencesRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/reminder-sequences/{seqid}",
    operationId: "updateReminderSequence",
    scope: "items:write",
    tags,
    summary: "Update a reminder sequence",
    description: `Extension. name (unique case-insensitively: 409), reminders (replaces all the steps), isdefault. isdefault=1 makes it the company's default and unsets the previous default in the same transaction; isdefault=0 on the default sequence is 400 (a company keeps exactly one default: make another sequence the default instead). ${LATER_ONLY}`,
    request: { params: SequenceParams, body: jsonBody(UpdateSequenceSchema) },
    responses: { 200: jsonResponse(SequenceResult, "Sequence updated"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await updateSequence(c.var.db, c.var.companyId, c.req.valid("param").seqid, c.req.valid("json"));
    return updated(c, "Reminder sequence updated", sequenceOutput(row));
  },
);

reminderSequencesRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/reminder-sequences/{seqid}",
    operationId: "deleteReminderSequence",
    scope: "items:write",
    tags,
    summary: "Delete a reminder sequence",
    description:
      "Extension. The default sequence cannot be deleted (400). Items that use the " +
      "sequence move to the company's default sequence in the same transaction (the " +
      "message says how many); reminders already queued for them stay as they are, " +
      "later ones (renewals, rescheduling) follow the default sequence.",
    request: { params: SequenceParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Sequence deleted"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const moved = await deleteSequence(c.var.db, c.var.companyId, c.req.valid("param").seqid);
    const msg =
      moved === 0
        ? "Reminder sequence deleted"
        : `Reminder sequence deleted; ${moved} ${moved === 1 ? "item now uses" : "items now use"} the default sequence`;
    return done(c, msg);
  },
);
