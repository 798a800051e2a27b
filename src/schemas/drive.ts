import { z } from "@hono/zod-openapi";
import { MAX_UPLOAD_BYTES } from "../lib/body";
import {
  Timestamp,
  cleanText,
  idField,
  idQuery,
  integerString,
  pageEnvelope,
  paginationQuery,
  requiredText,
} from "../lib/schemas";

/** Seconds an upload token stays valid. */
export const UPLOAD_TOKEN_TTL_SECONDS = 900;
/** The request header that carries the upload token. */
export const UPLOAD_TOKEN_HEADER = "X-Upload-Token" as const;
/** Longest `filename` (UTF-16 code units, after trimming and NFC). */
export const MAX_FILE_NAME = 255;
/** Longest `content_type`. */
export const MAX_CONTENT_TYPE = 255;
/** Most files attached to one item (checked inside the attaching INSERT). */
export const MAX_ATTACHMENTS_PER_ITEM = 100;

/** Public file ids: `fil_` and 22 base64url characters (128 random bits). */
export const FILE_ID_PATTERN = /^fil_[A-Za-z0-9_-]{22}$/;
const FILE_ID_MESSAGE = "file_id must be a file id: fil_ followed by 22 letters, digits, - or _";

// Bidirectional embedding, override and isolate controls: they make "evil\u202Efdp.exe" display as
// "evilexe.pdf". Format characters, so the shared text rules let them through.
const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/;

const fileName = requiredText("filename", MAX_FILE_NAME)
  .refine((s) => !/[/\\]/.test(s), { error: "filename must be a file name without a path: no / or \\", abort: true })
  .refine((s) => !/^\.+$/.test(s), { error: "filename must not be . or .. (or only dots)", abort: true })
  .refine((s) => !BIDI_CONTROL.test(s), {
    error: "filename must not contain bidirectional control characters (U+202A-U+202E, " + "U+2066-U+2069)",
  })
  .openapi({ example: "Fire certificate 2026.pdf" });

// RFC 9110 media type: type "/" subtype *( ";" parameter ), tokens of tchar.
const TOKEN = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";
const MEDIA_TYPE_PATTERN = `^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=(${TOKEN}|"[^"\\\\]*"))*$`;
const MEDIA_TYPE = new RegExp(MEDIA_TYPE_PATTERN);

const contentType = cleanText("content_type")
  .max(MAX_CONTENT_TYPE, { error: `content_type must be at most ${MAX_CONTENT_TYPE} characters` })
  .regex(MEDIA_TYPE, {
    error: "content_type must be a media type such as application/pdf or text/plain; " + "charset=utf-8",
  })
  .overwrite((s) => {
    const semicolon = s.indexOf(";");
    return semicolon < 0 ? s.toLowerCase() : `${s.slice(0, semicolon).trim().toLowerCase()}${s.slice(semicolon)}`;
  })
  // Published as written: a RegExp's source escapes "/" as "\/", which openapi-zod-client escapes
  // again, into a regex literal that ends early.
  .openapi({ example: "application/pdf", pattern: MEDIA_TYPE_PATTERN });

export const CreateUploadSchema = z
  .strictObject({
    filename: fileName,
    content_type: contentType.optional().openapi({
      description:
        "Stored with the file and sent back as its Content-Type on download. Default: " +
        "from the filename's extension for common types, else application/octet-stream.",
    }),
    deptid: idField("deptid")
      .optional()
      .openapi({
        description: "The department the file counts against; default: the company's default " + "department",
      }),
    folder_id: idField("folder_id")
      .optional()
      .openapi({ description: "A folder of the company to file it in; default: none" }),
  })
  .openapi("CreateUpload");

export const UploadSessionSchema = z
  .object({
    upload_url: z.string().openapi({
      example: "https://api.example.com/v1/uploads",
      description: "Absolute URL of PUT /v1/uploads on the host that was called",
    }),
    upload_token: z.string().openapi({
      example: "upt_3q2-7wEXAMPLEtokenEXAMPLEtokenEXAMPLEtoken12",
      description: "Send it in the X-Upload-Token header; single use",
    }),
    method: z.literal("PUT"),
    token_header: z.literal(UPLOAD_TOKEN_HEADER),
    expires_in: z
      .number()
      .int()
      .openapi({ example: UPLOAD_TOKEN_TTL_SECONDS, description: "Seconds until the token expires" }),
    max_bytes: z
      .number()
      .int()
      .openapi({ example: MAX_UPLOAD_BYTES, description: "Extension: the largest file the PUT accepts, in bytes" }),
  })
  .openapi("UploadSession");

