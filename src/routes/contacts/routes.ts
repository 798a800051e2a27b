import { getDb } from "../../db/client";
import { ok, okMessage } from "../../lib/respond";
import { MessageEnvelope, createRouter, envelope, errorResponses, idParam, jsonBody, jsonResponse, scopedRoute } from "../../lib/openapi";
import { contactOutput, createContact, deleteContact, getContact, listContacts, updateContact } from "./queries";
import { ContactListEnvelope, ContactSchema, CreateContactSchema, ListContactsQuery, UpdateContactSchema } from "./schemas";

const tags = ["Contacts"];
const ContactParams = idParam("contact_id");
const ContactEnvelope = envelope(ContactSchema, "ContactEnvelope");

export const contactsRouter = createRouter();

contactsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contacts",
    scope: "contacts:read",
    tags,
    summary: "List contacts",
    description: "Ordered by contact_id ascending. `meta.total` counts every match, not just this page.",
    request: { query: ListContactsQuery },
    responses: { 200: jsonResponse(ContactListEnvelope, "A page of contacts"), 400: errorResponses.badRequest },
  }),
  async (c) => {
    const query = c.req.valid("query");
    const { rows, total } = await listContacts(getDb(c.env.DB), c.var.auth.companyId, query);
    return ok(c, rows.map(contactOutput), { meta: { total, limit: query.limit, offset: query.offset } });
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/contacts",
    scope: "contacts:write",
    tags,
    summary: "Create a contact",
    description:
      "Without groupid the contact joins the default group of its department (if there is one); without deptid it goes to the group's department, else the company's default department. Email is unique per company, case-insensitively. Refused with 400 when the company's contacts_limit is reached.",
    request: { body: jsonBody(CreateContactSchema) },
    responses: {
      201: jsonResponse(ContactEnvelope, "Contact created"),
      400: errorResponses.badRequest,
      409: errorResponses.conflict,
      415: errorResponses.unsupportedMediaType,
    },
  }),
  async (c) => {
    const row = await createContact(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("json"));
    return ok(c, contactOutput(row), { msg: "Contact created", status: 201 });
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contacts/{contact_id}",
    scope: "contacts:read",
    tags,
    summary: "Get a contact",
    request: { params: ContactParams },
    responses: { 200: jsonResponse(ContactEnvelope, "The contact"), 400: errorResponses.badRequest, 404: errorResponses.notFound },
  }),
  async (c) => {
    const row = await getContact(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("param").contact_id);
    return ok(c, contactOutput(row));
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/contacts/{contact_id}",
    scope: "contacts:write",
    tags,
    summary: "Update a contact",
    description:
      "At least one field. `countryid` takes an ISO 3166-1 alpha-2 code and sets both iso and country_code (its dialling code); country_code and iso may also be sent, together. A new groupid moves the contact into that group's department; 0 takes it out of its group.",
    request: { params: ContactParams, body: jsonBody(UpdateContactSchema) },
    responses: {
      200: jsonResponse(ContactEnvelope, "Contact updated"),
      400: errorResponses.badRequest,
      404: errorResponses.notFound,
      409: errorResponses.conflict,
      415: errorResponses.unsupportedMediaType,
    },
  }),
  async (c) => {
    const row = await updateContact(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("param").contact_id, c.req.valid("json"));
    return ok(c, contactOutput(row), { msg: "Contact updated" });
  },
);

contactsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/contacts/{contact_id}",
    scope: "contacts:write",
    tags,
    summary: "Delete a contact",
    request: { params: ContactParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Contact deleted"), 400: errorResponses.badRequest, 404: errorResponses.notFound },
  }),
  async (c) => {
    await deleteContact(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("param").contact_id);
    return okMessage(c, "Contact deleted");
  },
);
