import { conditionalRecord } from "../../lib/conditional";
import type { Context } from "hono";
import { COMPANY_SETTINGS, forgetReminders, refreshDigests, syncReminders } from "../../company-clock/handoff/worker";
import type { AppBindings } from "../../env";
import { created, done, ok, page, updated } from "../../lib/respond";
import {
  MessageEnvelope,
  createRouter,
  dataEnvelope,
  idParam,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  scopedRoute,
} from "../../lib/openapi";
import {
  companyOutput,
  createCompany,
  deleteCompany,
  detailOutput,
  getCompany,
  infoOf,
  listCompanies,
  makeDefaultCompany,
  updateCompany,
  updateCompanyInfo,
  updateCompanySettings,
  type Caller,
} from "../../records/companies";
import {
  CompanyDetailSchema,
  CompanyInfoResultSchema,
  CompanyListEnvelope,
  CompanySchema,
  CreateCompanySchema,
  UpdateCompanyInfoSchema,
  UpdateCompanySchema,
  UpdateCompanySettingsSchema,
} from "../../schemas/companies";

const tags = ["Companies"];
const CompanyParams = idParam("company_id");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const companyRecord = conditionalRecord({
  what: "Company",
  table: "companies",
  params: CompanyParams,
  load: async (c, { company_id }) => {
    const row = await getCompany(c.var.db, caller(c), company_id);
    return { id: row.id, version: row.version, data: detailOutput(row) };
  },
});
const DetailResult = resultEnvelope(CompanyDetailSchema, "CompanyDetailResult");

const caller = (c: Context<AppBindings>): Caller => ({
  accountId: c.var.auth.accountId,
  companyId: c.var.companyId,
  isOwner: c.var.auth.isOwner,
});

export const companiesRouter = createRouter();

companiesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/companies",
    operationId: "listCompanies",
    scope: "companies:read",
    tags,
    summary: "List the account's companies",
    description:
      "The account owner sees every company of the account; any other user sees only " +
      "the company its token belongs to. " +
      "`meta.limits` holds the account's ceilings and `meta.used` what its companies " +
      "have been allocated (the same account-wide figures for every caller). " +
      "Not paginated: an account holds at most `meta.limits.companies` companies. Ordered by companyid.",
    responses: { 200: jsonResponse(CompanyListEnvelope, "The companies with the account's limits and allocations") },
  }),
  async (c) => {
    const { rows, meta } = await listCompanies(c.var.db, caller(c));
    return page(c, { rows: rows.map(companyOutput), meta });
  },
);

companiesRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/companies",
    operationId: "createCompany",
    scope: "companies:write",
    owner: true,
    tags,
    summary: "Create a company",
    description:
      "The four quota fields are required. Each is checked against what remains of the " +
      "account's ceilings (the sums of every company's limits): " +
      "a request that exceeds one is 400 naming the remaining amount, e.g. `Only 350 " +
      "documents remain to allocate`. The check is part of the insert, " +
      "so concurrent creates cannot overshoot. `drive_space` is in GB and stored in " +
      "whole MB. The new company starts usable: a default department " +
      '"General" with a default contact group "General", and settings (timezone, ' +
      "date_format: optional here as an extension; default UTC and YYYY-MM-DD).",
    request: { body: jsonBody(CreateCompanySchema) },
    responses: { 201: jsonResponse(DetailResult, "Company created") },
  }),
  async (c) => {
    const row = await createCompany(c.var.db, caller(c), c.req.valid("json"));
    return created(c, "Company created", detailOutput(row));
  },
);

companiesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/companies/{company_id}",
    operationId: "getCompany",
    etag: true,
    scope: "companies:read",
    tags,
    summary: "Get a company with its profile and settings",
    description:
      "The owner may read any company of the account; another user only the company of " + "its token (404 otherwise).",
    request: { params: CompanyParams },
    responses: { 200: jsonResponse(dataEnvelope(CompanyDetailSchema, "CompanyDetailEnvelope"), "The company") },
  }),
  async (c) => {
    const row = await getCompany(c.var.db, caller(c), c.req.valid("param").company_id);
    return ok(c, detailOutput(row));
  },
);

companiesRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/companies/{company_id}",
    operationId: "updateCompany",
    precondition: companyRecord,
    scope: "companies:write",
    owner: true,
    tags,
    summary: "Update a company's name and quotas",
    description:
      "The same four fields as create, all required. A limit may not go below what the " +
      "company already holds (400), and the new allocation must fit " +
      "what remains of the account's ceilings next to the other companies (400 naming " +
      "the remaining amount). Checked inside the update.",
    request: { params: CompanyParams, body: jsonBody(UpdateCompanySchema) },
    responses: { 200: jsonResponse(DetailResult, "Company updated") },
  }),
  async (c) => {
    const row = await updateCompany(c.var.db, caller(c), c.req.valid("param").company_id, c.req.valid("json"));
    return updated(c, "Company updated", detailOutput(row));
  },
);

companiesRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/companies/{company_id}",
    operationId: "deleteCompany",
    precondition: companyRecord,
    scope: "companies:write",
    owner: true,
    tags,
    summary: "Delete a company",
    description:
      "The default company cannot be deleted (400). A company that holds only what the " +
      "service created for it (its default department and that " +
      "department's default group) is deleted together with those and with its API " +
      "clients, so no token of the company works afterwards (within " +
      "CLIENT_STATUS_TTL_SECONDS). A company that holds more (contacts, other " +
      "departments or groups, document types, items, files) is refused with " +
      "400 naming what is left; nothing is deleted.",
    request: { params: CompanyParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Company deleted") },
  }),
  async (c) => {
    const companyId = c.req.valid("param").company_id;
    await deleteCompany(c.var.db, caller(c), companyId);
    await forgetReminders(c.env, companyId);
    return done(c, "Company deleted");
  },
);

companiesRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/companies/{company_id}/info",
    operationId: "updateCompanyInfo",
    precondition: companyRecord,
    scope: "companies:write",
    owner: true,
    tags,
    summary: "Update a company's profile",
    description:
      "Any of the profile fields; those sent are merged into the stored profile, the " +
      "others are kept. An empty string clears a text field, 0 an id. " +
      "`id_country` is an ISO 3166-1 numeric code, `id_industry` and `id_size` codes " +
      "of the tables in docs/api-notes.md. The response lists the " +
      'spec\'s summary fields (unset ones as "" or 0).',
    request: { params: CompanyParams, body: jsonBody(UpdateCompanyInfoSchema) },
    responses: { 200: jsonResponse(resultEnvelope(CompanyInfoResultSchema, "CompanyInfoUpdated"), "Profile updated") },
  }),
  async (c) => {
    const row = await updateCompanyInfo(c.var.db, caller(c), c.req.valid("param").company_id, c.req.valid("json"));
    const info = infoOf(row);
    return updated(c, "Company profile updated", {
      companyid: row.id,
      business_name: info.business_name ?? "",
      city: info.city ?? "",
      id_country: info.id_country ?? 0,
      id_industry: info.id_industry ?? 0,
      id_size: info.id_size ?? 0,
    });
  },
);

companiesRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/companies/{company_id}/default",
    operationId: "setDefaultCompany",
    precondition: companyRecord,
    scope: "companies:write",
    owner: true,
    tags,
    summary: "Make a company the account's default",
    description:
      "No body. The previous default is unset in the same transaction: an account has " +
      "exactly one default company.",
    request: { params: CompanyParams },
    responses: {
      200: jsonResponse(resultEnvelope(CompanySchema, "DefaultCompanyResult"), "The company is now the default"),
    },
  }),
  async (c) => {
    const row = await makeDefaultCompany(c.var.db, caller(c), c.req.valid("param").company_id);
    return updated(c, "Default company set", companyOutput(row));
  },
);

companiesRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/companies/{company_id}/settings",
    operationId: "updateCompanySettings",
    precondition: companyRecord,
    scope: "companies:write",
    owner: true,
    tags,
    summary: "Update a company's settings (extension)",
    description:
      "`timezone`: an IANA time zone the runtime knows (reminders fire at their local " +
      "date and hour in it); `date_format`: one of the listed formats, " +
      "used for dates in reminder messages. At least one field. Changing the time zone " +
      "moves the company's queued reminders so that they keep " +
      "their local date and hour (one that thereby falls in the past fires at once).",
    request: { params: CompanyParams, body: jsonBody(UpdateCompanySettingsSchema) },
    responses: { 200: jsonResponse(DetailResult, "Settings updated") },
  }),
  async (c) => {
    const row = await updateCompanySettings(c.var.db, caller(c), c.req.valid("param").company_id, c.req.valid("json"));
    // A new time zone moves the company's queued reminders (they keep their local date and hour).
    await syncReminders(c.env, row.id, [COMPANY_SETTINGS]);
    const input = c.req.valid("json");
    if (input.digest_hour !== undefined || input.timezone !== undefined) await refreshDigests(c.env, row.id);
    return updated(c, "Company settings updated", detailOutput(row));
  },
);
