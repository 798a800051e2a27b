import { getDb } from "../../db/client";
import { ok, okMessage } from "../../lib/respond";
import { MessageEnvelope, createRouter, envelope, errorResponses, idParam, jsonBody, jsonResponse, scopedRoute } from "../../lib/openapi";
import { createGroup, deleteGroup, getGroup, groupOutput, listGroups, makeDefaultGroup, updateGroup } from "./queries";
import { ContactGroupSchema, CreateGroupSchema, GroupListEnvelope, ListGroupsQuery, UpdateGroupSchema } from "./schemas";

const tags = ["Contact groups"];
const GroupParams = idParam("group_id");
const GroupEnvelope = envelope(ContactGroupSchema, "ContactGroupEnvelope");

export const contactGroupsRouter = createRouter();

contactGroupsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contact-groups",
    scope: "contacts:read",
    tags,
    summary: "List contact groups",
    description: "Ordered by groupid. Pagination is optional: limit defaults to 200 (the maximum).",
    request: { query: ListGroupsQuery },
    responses: { 200: jsonResponse(GroupListEnvelope, "Contact groups with their contacts_count"), 400: errorResponses.badRequest },
  }),
  async (c) => {
    const query = c.req.valid("query");
    const { rows, total } = await listGroups(getDb(c.env.DB), c.var.auth.companyId, query);
    return ok(c, rows.map(groupOutput), { meta: { total, limit: query.limit, offset: query.offset } });
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/contact-groups",
    scope: "contacts:write",
    tags,
    summary: "Create a contact group",
    description: "group_name is unique within a department (case-insensitive): a duplicate is 409.",
    request: { body: jsonBody(CreateGroupSchema) },
    responses: {
      201: jsonResponse(GroupEnvelope, "Group created"),
      400: errorResponses.badRequest,
      409: errorResponses.conflict,
      415: errorResponses.unsupportedMediaType,
    },
  }),
  async (c) => {
    const row = await createGroup(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("json"));
    return ok(c, groupOutput(row), { msg: "Contact group created", status: 201 });
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contact-groups/{group_id}",
    scope: "contacts:read",
    tags,
    summary: "Get a contact group",
    request: { params: GroupParams },
    responses: { 200: jsonResponse(GroupEnvelope, "The group"), 400: errorResponses.badRequest, 404: errorResponses.notFound },
  }),
  async (c) => {
    const row = await getGroup(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("param").group_id);
    return ok(c, groupOutput(row));
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/contact-groups/{group_id}",
    scope: "contacts:write",
    tags,
    summary: "Update a contact group",
    description:
      "isdefault=1 makes it its department's default (the previous default is unset); isdefault=0 on the default group is 400, as is moving the default group to another department. Moving a group moves its contacts to the new department.",
    request: { params: GroupParams, body: jsonBody(UpdateGroupSchema) },
    responses: {
      200: jsonResponse(GroupEnvelope, "Group updated"),
      400: errorResponses.badRequest,
      404: errorResponses.notFound,
      409: errorResponses.conflict,
      415: errorResponses.unsupportedMediaType,
    },
  }),
  async (c) => {
    const row = await updateGroup(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("param").group_id, c.req.valid("json"));
    return ok(c, groupOutput(row), { msg: "Contact group updated" });
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/contact-groups/{group_id}",
    scope: "contacts:write",
    tags,
    summary: "Delete a contact group",
    description:
      "The default group cannot be deleted (400). The group's contacts are kept and move to their department's default group (or to no group, groupid 0, when the department has none).",
    request: { params: GroupParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Group deleted"), 400: errorResponses.badRequest, 404: errorResponses.notFound },
  }),
  async (c) => {
    await deleteGroup(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("param").group_id);
    return okMessage(c, "Contact group deleted");
  },
);

contactGroupsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/contact-groups/{group_id}/default",
    scope: "contacts:write",
    tags,
    summary: "Make a group its department's default",
    description: "No body. The department's previous default group is unset in the same transaction. 400 when the group's department is not a valid department of the company.",
    request: { params: GroupParams },
    responses: { 200: jsonResponse(GroupEnvelope, "Group is now the default"), 400: errorResponses.badRequest, 404: errorResponses.notFound },
  }),
  async (c) => {
    const row = await makeDefaultGroup(getDb(c.env.DB), c.var.auth.companyId, c.req.valid("param").group_id);
    return ok(c, groupOutput(row), { msg: "Default contact group set" });
  },
);
