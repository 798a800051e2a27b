// The byte paths between the client and R2: the streamed upload and the (ranged) download.
// Neither holds a file in memory: the upload flows request body -> hashing transform ->
// FixedLengthStream -> R2 with back-pressure; the download hands R2's stream to the response.
import type { Context } from "hono";
import { database } from "../../db/client";
import { openRequestSession } from "../../db/session";
import { isShard } from "../../db/shards";
import type { AppBindings } from "../../env";
import { MAX_UPLOAD_BYTES, describeBytes } from "../../lib/body";
import { noneMatch, type EntityTags } from "../../lib/conditional";
import { ApiError, apiError, badRequest, conflict, notFound, oauthError } from "../../lib/errors";
import {
  contentDisposition,
  kbOf,
  newFileId,
  objectKey,
  parseRange,
  sha256Hex,
  toHex,
  UPLOAD_TOKEN_PATTERN,
  uploadTokenShard,
} from "../../records/drive/format";
import {
  claimUpload,
  completeUpload,
  explainRefusedClaim,
  explainRefusedCompletion,
  releaseUpload,
  type ClaimedUpload,
  type FileRow,
} from "../../records/drive/queries";
import { UPLOAD_TOKEN_HEADER } from "../../schemas/drive";

/** 401 Shape A `invalid_token` for the upload token, with its challenge (the token is not a Bearer token). */
export function invalidUploadToken(description: string): ApiError {
  return oauthError(401, "invalid_token", description, {
    headers: {
      "WWW-Authenticate": `UploadToken realm="uploads", header="${UPLOAD_TOKEN_HEADER}", error="invalid_token", error_description="${description}"`,
    },
  });
}

/** Errors of the body stream itself (too short, too long, client gone): the client's fault, 400. */
const BODY_STREAM_ERROR = /FixedLengthStream|expected bytes|too many bytes|request stream|client disconnected/i;

/** Marks a failure of reading the request body (as opposed to one of R2). */
class BodyStreamError extends Error {}

/** Body bytes are read in chunks of up to this size (at least CHUNK_MIN_BYTES unless the body ends). */
const CHUNK_BYTES = 1024 * 1024;
const CHUNK_MIN_BYTES = 256 * 1024;

/**
 * Streams `body` (exactly `size` bytes) into R2 under `key` and returns its hex SHA-256, computed
 * on the way through (crypto.DigestStream). The FixedLengthStream gives R2 the known length it
 * needs and fails the put when the body is shorter or longer than declared; R2 then stores nothing.
 *
 * The bytes are pumped by hand in chunks of 256 KiB–1 MiB (a BYOB reader's readAtLeast), so the
 * per-chunk JavaScript runs about a hundred times for 50 MiB, and two 1 MiB buffers are all it
 * holds: memory does not grow with the file. A JavaScript TransformStream over the body's own small
 * chunks made uploads about 45% slower than a bare R2 put (docs/performance.md, "Drive and tasks").
 */
async function streamToR2(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array> | null,
  size: number,
  contentType: string,
  fileId: string,
) {
  const options: R2PutOptions = { httpMetadata: { contentType }, customMetadata: { file_id: fileId } };
  if (size === 0) {
    await bucket.put(key, new Uint8Array(0), options);
    return toHex(await crypto.subtle.digest("SHA-256", new Uint8Array(0)));
  }
  if (!body) throw badRequest(`The request has no body, but Content-Length says ${size} bytes`);
  const digest = new crypto.DigestStream("SHA-256");
  const fixed = new FixedLengthStream(size);
  let bodyFailed = false;
  const pumping = pump(body, digest.getWriter(), fixed.writable.getWriter()).catch((err: unknown) => {
    bodyFailed = true;
    throw err;
  });
  pumping.catch(() => {}); // reported through the put, or awaited below
  try {
    await bucket.put(key, fixed.readable, options);
    await pumping;
  } catch (err) {
    if (bodyFailed || BODY_STREAM_ERROR.test(String((err as Error)?.message ?? err)))
      throw new BodyStreamError(String(err));
    throw err;
  }
  return toHex(await digest.digest);
}

/**
 * Copies `body` into the digest and then the R2 stream, a chunk at a time, reading the next chunk
 * while one is written; on failure aborts the R2 stream, so the put fails. Two buffers take turns:
 * a chunk's buffer is read into again once both writes of it have resolved (the digest has hashed
 * it and R2's side has read it), so an upload leaves no garbage buffers for the collector, however
 * large the file.
 */
