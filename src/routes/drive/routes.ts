import { createRoute } from "@hono/zod-openapi";
import { MAX_UPLOAD_BYTES, describeBytes } from "../../lib/body";
import {
  ApiErrorSchema,
  MessageEnvelope,
  OAuthErrorSchema,
  createRouter,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  dataEnvelope,
  scopedRoute,
  sharedParameters,
  z,
} from "../../lib/openapi";
import { requestTags } from "../../lib/conditional";
import { created, done, ok, page, updated } from "../../lib/respond";
import { humanSize } from "../../records/drive/format";
import {
  attachFile,
  createUploadSession,
  deleteFile,
  detachFile,
  fileOutput,
  getFile,
  listAttachments,
  listFiles,
  releaseAbandonedUploads,
  SESSION_RETENTION_SECONDS,
} from "../../records/drive/queries";
import {
  AttachFileSchema,
  AttachmentSchema,
  CreateUploadSchema,
  DriveFileListEnvelope,
  DriveFileSchema,
  FileParams,
  ListFilesQuery,
  MAX_ATTACHMENTS_PER_ITEM,
  MAX_FILE_NAME,
  UPLOAD_TOKEN_HEADER,
  UPLOAD_TOKEN_TTL_SECONDS,
  UploadSessionSchema,
  UploadedFileSchema,
} from "../../schemas/drive";
import { receiveUpload, serveFile } from "./storage";
import { bookmarkOnAnswer } from "../../db/session";
import { nudgeWebhooks } from "../../company-clock/handoff/worker";

const tags = ["Drive"];
const ItemParams = idParam("item_id");
const AttachmentParams = ItemParams.extend(FileParams.shape);
const AttachmentResult = resultEnvelope(AttachmentSchema, "AttachmentResult");

const text = (description: string) => ({ description, schema: { type: "string" as const } });
const binary = { "*/*": { schema: { type: "string" as const, format: "binary" } } };
const fileHeaders = {
  "Content-Type": text("The media type stored with the file"),
  "Content-Length": text("Bytes in this response"),
  "Content-Disposition": text("`attachment; filename=\"<ASCII fallback>\"; filename*=UTF-8''<percent-encoded name>`"),
  ETag: text("Strong ETag: the file's SHA-256 in quotes"),
  "Accept-Ranges": text("`bytes`"),
};

export const driveRouter = createRouter();

driveRouter.openAPIRegistry.registerComponent("securitySchemes", "uploadToken", {
  type: "apiKey",
  in: "header",
  name: UPLOAD_TOKEN_HEADER,
  description: `The single-use upload token from POST /v1/uploads, valid ${UPLOAD_TOKEN_TTL_SECONDS} seconds; only PUT /v1/uploads accepts it.`,
});

driveRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/uploads",
    operationId: "createUploadSession",
    scope: "drive:write",
    tags,
    summary: "Open an upload session",
    description: [
      `Returns a single-use upload token valid for ${UPLOAD_TOKEN_TTL_SECONDS} seconds and the URL to PUT the bytes to (PUT /v1/uploads on the host ` +
        "that was called). The token (256 random bits) is shown only here: the service " +
        "keeps only its SHA-256. It is bound to the company, the " +
        "user and this session's filename, content type, department and folder.",
      `\`filename\`: 1-${MAX_FILE_NAME} characters, trimmed and NFC-normalised; a path (\`/\` or \`\\\`), control characters, bidirectional ` +
        "control characters and names of only dots are refused with 400 (never silently " +
        "cut down to a base name). `deptid` and `folder_id` must be " +
        "in the caller's company (400 naming the field). The drive allocation is checked " +
        "by the PUT, which knows the size.",
      "Sent with `Cache-Control: no-store`: the response carries a credential.",
    ].join("\n\n"),
    request: { body: jsonBody(CreateUploadSchema) },
    responses: {
      201: {
        ...jsonResponse(resultEnvelope(UploadSessionSchema, "UploadSessionCreated"), "Upload session opened"),
        headers: { "Cache-Control": text("`no-store`") },
      },
    },
  }),
  async (c) => {
    // Clean-up of this company's abandoned uploads rides along (indexed; usually finds nothing).
    await releaseAbandonedUploads(c.var.db, c.env.FILES, c.var.companyId);
    const { token } = await createUploadSession(
      c.var.db,
      c.var.auth.shard,
      c.var.companyId,
      { userId: c.var.auth.userId, clientId: c.var.auth.clientId },
      c.req.valid("json"),
    );
    c.header("Cache-Control", "no-store");
    return created(c, "Upload session created", {
      upload_url: new URL("/v1/uploads", c.req.url).toString(),
      upload_token: token,
      method: "PUT" as const,
      token_header: UPLOAD_TOKEN_HEADER,
      expires_in: UPLOAD_TOKEN_TTL_SECONDS,
      max_bytes: MAX_UPLOAD_BYTES,
    });
  },
);