export const UploadedFileSchema = z
  .object({
    file_id: z.string().openapi({ example: "fil_Xb3kq9ZrT0aW5mLpQe1uYg" }),
    file_name: z.string().openapi({ example: "Fire certificate 2026.pdf" }),
    size: z.string().openapi({ example: "12.4 KB", description: "Human-readable size (see size_bytes)" }),
    size_bytes: z.number().int().openapi({ example: 12697 }),
    content_type: z.string().openapi({ example: "application/pdf" }),
    sha256: z.string().openapi({
      example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      description: "Hex SHA-256 of the bytes",
    }),
  })
  .openapi("UploadedFile");

const sizeText = z.string().openapi({
  example: "12.4 KB",
  description:
    "Human-readable: under 1024 bytes `512 B`; else KB, MB or GB (1024-based) with " +
    "one decimal, e.g. `12.4 KB`, `3.0 MB`",
});

export const DriveFileSchema = z
  .object({
    file_id: z.string().openapi({ example: "fil_Xb3kq9ZrT0aW5mLpQe1uYg" }),
    file_name: z.string().openapi({ example: "Fire certificate 2026.pdf" }),
    size: sizeText,
    size_bytes: z.number().int().openapi({ example: 12697 }),
    content_type: z.string().openapi({ example: "application/pdf" }),
    sha256: z.string().openapi({ example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }),
    deptid: z.number().int().openapi({ example: 1 }),
    folder_id: z.number().int().openapi({ example: 0, description: "0 when the file is in no folder" }),
    attachments: z.number().int().openapi({ example: 1, description: "How many items the file is attached to" }),
    add_date: Timestamp,
  })
  .openapi("DriveFile", { description: "A file in the company's drive" });

export const AttachmentSchema = z
  .object({
    file_id: z.string().openapi({ example: "fil_Xb3kq9ZrT0aW5mLpQe1uYg" }),
    file_name: z.string().openapi({ example: "Fire certificate 2026.pdf" }),
    size: sizeText,
    size_bytes: z.number().int().openapi({ example: 12697, description: "Extension" }),
    content_type: z.string().openapi({ example: "application/pdf", description: "Extension" }),
    add_date: Timestamp.openapi({ description: "Extension: when the file was uploaded (UTC)" }),
    attached_at: Timestamp.openapi({ description: "Extension: when it was attached to this item (UTC)" }),
  })
  .openapi("Attachment");

/** A file id in a body: its format is checked here (400), its company by the query (400). */
const fileIdField = z
  .string({ error: (issue) => (issue.input === undefined ? "file_id is required" : "file_id must be a string") })
  .max(64, { error: FILE_ID_MESSAGE, abort: true })
  .regex(FILE_ID_PATTERN, { error: FILE_ID_MESSAGE })
  .openapi({ example: "fil_Xb3kq9ZrT0aW5mLpQe1uYg" });

export const AttachFileSchema = z.strictObject({ file_id: fileIdField }).openapi("AttachFile");

/** `{file_id}` in a path. */
export const FileParams = z.object({
  file_id: z
    .string()
    .max(64, { error: FILE_ID_MESSAGE, abort: true })
    .regex(FILE_ID_PATTERN, { error: FILE_ID_MESSAGE })
    .openapi({ param: { name: "file_id", in: "path" }, example: "fil_Xb3kq9ZrT0aW5mLpQe1uYg" }),
});

export const ListFilesQuery = z.object({
  ...paginationQuery(200, 50),
  deptid: idQuery("deptid"),
  folder_id: integerString("folder_id must be 0 (files in no folder) or a folder id", 0)
    .optional()
    .openapi({ param: { name: "folder_id", in: "query" }, description: "A folder id, or 0 for files in no folder" }),
});

export const DriveFileListEnvelope = pageEnvelope(DriveFileSchema, "DriveFileList");

export type CreateUploadInput = z.infer<typeof CreateUploadSchema>;
export type UploadSessionOutput = z.infer<typeof UploadSessionSchema>;
export type DriveFileOutput = z.infer<typeof DriveFileSchema>;
export type AttachmentOutput = z.infer<typeof AttachmentSchema>;
export type ListFilesInput = z.infer<typeof ListFilesQuery>;