async function pump(
  body: ReadableStream<Uint8Array>,
  hash: WritableStreamDefaultWriter<ArrayBufferView>,
  out: WritableStreamDefaultWriter<ArrayBufferView>,
) {
  const reader = body.getReader({ mode: "byob" });
  const read = (reuse?: ArrayBuffer) =>
    reader.readAtLeast(
      CHUNK_MIN_BYTES,
      new Uint8Array(reuse && reuse.byteLength === CHUNK_BYTES ? reuse : new ArrayBuffer(CHUNK_BYTES)),
    );
  let spare: ArrayBuffer | undefined;
  let next: ReturnType<typeof read> | undefined = read();
  try {
    while (next) {
      const { value, done }: ReadableStreamReadResult<Uint8Array> = await next;
      next = done ? undefined : read(spare);
      spare = undefined;
      if (value && value.byteLength > 0) {
        await hash.write(value);
        await out.write(value);
        spare = value.buffer as ArrayBuffer;
      }
    }
    await hash.close();
    await out.close();
  } catch (err) {
    next?.catch(() => {}); // the read ahead fails with the stream; nobody waits for it
    await out.abort(err).catch(() => {});
    await hash.abort(err).catch(() => {});
    throw err;
  } finally {
    reader.releaseLock();
  }
}

/**
 * PUT /v1/uploads: authenticated only by the upload token. Order: token present and well-formed
 * (401), Content-Length present (411) and a whole number (400) — over the limit is 413 from the
 * request guard before this runs —, then the token is claimed together with the space (401 for an
 * unknown, spent or expired token; 400 when the file does not fit the drive allocation), then the
 * bytes stream to R2 and the file row is written. Any failure after the claim deletes what reached
 * R2 and gives the space back; the token stays spent.
 */
export async function receiveUpload(c: Context<AppBindings>) {
  const token = c.req.header(UPLOAD_TOKEN_HEADER);
  if (token === undefined || token === "")
    throw invalidUploadToken(`Missing upload token in the ${UPLOAD_TOKEN_HEADER} header`);
  if (!UPLOAD_TOKEN_PATTERN.test(token)) throw invalidUploadToken("The upload token is malformed");
  const declared = c.req.header("Content-Length");
  if (declared === undefined) {
    throw apiError(411, "Content-Length is required: send the file's size in bytes (chunked uploads are not accepted)");
  }
  if (!/^\d{1,16}$/.test(declared.trim())) throw badRequest("Content-Length must be a whole number of bytes");
  const size = Number(declared.trim());
  if (size > MAX_UPLOAD_BYTES)
    throw apiError(413, `The file exceeds the upload limit of ${describeBytes(MAX_UPLOAD_BYTES)}`);

  // No bearer token: the upload token names the shard of its session.
  const shard = uploadTokenShard(token);
  if (!isShard(c.env, shard)) throw invalidUploadToken("The upload token is not valid");
  const session = openRequestSession(c.env, shard, { write: true, bookmark: null });
  c.set("session", session);
  const db = database(session.d1);
  const tokenHash = await sha256Hex(token);
  const upload = await claimUpload(db, tokenHash, kbOf(size));
  if (!upload) {
    const why = await explainRefusedClaim(db, tokenHash);
    if (why.reason === "unknown") throw invalidUploadToken("The upload token is not valid");
    if (why.reason === "used")
      throw invalidUploadToken("The upload token has already been used: open a new upload session");
    if (why.reason === "expired") throw invalidUploadToken("The upload token has expired: open a new upload session");
    throw badRequest(
      `Drive space exceeded: the file needs ${kbOf(size)} KB, but only ${why.freeKb} KB of the company's ${why.allocationKb / 1024} MB drive space are free`,
    );
  }
  const key = objectKey(upload.companyId, upload.id);
  const fileId = newFileId();
  let file: FileRow | undefined;
  // The file's audit entry names whoever opened the session (the upload itself carries no bearer token).
  const audited = database(session.d1, {
    committed: 0,
    actor: {
      accountId: null,
      companyId: upload.companyId,
      clientId: upload.clientId,
      userId: upload.userId,
      requestId: c.get("requestId") ?? null,
      operationId: c.get("operationId") ?? "uploadFileBytes",
    },
  });
  try {
    const sha256 = await streamToR2(c.env.FILES, key, c.req.raw.body, size, upload.contentType, fileId);
    file = await completeUpload(audited, upload, { publicId: fileId, sizeBytes: size, sha256, r2Key: key });
    if (!file) throw await refusedCompletion(db, upload);
  } catch (err) {
    await discard(c.env.FILES, key, db, upload);
    if (err instanceof ApiError) throw err;
    if (err instanceof BodyStreamError) {
      throw badRequest(
        `The request body did not match its Content-Length of ${size} bytes (or the connection broke); nothing was stored: open a new upload session`,
      );
    }
    throw err;
  }
  return { file, size };
}