const json = jsonResponse;
driveRouter.openapi(
  createRoute({
    method: "put",
    path: "/v1/uploads",
    operationId: "uploadFileBytes",
    tags,
    summary: "Upload the file's bytes (upload token, no Authorization)",
    description: [
      `Authenticated only by the upload token in the \`${UPLOAD_TOKEN_HEADER}\` header; an \`Authorization\` header is ignored. The body is the ` +
        "raw bytes (any Content-Type is accepted and ignored: the session's content_type " +
        "is stored). The bytes stream into storage and are " +
        "never held in memory whole.",
      `\`Content-Length\` is required (411 without it; chunked bodies are not accepted). At most ${describeBytes(MAX_UPLOAD_BYTES)}: a larger ` +
        "Content-Length is 413 before anything is read. An empty file is accepted.",
      "A missing, malformed, unknown, spent or expired token is 401 `invalid_token` " +
        "(Shape A) and nothing is stored. The token is claimed " +
        "atomically together with the file's space: of two PUTs with one token, exactly " +
        "one proceeds. A token stays usable after a 411, 413 or " +
        "a drive-space refusal (nothing was sent to storage); once claimed it is spent, whatever happens next.",
      "Drive space: each file counts ceil(bytes / 1024) KB, at least 1 KB, against the " +
        "company's `drive_space_mb` × 1024 KB; uploads in progress " +
        "hold their space, so concurrent uploads cannot overshoot. A file that does not " +
        "fit is 400 naming the free space. The company's " +
        "`drive_space_used_kb` and the department's `storage_used_kb` change only when " +
        "the file is stored, exactly by its KB.",
      "A body shorter or longer than its Content-Length, or a broken connection, is " +
        "400; whatever reached storage is deleted and the space " +
        "given back.",
      `An upload's space is held until its token expires (${UPLOAD_TOKEN_TTL_SECONDS} seconds after the session was opened); then it is ` +
        "given back within a minute, so an upload that died mid-stream does not keep it. " +
        "An upload still streaming then is stored when it " +
        "finishes if its file still fits the free drive space, else 409 and nothing is " +
        "kept. One that finishes more than " +
        `${SESSION_RETENTION_SECONDS / 3600} hours after its token expired is 409 as well.`,
      "The response's `sha256` is computed from the bytes as they stream.",
    ].join("\n\n"),
    security: [{ uploadToken: [] }],
    request: {
      body: {
        required: true,
        description: "The file's bytes",
        content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
      },
    },
    responses: {
      200: json(resultEnvelope(UploadedFileSchema, "FileUploaded"), "File stored"),
      400: json(ApiErrorSchema, "Content-Length not a number, body not matching it, or drive space exceeded (Shape B)"),
      401: {
        ...json(OAuthErrorSchema, "Upload token missing, malformed, unknown, spent or expired (Shape A invalid_token)"),
        headers: {
          "WWW-Authenticate": text('`UploadToken realm="uploads", header="X-Upload-Token", error="invalid_token", …`'),
        },
      },
      409: json(
        ApiErrorSchema,
        "The upload was cancelled while it streamed (department deleted), or finished " +
          "after its token expired and no longer fits the free drive space; nothing was " +
          "kept (Shape B)",
      ),
      411: json(ApiErrorSchema, "Content-Length missing (Shape B)"),
      413: json(ApiErrorSchema, `Content-Length over ${describeBytes(MAX_UPLOAD_BYTES)} (Shape B)`),
      414: errorResponses.uriTooLong,
      500: json(ApiErrorSchema, "Unexpected failure, e.g. of the storage (Shape B)"),
    },
  }),
  async (c) => {
    const { file } = await receiveUpload(c);
    await nudgeWebhooks(c.env, file.companyId);
    bookmarkOnAnswer(c, c.var.session);
    return updated(c, "File uploaded", {
      file_id: file.publicId,
      file_name: file.fileName,
      size: humanSize(file.sizeBytes),
      size_bytes: file.sizeBytes,
      content_type: file.contentType,
      sha256: file.sha256,
    });
  },
);

driveRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/files",
    operationId: "listFiles",
    scope: "drive:read",
    tags,
    summary: "List the company's files",
    description:
      "Extension. Ordered by upload (oldest first). Filters `deptid` and `folder_id` " +
      "(0: files in no folder) combine with AND.",
    request: { query: ListFilesQuery },
    responses: { 200: jsonResponse(DriveFileListEnvelope, "A page of files") },
  }),
  async (c) => page(c, await listFiles(c.var.db, c.var.companyId, c.req.valid("query"))),
);

driveRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/files/{file_id}",
    operationId: "downloadFile",
    scope: "drive:read",
    tags,
    summary: "Download a file's bytes",
    description: [
      "Extension. Streams the bytes with the stored Content-Type, Content-Length, a strong ETag (the SHA-256) and " +
        '`Content-Disposition: attachment; filename="<ASCII fallback>"; ' +
        "filename*=UTF-8''<percent-encoded name>` (RFC 6266/8187: accents " +
        'dropped and other non-ASCII characters, `"` and `\\` as `_` in the fallback). ' +
        "Also `X-Content-Type-Options: nosniff` and a sandboxing " +
        "Content-Security-Policy, so stored HTML is never rendered as this API's page.",
      "Range: one range `bytes=a-b`, `bytes=a-` or `bytes=-n` gives 206 with " +
        "Content-Range (`b` past the end is cut to the last byte). A range " +
        "starting at or past the end, or `-0`, is 416 with `Content-Range: bytes " +
        "*/<size>`. Several ranges, another unit or a malformed range " +
        "are ignored (200, whole file). `If-Range` with another ETag drops the Range. " +
        "`If-None-Match` with the ETag (or `*`) is 304. HEAD works.",
      "A malformed `file_id` is 400; one not in the caller's company is 404.",
    ].join("\n\n"),
    request: { params: FileParams },
    parameters: [sharedParameters.ifNoneMatch],
    responses: {
      200: { description: "The whole file", headers: fileHeaders, content: binary },
      206: {
        description: "The requested range",
        headers: { ...fileHeaders, "Content-Range": text("`bytes <first>-<last>/<size>`") },
        content: binary,
      },
      304: { description: "Not modified: the ETag matches If-None-Match", headers: { ETag: fileHeaders.ETag } },
      416: {
        ...json(ApiErrorSchema, "Range not satisfiable (Shape B)"),
        headers: { "Content-Range": text("`bytes */<size>`") },
      },
    },
  }),
  async (c) => {
    const ifNoneMatch = requestTags(c, "If-None-Match");
    return serveFile(c, await getFile(c.var.db, c.var.companyId, c.req.valid("param").file_id), ifNoneMatch);
  },
);

driveRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/files/{file_id}/info",
    operationId: "getFileInfo",
    scope: "drive:read",
    tags,
    summary: "Get a file's details",
    description:
      "Extension: name, size, content type, SHA-256, department, folder, the number of " +
      "items it is attached to, upload time.",
    request: { params: FileParams },
    responses: { 200: jsonResponse(dataEnvelope(DriveFileSchema, "DriveFileEnvelope"), "The file") },
  }),
  async (c) => ok(c, fileOutput(await getFile(c.var.db, c.var.companyId, c.req.valid("param").file_id))),
);

driveRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/files/{file_id}",
    operationId: "deleteFile",
    scope: "drive:write",
    tags,
    summary: "Delete a file",
    description:
      "Extension. Only a file attached to no item: otherwise 409 naming how many items " +
      "hold it (detach it first; the check is part of the " +
      "DELETE, so a concurrent attach either lands first and the delete is refused, or " +
      "finds no file). The bytes are removed from storage and " +
      "the file's KB come off the company's `drive_space_used_kb` and the department's `storage_used_kb` at once.",
    request: { params: FileParams },
    responses: { 200: jsonResponse(MessageEnvelope, "File deleted"), 409: errorResponses.conflict },
  }),
  async (c) => {
    const key = await deleteFile(c.var.db, c.var.companyId, c.req.valid("param").file_id);
    try {
      await c.env.FILES.delete(key);
    } catch (err) {
      // The row is gone (and the space released); an orphaned object costs storage only.
      console.error(
        JSON.stringify({
          level: "error",
          msg: "R2 delete failed after the file row was deleted",
          key,
          error: String(err),
        }),
      );
    }
    return done(c, "File deleted");
  },
);

driveRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/items/{item_id}/attachments",
    operationId: "listAttachments",
    scope: "drive:read",
    tags,
    summary: "List an item's attachments",
    description:
      "In the order they were attached. `size` is human-readable: under 1024 bytes " +
      "`512 B`, else KB, MB or GB (1024-based) with one decimal " +
      "(`12.4 KB`); the extensions `size_bytes`, `content_type`, `add_date` (upload " +
      "time) and `attached_at` give the details. At most " +
      `${MAX_ATTACHMENTS_PER_ITEM} entries (the most an item may have). An item not in the caller's company is 404. Needs \`drive:read\` only.`,
    request: { params: ItemParams },
    responses: {
      200: jsonResponse(dataEnvelope(z.array(AttachmentSchema), "AttachmentList"), "The item's attachments"),
    },
  }),
  async (c) => ok(c, await listAttachments(c.var.db, c.var.companyId, c.req.valid("param").item_id)),
);

driveRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/items/{item_id}/attachments",
    operationId: "attachFile",
    scope: "drive:write",
    tags,
    summary: "Attach a file to an item",
    description:
      "`file_id` is a file of the caller's company, from PUT /v1/uploads: a malformed " +
      "one, or one that is unknown or of another company, is 400. " +
      "An item not in the company is 404. Idempotent: attaching a file the item " +
      "already has changes nothing and answers 200 `File already " +
      `attached\` (201 \`File attached\` the first time). At most ${MAX_ATTACHMENTS_PER_ITEM} files per item (400 beyond). A file may be attached ` +
      "to several items. Deleting the item removes its attachments, never the files. Needs `drive:write` only.",
    request: { params: ItemParams, body: jsonBody(AttachFileSchema) },
    responses: {
      201: jsonResponse(AttachmentResult, "File attached"),
      200: jsonResponse(AttachmentResult, "The file was already attached: nothing changed"),
    },
  }),
  async (c) => {
    const { created: isNew, attachment } = await attachFile(
      c.var.db,
      c.var.companyId,
      c.req.valid("param").item_id,
      c.req.valid("json").file_id,
    );
    return isNew ? created(c, "File attached", attachment) : updated(c, "File already attached", attachment);
  },
);

driveRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/items/{item_id}/attachments/{file_id}",
    operationId: "detachFile",
    scope: "drive:write",
    tags,
    summary: "Detach a file from an item",
    description:
      "Extension. The file stays in the drive (DELETE /v1/files/{file_id} removes it). " +
      "404 when the item is not in the company or the file is not attached to it.",
    request: { params: AttachmentParams },
    responses: { 200: jsonResponse(MessageEnvelope, "File detached") },
  }),
  async (c) => {
    const { item_id, file_id } = c.req.valid("param");
    await detachFile(c.var.db, c.var.companyId, item_id, file_id);
    return done(c, "File detached");
  },
);
