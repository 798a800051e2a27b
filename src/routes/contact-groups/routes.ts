import { conditionalRecord, rowVersion } from "../../lib/conditional";
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
  createGroup,
  deleteGroup,
  getGroup,
  groupOutput,
  listGroups,
  makeDefaultGroup,
  updateGroup,
} from "../../records/contact-groups";
import {
  ContactGroupSchema,
  CreateGroupSchema,
  GroupListEnvelope,
  ListGroupsQuery,
  UpdateGroupSchema,
} from "../../schemas/contact-groups";

const tags = ["Contact groups"];
const GroupParams = idParam("group_id");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const groupRecord = conditionalRecord({
  what: "Contact group",
  table: "contact_groups",
  params: GroupParams,
  load: async (c, { group_id }) => {
    const version = await rowVersion(c, "contact_groups", group_id);
    return { id: group_id, version, data: groupOutput(await getGroup(c.var.db, c.var.companyId, group_id)) };
  },
});
const GroupEnvelope = dataEnvelope(ContactGroupSchema, "ContactGroupEnvelope");
const GroupResult = resultEnvelope(ContactGroupSchema, "ContactGroupResult");

export const contactGroupsRouter = createRouter();

contactGroupsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contact-groups",
    operationId: "listContactGroups",
    scope: "contacts:read",
    tags,
    summary: "List contact groups",
    description: "Ordered by groupid. Pagination is optional: limit defaults to 200 (the maximum).",
    request: { query: ListGroupsQuery },
    responses: { 200: jsonResponse(GroupListEnvelope, "Contact groups with their contacts_count") },
  }),
  async (c) => {
    const result = await listGroups(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(groupOutput), meta: result.meta });
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/contact-groups",
    operationId: "createContactGroup",
    scope: "contacts:write",
    tags,
    summary: "Create a contact group",
    description: "group_name is unique within a department (case-insensitive): a duplicate is 409.",
    request: { body: jsonBody(CreateGroupSchema) },
    responses: { 201: jsonResponse(GroupResult, "Group created"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await createGroup(c.var.db, c.var.companyId, c.req.valid("json"));
    return created(c, "Contact group created", groupOutput(row));
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contact-groups/{group_id}",
    operationId: "getContactGroup",
    etag: true,
    scope: "contacts:read",
    tags,
    summary: "Get a contact group",
    request: { params: GroupParams },
    responses: { 200: jsonResponse(GroupEnvelope, "The group") },
  }),
  async (c) => {
    const row = await getGroup(c.var.db, c.var.companyId, c.req.valid("param").group_id);
    return ok(c, groupOutput(row));
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/contact-groups/{group_id}",
    operationId: "updateContactGroup",
    precondition: groupRecord,
    scope: "contacts:write",
    tags,
    summary: "Update a contact group",
    description:
      "isdefault=1 makes it its department's default (the previous default is unset); " +
      "isdefault=0 on the default group is 400, as is moving the default group to " +
      "another department. Moving a group moves its contacts to the new department.",
    request: { params: GroupParams, body: jsonBody(UpdateGroupSchema) },
    responses: { 200: jsonResponse(GroupResult, "Group updated"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await updateGroup(c.var.db, c.var.companyId, c.req.valid("param").group_id, c.req.valid("json"));
    return updated(c, "Contact group updated", groupOutput(row));
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/contact-groups/{group_id}",
    operationId: "deleteContactGroup",
    precondition: groupRecord,
    scope: "contacts:write",
    tags,
    summary: "Delete a contact group",
    description:
      "The default group cannot be deleted (400). The group's contacts are kept and " +
      "move to their department's default group (or to no group, groupid 0, when the " +
      "department has none).",
    request: { params: GroupParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Group deleted"), 409: errorResponses.conflict },
  }),
  async (c) => {
    await deleteGroup(c.var.db, c.var.companyId, c.req.valid("param").group_id);
    return done(c, "Contact group deleted");
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/contact-groups/{group_id}/default",
    operationId: "setDefaultContactGroup",
    precondition: groupRecord,
    scope: "contacts:write",
    tags,
    summary: "Make a group its department's default",
    description:
      "No body. The department's previous default group is unset in the same " +
      "transaction. 400 when the group's department is not a valid department of the " +
      "company.",
    request: { params: GroupParams },
    responses: { 200: jsonResponse(GroupResult, "Group is now the default"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await makeDefaultGroup(c.var.db, c.var.companyId, c.req.valid("param").group_id);
    return updated(c, "Default contact group set", groupOutput(row));
  },
);