/** The 409 for an upload whose bytes were stored but whose file row could not be written (the caller deletes the bytes). */
async function refusedCompletion(db: ReturnType<typeof database>, upload: ClaimedUpload): Promise<ApiError> {
  const why = await explainRefusedCompletion(db, upload);
  if (why.reason === "gone") {
    return conflict(
      "The upload was cancelled while its bytes were stored (its department was " +
        "deleted, or it ran for more than a day after its token expired); nothing was " +
        "kept",
    );
  }
  return conflict(
    `The upload finished after its token expired, and the ${upload.reservedKb} KB it had reserved were given back meanwhile: ` +
      `only ${why.freeKb} KB of the company's ${why.allocationKb / 1024} MB drive space are free now; nothing was kept: open a new upload session`,
  );
}

/** Clean-up after a failed upload: nothing stays in R2, the reservation is released. Best effort (the sweep is the safety net). */
async function discard(bucket: R2Bucket, key: string, db: ReturnType<typeof database>, upload: ClaimedUpload) {
  const results = await Promise.allSettled([bucket.delete(key), releaseUpload(db, upload)]);
  for (const result of results) {
    if (result.status === "rejected") {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "upload clean-up failed; the sweep retries it",
          key,
          error: String(result.reason),
        }),
      );
    }
  }
}

/**
 * GET /v1/files/{file_id}: the bytes, with Content-Type, Content-Length, a strong ETag (the SHA-256),
 * Content-Disposition: attachment, and single byte ranges. If-None-Match answers 304 without
 * touching R2; If-Range with another ETag (or a date) drops the Range. HEAD reads nothing from R2.
 */
export async function serveFile(
  c: Context<AppBindings>,
  file: FileRow,
  ifNoneMatch: EntityTags | undefined,
): Promise<Response> {
  const etag = `"${file.sha256}"`;
  const headers = new Headers({
    ETag: etag,
    "Cache-Control": "private, no-cache",
    "Accept-Ranges": "bytes",
    "Content-Type": file.contentType,
    "Content-Disposition": contentDisposition(file.fileName),
    // Stored content is never rendered as this API's own page.
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
  });
  if (ifNoneMatch !== undefined && noneMatch(ifNoneMatch, etag)) {
    headers.delete("Content-Type");
    return new Response(null, { status: 304, headers });
  }
  const ifRange = c.req.header("If-Range");
  const range =
    ifRange !== undefined && ifRange.trim() !== etag
      ? ({ kind: "all" } as const)
      : parseRange(c.req.header("Range"), file.sizeBytes);
  if (range.kind === "unsatisfiable") {
    throw apiError(416, `The requested range is not satisfiable: the file has ${file.sizeBytes} bytes`, {
      "Content-Range": `bytes */${file.sizeBytes}`,
    });
  }
  const partial = range.kind === "range";
  const start = partial ? range.start : 0;
  const length = partial ? range.end - range.start + 1 : file.sizeBytes;
  headers.set("Content-Length", String(length));
  if (partial) headers.set("Content-Range", `bytes ${range.start}-${range.end}/${file.sizeBytes}`);
  const status = partial ? 206 : 200;
  if (c.req.method === "HEAD") return new Response(null, { status, headers });
  if (length === 0) return new Response(null, { status, headers });
  const object = await c.env.FILES.get(file.r2Key, partial ? { range: { offset: start, length } } : undefined);
  if (!object || !("body" in object)) {
    // Deleted between the row read and here (or R2 lost it: logged).
    console.error(
      JSON.stringify({ level: "warn", msg: "file row without R2 object", fileId: file.publicId, key: file.r2Key }),
    );
    throw notFound("File");
  }
  return new Response(object.body, { status, headers });
}
