import { conditionalRecord, rowVersion } from "../../lib/conditional";
import type { Context } from "hono";
import type { AppBindings } from "../../env";
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
  createDocumentType,
  deleteDocumentType,
  documentTypeOutput,
  getDocumentType,
  listDocumentTypes,
  updateDocumentType,
  type Caller,
} from "../../records/document-types";
import {
  CreateDocumentTypeSchema,
  DocumentTypeInfoSchema,
  DocumentTypeListEnvelope,
  FIELD_TYPES,
  ListDocumentTypesQuery,
  MAX_FIELDS,
  MAX_SELECT_OPTIONS,
  UpdateDocumentTypeSchema,
} from "../../schemas/document-types";

const tags = ["Document types"];
const TypeParams = idParam("type_id");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const documentTypeRecord = conditionalRecord({
  what: "Document type",
  table: "document_types",
  params: TypeParams,
  load: async (c, { type_id }) => {
    const version = await rowVersion(c, "document_types", type_id);
    return {
      id: type_id,
      version,
      data: documentTypeOutput(await getDocumentType(c.var.db, c.var.companyId, type_id)),
    };
  },
});
const TypeEnvelope = dataEnvelope(DocumentTypeInfoSchema, "DocumentTypeEnvelope");
const TypeResult = resultEnvelope(DocumentTypeInfoSchema, "DocumentTypeResult");

const caller = (c: Context<AppBindings>): Caller => ({
  companyId: c.var.companyId,
  accountId: c.var.auth.accountId,
  userId: c.var.auth.userId,
});

const FIELD_RULES = `Custom fields: at most ${MAX_FIELDS} per type; field_type is one of ${FIELD_TYPES.join(", ")} (anything else is 400 naming them); field_name (at most 100 characters) is unique within the type case-insensitively (a repeated name is 400 naming it). A select field lists its options in field_data, one per line (LF or CRLF): each trimmed, blank lines ignored, 1 to ${MAX_SELECT_OPTIONS} options, unique case-insensitively; they are stored and returned joined by LF. For the other types field_data is an optional default value or hint (at most 2000 characters, multi-line allowed, not checked against the type). private is 0 (default) or 1. Each field's autonum is assigned by the service and never changes. The request body is at most 64 KiB, which bounds the total size of the field definitions.`;

export const documentTypesRouter = createRouter();

documentTypesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/document-types",
    operationId: "listDocumentTypes",
    scope: "doctypes:read",
    owner: true,
    tags,
    summary: "List document types",
    description:
      "Ordered by typeid, each with its fields. Pagination is optional: limit defaults " +
      "to 200 (the maximum). meta.total counts the types matching the filters; " +
      "meta.max_allowed is the account's ceiling (document types across all its " +
      "companies).",
    request: { query: ListDocumentTypesQuery },
    responses: { 200: jsonResponse(DocumentTypeListEnvelope, "Document types with their fields") },
  }),
  async (c) => {
    const result = await listDocumentTypes(c.var.db, caller(c), c.req.valid("query"));
    return page(c, { rows: result.rows.map(documentTypeOutput), meta: result.meta });
  },
);

documentTypesRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/document-types",
    operationId: "createDocumentType",
    scope: "doctypes:write",
    owner: true,
    tags,
    summary: "Create a document type",
    description: `doctype_name is unique within the company, case-insensitively: a duplicate is 409. deptid defaults to the company's default department (an unknown deptid is 400). isdefault=1 makes it the company's only default type (the previous default is unset). empid is the calling user. When the account already has meta.max_allowed document types (across all its companies) the request is 400 naming the ceiling; the check and the insert are one statement, so concurrent creates cannot overshoot. ${FIELD_RULES}`,
    request: { body: jsonBody(CreateDocumentTypeSchema) },
    responses: {
      201: jsonResponse(TypeResult, "Document type created, its fields carrying their autonum"),
      409: errorResponses.conflict,
    },
  }),
  async (c) => {
    const record = await createDocumentType(c.var.db, caller(c), c.req.valid("json"));
    return created(c, "Document type created", documentTypeOutput(record));
  },
);

documentTypesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/document-types/{type_id}",
    operationId: "getDocumentType",
    etag: true,
    scope: "doctypes:read",
    owner: true,
    tags,
    summary: "Get a document type",
    description: "The type with its fields. A type of another company is 404.",
    request: { params: TypeParams },
    responses: { 200: jsonResponse(TypeEnvelope, "The document type") },
  }),
  async (c) => {
    const record = await getDocumentType(c.var.db, c.var.companyId, c.req.valid("param").type_id);
    return ok(c, documentTypeOutput(record));
  },
);

documentTypesRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/document-types/{type_id}",
    operationId: "updateDocumentType",
    precondition: documentTypeRecord,
    scope: "doctypes:write",
    owner: true,
    tags,
    summary: "Update a document type",
    description: `An empty body is 400 "No updatable fields provided". A duplicate doctype_name in the company is 409. isdefault=1 makes it the company's only default; isdefault=0 unsets it (a company may have no default type). deptid (an extension) moves the type to another department of the company. fields, when given, replaces the whole list in one transaction: an entry with autonum updates that field (400 when it is not a field of this type), an entry without autonum adds a field (it gets a new autonum), fields left out are removed, [] removes all, and the array order becomes the fields' order; leave fields out to keep them unchanged. Each entry is a complete definition: field_data and private left out become "" and 0. ${FIELD_RULES}`,
    request: { params: TypeParams, body: jsonBody(UpdateDocumentTypeSchema) },
    responses: { 200: jsonResponse(TypeResult, "Document type updated"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const record = await updateDocumentType(
      c.var.db,
      c.var.companyId,
      c.req.valid("param").type_id,
      c.req.valid("json"),
    );
    return updated(c, "Document type updated", documentTypeOutput(record));
  },
);

documentTypesRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/document-types/{type_id}",
    operationId: "deleteDocumentType",
    precondition: documentTypeRecord,
    scope: "doctypes:write",
    owner: true,
    tags,
    summary: "Delete a document type",
    description:
      "Removes the type and its field definitions in one transaction. A type with " +
      "associated documents (docs_count > 0) is 400 and stays. The default type may be " +
      "deleted; the company then has no default type.",
    request: { params: TypeParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Document type deleted"), 409: errorResponses.conflict },
  }),
  async (c) => {
    await deleteDocumentType(c.var.db, c.var.companyId, c.req.valid("param").type_id);
    return done(c, "Document type deleted");
  },
);
