import { refreshDigests } from "../../company-clock/handoff/worker";
import { conditionalRecord } from "../../lib/conditional";
import { created, done, ok, page, updated } from "../../lib/respond";
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
import {
  checkContactChannels,
  contactOutput,
  createContact,
  deleteContact,
  getContact,
  listContacts,
  updateContact,
} from "../../records/contacts";
import {
  ContactListEnvelope,
  ContactSchema,
  CreateContactSchema,
  ListContactsQuery,
  UpdateContactSchema,
} from "../../schemas/contacts";

const tags = ["Contacts"];
const ContactParams = idParam("contact_id");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const contactRecord = conditionalRecord({
  what: "Contact",
  table: "contacts",
  params: ContactParams,
  load: async (c, { contact_id }) => {
    const row = await getContact(c.var.db, c.var.companyId, contact_id);
    return { id: row.id, version: row.version, data: contactOutput(row) };
  },
});

export const contactsRouter = createRouter();

contactsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contacts",
    operationId: "listContacts",
    scope: "contacts:read",
    tags,
    summary: "List contacts",
    description: "Ordered by contact_id ascending. `meta.total` counts every match, not just this page.",
    request: { query: ListContactsQuery },
    responses: { 200: jsonResponse(ContactListEnvelope, "A page of contacts") },
  }),
  async (c) => {
    const result = await listContacts(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(contactOutput), meta: result.meta });
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/contacts",
    operationId: "createContact",
    scope: "contacts:write",
    tags,
    summary: "Create a contact",
    description:
      "Without groupid the contact joins the default group of its department (if there " +
      "is one); without deptid it goes to the group's department, else the company's " +
      "default department. Email is unique per company, case-insensitively. Refused " +
      "with 400 when the company's contacts_limit is reached.",
    request: { body: jsonBody(CreateContactSchema) },
    responses: {
      201: jsonResponse(resultEnvelope(ContactSchema, "ContactCreated"), "Contact created"),
      409: errorResponses.conflict,
    },
  }),
  async (c) => {
    const input = c.req.valid("json");
    checkContactChannels(c.env, input.channels);
    const row = await createContact(c.var.db, c.var.companyId, input);
    if (row.digest !== "off") await refreshDigests(c.env, c.var.companyId);
    return created(c, "Contact created", contactOutput(row));
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contacts/{contact_id}",
    operationId: "getContact",
    etag: true,
    scope: "contacts:read",
    tags,
    summary: "Get a contact",
    request: { params: ContactParams },
    responses: { 200: jsonResponse(dataEnvelope(ContactSchema, "ContactEnvelope"), "The contact") },
  }),
  async (c) => {
    const row = await getContact(c.var.db, c.var.companyId, c.req.valid("param").contact_id);
    return ok(c, contactOutput(row));
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/contacts/{contact_id}",
    operationId: "updateContact",
    precondition: contactRecord,
    scope: "contacts:write",
    tags,
    summary: "Update a contact",
    description:
      "At least one field. `countryid` takes an ISO 3166-1 alpha-2 code and sets both " +
      "iso and country_code (its dialling code); country_code and iso may also be " +
      "sent, together. A new groupid moves the contact into that group's department; 0 " +
      "takes it out of its group. `email_status` cannot be written: an unsubscribed contact is " +
      "re-subscribed only by its own choice, on the page of its email's unsubscribe link " +
      '(docs/api-notes.md, "Unsubscribe and re-subscription"); sending it is a 400.',
    request: { params: ContactParams, body: jsonBody(UpdateContactSchema) },
    responses: {
      200: jsonResponse(resultEnvelope(ContactSchema, "ContactUpdated"), "Contact updated"),
      409: errorResponses.conflict,
    },
  }),
  async (c) => {
    const input = c.req.valid("json");
    checkContactChannels(c.env, input.channels);
    const row = await updateContact(c.var.db, c.var.companyId, c.req.valid("param").contact_id, input);
    if (input.digest !== undefined || input.digest_weekday !== undefined) await refreshDigests(c.env, c.var.companyId);
    return updated(c, "Contact updated", contactOutput(row));
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/contacts/{contact_id}",
    operationId: "deleteContact",
    precondition: contactRecord,
    scope: "contacts:write",
    tags,
    summary: "Delete a contact",
    request: { params: ContactParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Contact deleted") },
  }),
  async (c) => {
    await deleteContact(c.var.db, c.var.companyId, c.req.valid("param").contact_id);
    return done(c, "Contact deleted");
  },
);
