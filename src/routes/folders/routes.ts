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
import { createFolder, deleteFolder, folderOutput, getFolder, listFolders, updateFolder } from "../../records/folders";
import {
  CreateFolderSchema,
  FolderListEnvelope,
  FolderSchema,
  ListFoldersQuery,
  UpdateFolderSchema,
} from "../../schemas/folders";

const tags = ["Folders"];
const FolderParams = idParam("folder_id");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const folderRecord = conditionalRecord({
  what: "Folder",
  table: "folders",
  params: FolderParams,
  load: async (c, { folder_id }) => {
    const row = await getFolder(c.var.db, c.var.companyId, folder_id);
    return { id: row.id, version: row.version, data: folderOutput(row) };
  },
});
const FolderEnvelope = dataEnvelope(FolderSchema, "FolderEnvelope");
const FolderResult = resultEnvelope(FolderSchema, "FolderResult");

const NAMES =
  "folder_name is unique among the folders of the same parent (the same folder, or " +
  "the top level), case-insensitively in every script (Unicode case folding: " +
  '"Straße" and "STRASSE" clash): a duplicate is 409. It may not contain "/", ' +
  "which separates the folders of an item's folder_path.";

export const foldersRouter = createRouter();

foldersRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/folders",
    operationId: "listFolders",
    scope: "folders:read",
    tags,
    summary: "List folders",
    description:
      "The caller's company's folders, ordered by folderid; the filters combine with " +
      "AND. parent_id=0 lists the top-level folders, parent_id=N the folders directly " +
      "in folder N (not deeper). q is a case-insensitive substring of folder_name. " +
      "Pagination is optional: limit defaults to 200 (the maximum); meta carries total " +
      "(every match), limit and offset.",
    request: { query: ListFoldersQuery },
    responses: { 200: jsonResponse(FolderListEnvelope, "Folders") },
  }),
  async (c) => {
    const result = await listFolders(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(folderOutput), meta: result.meta });
  },
);

foldersRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/folders",
    operationId: "createFolder",
    scope: "folders:write",
    tags,
    summary: "Create a folder",
    description: `parent_id is the folder to create it in (a folder of the company, else 400), or 0 (the default) for the top level. deptid defaults to the parent folder's department, or for a top-level folder to the company's default department; a department not in the company is 400. A sub-folder may be in another department than its parent. ${NAMES} The new folder is returned with msg.`,
    request: { body: jsonBody(CreateFolderSchema) },
    responses: { 201: jsonResponse(FolderResult, "Folder created"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await createFolder(c.var.db, c.var.companyId, c.req.valid("json"));
    return created(c, "Folder created", folderOutput(row));
  },
);

foldersRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/folders/{folder_id}",
    operationId: "getFolder",
    etag: true,
    scope: "folders:read",
    tags,
    summary: "Get a folder",
    description: "A folder of another company is 404.",
    request: { params: FolderParams },
    responses: { 200: jsonResponse(FolderEnvelope, "The folder") },
  }),
  async (c) => {
    const row = await getFolder(c.var.db, c.var.companyId, c.req.valid("param").folder_id);
    return ok(c, folderOutput(row));
  },
);

foldersRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/folders/{folder_id}",
    operationId: "updateFolder",
    precondition: folderRecord,
    scope: "folders:write",
    tags,
    summary: "Update or move a folder",
    description: `An empty body is 400 (No updatable fields provided). ${NAMES} A case-only rename of the folder itself is fine. Extension: parent_id moves the folder, with everything in it, under another folder of the company (400 otherwise) or to the top level (0); the folder's department does not change. Moving a folder into itself or into one of its own sub-folders (at any depth) is 400; the check runs inside the update itself, so concurrent moves cannot make a loop. A name that clashes with a folder at the destination is 409. The updated folder is returned with msg.`,
    request: { params: FolderParams, body: jsonBody(UpdateFolderSchema) },
    responses: { 200: jsonResponse(FolderResult, "Folder updated"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const row = await updateFolder(c.var.db, c.var.companyId, c.req.valid("param").folder_id, c.req.valid("json"));
    return updated(c, "Folder updated", folderOutput(row));
  },
);

foldersRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/folders/{folder_id}",
    operationId: "deleteFolder",
    precondition: folderRecord,
    scope: "folders:write",
    tags,
    summary: "Delete an empty folder",
    description:
      "Only an empty folder is deleted. A folder that holds sub-folders or items " +
      "(archived items included) is 409 with a message naming what it holds: move or " +
      "delete them first. The delete re-checks emptiness in the same statement, so a " +
      "sub-folder or item added concurrently makes it a 409 and nothing is deleted: no " +
      "sub-folder or item is ever left in a deleted folder.",
    request: { params: FolderParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Folder deleted"), 409: errorResponses.conflict },
  }),
  async (c) => {
    await deleteFolder(c.var.db, c.var.companyId, c.req.valid("param").folder_id);
    return done(c, "Folder deleted");
  },
);
