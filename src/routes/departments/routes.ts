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
  createDepartment,
  deleteDepartment,
  departmentOutput,
  getDepartment,
  listDepartments,
  updateDepartment,
} from "../../records/departments";
import {
  CreateDepartmentSchema,
  DepartmentListEnvelope,
  DepartmentSchema,
  ListDepartmentsQuery,
  UpdateDepartmentSchema,
} from "../../schemas/departments";

const tags = ["Departments"];
const DepartmentParams = idParam("dept_id");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const departmentRecord = conditionalRecord({
  what: "Department",
  table: "departments",
  params: DepartmentParams,
  load: async (c, { dept_id }) => {
    const version = await rowVersion(c, "departments", dept_id);
    return { id: dept_id, version, data: departmentOutput(await getDepartment(c.var.db, c.var.companyId, dept_id)) };
  },
});
const DepartmentEnvelope = dataEnvelope(DepartmentSchema, "DepartmentEnvelope");
const DepartmentResult = resultEnvelope(DepartmentSchema, "DepartmentResult");

const COUNTERS =
  "docs_used, contacts_used and storage_used_kb are maintained counters " +
  "(contacts_used follows every contact insert, delete and move, including moves " +
  "of a contact group to another department).";

export const departmentsRouter = createRouter();

departmentsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/departments",
    operationId: "listDepartments",
    scope: "departments:read",
    owner: true,
    tags,
    summary: "List departments",
    description: `The caller's company's departments, ordered by deptid. Pagination is optional: limit defaults to 200 (the maximum). q is a case-insensitive substring of the name. ${COUNTERS}`,
    request: { query: ListDepartmentsQuery },
    responses: { 200: jsonResponse(DepartmentListEnvelope, "Departments with their usage counters") },
  }),
  async (c) => {
    const result = await listDepartments(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(departmentOutput), meta: result.meta });
  },
);

departmentsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/departments",
    operationId: "createDepartment",
    scope: "departments:write",
    owner: true,
    tags,
    summary: "Create a department",
    description:
      "dept_name is unique in the company, case-insensitively in every script: a " +
      "duplicate is 409. isdefault=1 makes it the company's default department and " +
      "unsets the previous one in the same transaction. The new department gets an " +
      'empty default contact group named "General" in the same transaction, so ' +
      "contacts placed in the department without a group land in a group.",
    request: { body: jsonBody(CreateDepartmentSchema) },
    responses: { 201: jsonResponse(DepartmentResult, "Department created"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await createDepartment(c.var.db, c.var.companyId, c.req.valid("json"));
    return created(c, "Department created", departmentOutput(row));
  },
);

departmentsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/departments/{dept_id}",
    operationId: "getDepartment",
    etag: true,
    scope: "departments:read",
    owner: true,
    tags,
    summary: "Get a department",
    description: `A department of another company is 404. ${COUNTERS}`,
    request: { params: DepartmentParams },
    responses: { 200: jsonResponse(DepartmentEnvelope, "The department") },
  }),
  async (c) => {
    const row = await getDepartment(c.var.db, c.var.companyId, c.req.valid("param").dept_id);
    return ok(c, departmentOutput(row));
  },
);

departmentsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/departments/{dept_id}",
    operationId: "updateDepartment",
    precondition: departmentRecord,
    scope: "departments:write",
    owner: true,
    tags,
    summary: "Update a department",
    description:
      "An empty body is 400 (No updatable fields provided). A new dept_name must be " +
      "unique in the company, case-insensitively (409); a case-only rename of the " +
      "department itself is fine. isdefault=1 makes it the company's default and " +
      "unsets the previous one in the same transaction; isdefault=0 on the current " +
      "default is 400, since a company keeps exactly one default department.",
    request: { params: DepartmentParams, body: jsonBody(UpdateDepartmentSchema) },
    responses: { 200: jsonResponse(DepartmentResult, "Department updated"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await updateDepartment(c.var.db, c.var.companyId, c.req.valid("param").dept_id, c.req.valid("json"));
    return updated(c, "Department updated", departmentOutput(row));
  },
);

departmentsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/departments/{dept_id}",
    operationId: "deleteDepartment",
    precondition: departmentRecord,
    scope: "departments:write",
    owner: true,
    tags,
    summary: "Delete a department",
    description:
      "The default department cannot be deleted (400). A department that still holds " +
      "records is 400 with a message naming them (contacts, contact groups other than " +
      "an empty default group, document types, folders, items, files): move or delete " +
      "them first. An empty department is deleted together with its empty default " +
      "contact group, in one transaction that re-checks both conditions, so a record " +
      "added concurrently makes the delete a 400 and nothing is deleted.",
    request: { params: DepartmentParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Department deleted"), 409: errorResponses.conflict },
  }),
  async (c) => {
    await deleteDepartment(c.var.db, c.var.companyId, c.req.valid("param").dept_id);
    return done(c, "Department deleted");
  },
);
