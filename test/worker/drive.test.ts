import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { MAX_UPLOAD_BYTES } from "../../src/lib/body";
import { contentDisposition, humanSize, kbOf, parseRange, sha256Hex, toHex } from "../../src/records/drive/format";
import { MAX_ATTACHMENTS_PER_ITEM } from "../../src/schemas/drive";
import {
  BASE,
  TIMESTAMP,
  type Answer,
  type DataOf,
  type Fields,
  type TestAccount,
  call,
  createAccount,
  createDepartment,
  createItem,
  env,
  expectShapeA,
  expectShapeB,
  noServerError,
  readResult,
  tokenFor,
  uniqueWord,
  expectStatus,
  callRaw,
  ok,
  openApiDocument,
} from "./helpers";

// Drive: upload sessions, the token-authenticated streamed PUT into R2, drive space (quota and
// exact counters, race-safe), attachments, downloads with ranges, deletes, tenancy and scopes.
// Most tests run in a fresh account (createAccount) so that its counters and R2 prefix are theirs.

const SESSION_FIELDS = ["upload_url", "upload_token", "method", "token_header", "expires_in", "max_bytes"].sort();
const ATTACHMENT_FIELDS = [
  "file_id",
  "file_name",
  "size",
  "size_bytes",
  "content_type",
  "add_date",
  "attached_at",
].sort();
const FILE_FIELDS = [
  "file_id",
  "file_name",
  "size",
  "size_bytes",
  "content_type",
  "sha256",
  "deptid",
  "folder_id",
  "attachments",
  "add_date",
].sort();

/** `n` deterministic bytes (not all equal, so ranges and offsets are checked for real). */
function bytesOf(n: number, seed = 7): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) % 251;
  return out;
}

const hexSha256 = async (bytes: Uint8Array) => toHex(await crypto.subtle.digest("SHA-256", bytes));

async function openSession(token: string, body: Record<string, unknown> = {}): Promise<DataOf<"createUploadSession">> {
  const res = await call("createUploadSession", "/v1/uploads", {
    token,
    body: { filename: `${uniqueWord("file")}.pdf`, ...body },
  });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data;
}

/** PUT /v1/uploads as a client would send it: the token header and, for byte arrays, Content-Length. */
async function putBytes(
  uploadToken: string | undefined,
  body: Uint8Array | ReadableStream<Uint8Array> | null,
  headers: Record<string, string> = {},
): Promise<Answer<"uploadFileBytes">> {
  const h: Record<string, string> = { "Content-Type": "application/octet-stream", ...headers };
  if (uploadToken !== undefined) h["X-Upload-Token"] = uploadToken;
  if (body instanceof Uint8Array && !("Content-Length" in headers)) h["Content-Length"] = String(body.byteLength);
  return readResult(
    await exports.default.fetch(new Request(`${BASE}/v1/uploads`, { method: "PUT", headers: h, body })),
    "uploadFileBytes",
  );
}

/** Session + PUT; returns the PUT's data (file_id, ...). */
async function upload(
  token: string,
  bytes: Uint8Array,
  session: Record<string, unknown> = {},
): Promise<DataOf<"uploadFileBytes">> {
  const { upload_token } = await openSession(token, session);
  const res = await putBytes(upload_token, bytes);
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.data;
}

async function download(token: string, fileId: string, headers: Record<string, string> = {}, method = "GET") {
  const res = await exports.default.fetch(
    new Request(`${BASE}/v1/files/${fileId}`, { method, headers: { Authorization: `Bearer ${token}`, ...headers } }),
  );
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes };
}

/** The drive counters, what the files really hold, and the space held by uploads in progress (`reserved_kb`). */
async function counters(account: { companyId: number; deptId: number }) {
  const row = await env.DB.prepare(
    `SELECT c.drive_space_used_kb AS company_kb, d.storage_used_kb AS dept_kb,
       (SELECT coalesce(sum(max(1, (f.size_bytes + 1023) / 1024)), 0) FROM files f WHERE f.company_id = c.id) AS files_kb,
       (SELECT count(*) FROM files f WHERE f.company_id = c.id) AS files,
       (SELECT coalesce(sum(reserved_kb), 0) FROM upload_sessions s WHERE s.company_id = c.id AND s.reserved_kb > 0) AS reserved_kb
     FROM companies c JOIN departments d ON d.id = ? WHERE c.id = ?`,
  )
    .bind(account.deptId, account.companyId)
    .first<{ company_kb: number; dept_kb: number; files_kb: number; files: number; reserved_kb: number }>();
  return row!;
}

async function objectsOf(companyId: number): Promise<string[]> {
  const listed = await env.FILES.list({ prefix: `c/${companyId}/` });
  return listed.objects.map((o) => o.key).sort();
}

/**
 * A PUT whose body sends one chunk of `chunkBytes` and then waits for `resume()` before the second:
 * an upload in progress, its token claimed and its space reserved once `waitForReserved` says so.
 */
function pausedPut(uploadToken: string, chunkBytes: number) {
  let resume!: () => void;
  const paused = new Promise<void>((resolve) => (resume = resolve));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent === 1) await paused;
      if (sent === 2) return controller.close();
      sent++;
      controller.enqueue(bytesOf(chunkBytes, sent));
    },
  });
  const bytes = new Uint8Array(2 * chunkBytes);
  bytes.set(bytesOf(chunkBytes, 1));
  bytes.set(bytesOf(chunkBytes, 2), chunkBytes);
  return { pending: putBytes(uploadToken, stream, { "Content-Length": String(2 * chunkBytes) }), resume, bytes };
}

async function waitForReserved(account: { companyId: number; deptId: number }, kb: number) {
  for (let i = 0; i < 400 && (await counters(account)).reserved_kb !== kb; i++)
    await new Promise((r) => setTimeout(r, 5));
  expect((await counters(account)).reserved_kb).toBe(kb);
}

/** The cron trigger, as the platform runs it every minute (its reminder log line silenced). */
async function runCronSweep() {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  try {
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
  } finally {
    log.mockRestore();
  }
}

const sessionOf = async (uploadToken: string) =>
  (await env.DB.prepare("SELECT id, reserved_kb FROM upload_sessions WHERE token_hash = ?")
    .bind(await sha256Hex(uploadToken))
    .first<{ id: number; reserved_kb: number }>())!;

/** Moves a session's token expiry to `seconds` from now (negative: in the past). */
const expireIn = async (uploadToken: string, seconds: number) =>
  env.DB.prepare("UPDATE upload_sessions SET expires_at = unixepoch() + ? WHERE token_hash = ?")
    .bind(seconds, await sha256Hex(uploadToken))
    .run();

const fileRow = (publicId: string) =>
  env.DB.prepare("SELECT * FROM files WHERE public_id = ?").bind(publicId).first<Fields>();

describe("format helpers", () => {
  it("writes sizes human-readably: bytes under 1 KiB, then KB/MB/GB with one decimal (1024-based)", () => {
    expect(humanSize(0)).toBe("0 B");
    expect(humanSize(512)).toBe("512 B");
    expect(humanSize(1023)).toBe("1023 B");
    expect(humanSize(1024)).toBe("1.0 KB");
    expect(humanSize(12_697)).toBe("12.4 KB");
    expect(humanSize(1_048_575)).toBe("1.0 MB"); // 1023.999 KB rounds up into the next unit
    expect(humanSize(5 * 1024 * 1024 + 300 * 1024)).toBe("5.3 MB");
    expect(humanSize(MAX_UPLOAD_BYTES)).toBe("95.0 MB");
    expect(humanSize(3 * 1024 ** 3)).toBe("3.0 GB");
  });

  it("counts ceil(bytes / 1024) KB per file, at least 1", () => {
    expect([0, 1, 1024, 1025, 2048, 2049].map(kbOf)).toEqual([1, 1, 1, 2, 2, 3]);
  });

  it("parses single byte ranges and ignores what it must ignore", () => {
    expect(parseRange(undefined, 100)).toEqual({ kind: "all" });
    expect(parseRange("bytes=0-9", 100)).toEqual({ kind: "range", start: 0, end: 9 });
    expect(parseRange("bytes=90-", 100)).toEqual({ kind: "range", start: 90, end: 99 });
    expect(parseRange("bytes=90-1000", 100)).toEqual({ kind: "range", start: 90, end: 99 });
    expect(parseRange("bytes=-10", 100)).toEqual({ kind: "range", start: 90, end: 99 });
    expect(parseRange("bytes=-1000", 100)).toEqual({ kind: "range", start: 0, end: 99 });
    expect(parseRange("bytes=100-", 100)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=-0", 100)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=0-", 0)).toEqual({ kind: "unsatisfiable" });
    for (const ignored of [
      "bytes=9-0",
      "bytes=0-1,5-6",
      "items=0-1",
      "bytes=",
      "bytes=-",
      "bytes=a-b",
      `bytes=0-${"9".repeat(30)}`,
    ]) {
      expect(parseRange(ignored, 100), ignored).toEqual({ kind: "all" });
    }
  });

  it("writes Content-Disposition with an ASCII fallback and the exact name (RFC 6266/8187)", () => {
    expect(contentDisposition("report.pdf")).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    const name = `Ré"sumé 📄 (v2)'s\\*.pdf`;
    const header = contentDisposition(name);
    expect(header).toBe(
      `attachment; filename="Re_sume _ (v2)'s_*.pdf"; filename*=UTF-8''R%C3%A9%22sum%C3%A9%20%F0%9F%93%84%20%28v2%29%27s%5C%2A.pdf`,
    );
    expect(decodeURIComponent(header.split("UTF-8''")[1]!)).toBe(name);
  });
});

describe("the spec's flow: session, bytes with the token, attach, list, download", () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await createAccount();
  });

  it("stores the bytes and gives them back unchanged", async () => {
    const token = account.memberToken;
    const created = await call("createUploadSession", "/v1/uploads", {
      token,
      body: { filename: "Fire certificate.pdf" },
    });
    expectStatus(created, 201, JSON.stringify(created.body));
    expect(created.body.success).toBe(true);
    expect(created.body.msg).toBe("Upload session created");
    expect(created.headers.get("Cache-Control")).toBe("no-store");
    const session = created.body.data;
    expect(Object.keys(session).sort()).toEqual(SESSION_FIELDS);
    expect(session).toMatchObject({
      upload_url: `${BASE}/v1/uploads`,
      method: "PUT",
      token_header: "X-Upload-Token",
      expires_in: 900,
      max_bytes: MAX_UPLOAD_BYTES,
    });
    expect(session.upload_token).toMatch(/^upt_[A-Za-z0-9_-]{43}$/);
    // Only the hash is stored, bound to the company and user, expiring in 900 s.
    const row = await env.DB.prepare("SELECT * FROM upload_sessions WHERE token_hash = ?")
      .bind(await sha256Hex(session.upload_token))
      .first<Fields>();
    expect(row).toMatchObject({
      company_id: account.companyId,
      dept_id: account.deptId,
      used_at: null,
      content_type: "application/pdf",
      file_name: "Fire certificate.pdf",
    });
    const stored = JSON.stringify(
      await env.DB.prepare("SELECT * FROM upload_sessions WHERE id = ?").bind(row!.id).first(),
    );
    expect(stored).not.toContain(session.upload_token.slice(4));
    expect(Number(row!.expires_at) - Math.floor(Date.now() / 1000)).toBeGreaterThan(890);

    const bytes = bytesOf(300_000);
    const put = await putBytes(session.upload_token, bytes);
    expectStatus(put, 200, JSON.stringify(put.body));
    expect(put.body).toMatchObject({ success: true, msg: "File uploaded" });
    expect(put.body.data).toEqual({
      file_id: expect.stringMatching(/^fil_[A-Za-z0-9_-]{22}$/),
      file_name: "Fire certificate.pdf",
      size: "293.0 KB",
      size_bytes: 300_000,
      content_type: "application/pdf",
      sha256: await hexSha256(bytes),
    });
    const fileId = put.body.data.file_id;
    const file = await fileRow(fileId);
    expect(file).toMatchObject({
      company_id: account.companyId,
      dept_id: account.deptId,
      size_bytes: 300_000,
      sha256: await hexSha256(bytes),
      folder_id: null,
    });
    expect(file!.r2_key).toMatch(new RegExp(`^c/${account.companyId}/`));
    const object = await env.FILES.head(String(file!.r2_key));
    expect(object?.size).toBe(300_000);
    expect(object?.httpMetadata?.contentType).toBe("application/pdf");

    const item = await createItem(token);
    const attached = await call("attachFile", `/v1/items/${item.item_id}/attachments`, {
      token,
      body: { file_id: fileId },
    });
    expectStatus(attached, 201, JSON.stringify(attached.body));
    expect(attached.body).toMatchObject({
      success: true,
      msg: "File attached",
      data: { file_id: fileId, file_name: "Fire certificate.pdf", size: "293.0 KB" },
    });

    const list = await call("listAttachments", `/v1/items/${item.item_id}/attachments`, { token });
    expectStatus(list, 200);
    expect(list.body.data).toHaveLength(1);
    const [entry] = list.body.data;
    expect(Object.keys(entry!).sort()).toEqual(ATTACHMENT_FIELDS);
    expect(entry).toMatchObject({
      file_id: fileId,
      file_name: "Fire certificate.pdf",
      size: "293.0 KB",
      size_bytes: 300_000,
      content_type: "application/pdf",
    });
    expect(entry!.add_date).toMatch(TIMESTAMP);
    expect(entry!.attached_at).toMatch(TIMESTAMP);

    const got = await download(token, fileId);
    expectStatus(got, 200);
    expect(got.headers.get("Content-Type")).toBe("application/pdf");
    expect(got.headers.get("Content-Length")).toBe("300000");
    expect(got.headers.get("ETag")).toBe(`"${await hexSha256(bytes)}"`);
    expect(got.headers.get("Accept-Ranges")).toBe("bytes");
    expect(got.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(got.headers.get("Content-Disposition")).toBe(
      `attachment; filename="Fire certificate.pdf"; filename*=UTF-8''Fire%20certificate.pdf`,
    );
    expect(got.bytes).toEqual(bytes);

    const info = await call("getFileInfo", `/v1/files/${fileId}/info`, { token });
    expectStatus(info, 200);
    expect(Object.keys(info.body.data).sort()).toEqual(FILE_FIELDS);
    expect(info.body.data).toMatchObject({
      file_id: fileId,
      attachments: 1,
      deptid: account.deptId,
      folder_id: 0,
      size_bytes: 300_000,
    });
  });

  it("accepts a 5 MB file in many chunks and keeps the checksum of every byte", async () => {
    const bytes = bytesOf(5 * 1024 * 1024 + 3, 11);
    const { upload_token } = await openSession(account.memberToken, { filename: "big.bin" });
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.length) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + 65_536));
        offset += 65_536;
      },
    });
    const res = await putBytes(upload_token, stream, { "Content-Length": String(bytes.length) });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toMatchObject({
      size_bytes: bytes.length,
      size: "5.0 MB",
      content_type: "application/octet-stream",
      sha256: await hexSha256(bytes),
    });
    const got = await download(account.memberToken, res.body.data.file_id);
    expect(got.bytes.length).toBe(bytes.length);
    expect(await hexSha256(got.bytes)).toBe(await hexSha256(bytes));
  });

  it("keeps every byte when the body arrives in irregular chunks, smaller and larger than the read buffers", async () => {
    const bytes = bytesOf(4 * 1024 * 1024 + 12_345, 23);
    const { upload_token } = await openSession(account.memberToken, { filename: "irregular.bin" });
    const sizes = [1, 300_000, 7, 1_048_576, 262_143, 262_145, 999_999, 13];
    let offset = 0;
    let turn = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.length) return controller.close();
        const size = sizes[turn++ % sizes.length]!;
        controller.enqueue(bytes.slice(offset, offset + size));
        offset += size;
      },
    });
    const res = await putBytes(upload_token, stream, { "Content-Length": String(bytes.length) });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data.sha256).toBe(await hexSha256(bytes));
    const got = await download(account.memberToken, res.body.data.file_id);
    expect(got.bytes).toEqual(bytes);
  });

  it("accepts an empty file (0 B, counted as 1 KB)", async () => {
    const before = await counters(account);
    const data = await upload(account.memberToken, new Uint8Array(0), { filename: "empty.txt" });
    expect(data).toMatchObject({ size: "0 B", size_bytes: 0, content_type: "text/plain" });
    const after = await counters(account);
    expect(after.company_kb - before.company_kb).toBe(1);
    const got = await download(account.memberToken, data.file_id);
    expectStatus(got, 200);
    expect(got.bytes.length).toBe(0);
    expect(got.headers.get("Content-Length")).toBe("0");
  });

  it("takes the content type from the session (given, or from the extension), never from the PUT", async () => {
    const given = await upload(account.memberToken, bytesOf(10), {
      filename: "x.pdf",
      content_type: "Text/Plain; charset=utf-8",
    });
    expect(given.content_type).toBe("text/plain; charset=utf-8");
    const guessed = await upload(account.memberToken, bytesOf(10), { filename: "photo.JPG" });
    expect(guessed.content_type).toBe("image/jpeg");
    const { upload_token } = await openSession(account.memberToken, { filename: "notes" });
    const res = ok(await putBytes(upload_token, bytesOf(10), { "Content-Type": "text/html" }));
    expect(res.body.data.content_type).toBe("application/octet-stream");
  });

  it("files an upload in the given department and folder", async () => {
    const deptId = await createDepartment(account.companyId);
    const folder = ok(
      await call("createFolder", "/v1/folders", { token: account.ownerToken, body: { folder_name: uniqueWord("F") } }),
    );
    const data = await upload(account.memberToken, bytesOf(2000), {
      deptid: deptId,
      folder_id: folder.body.data.folderid,
    });
    expect(await fileRow(data.file_id)).toMatchObject({ dept_id: deptId, folder_id: folder.body.data.folderid });
    const dept = await env.DB.prepare("SELECT storage_used_kb FROM departments WHERE id = ?")
      .bind(deptId)
      .first<{ storage_used_kb: number }>();
    expect(dept!.storage_used_kb).toBe(2);
    const listed = ok(
      await call("listFiles", `/v1/files?folder_id=${folder.body.data.folderid}`, { token: account.memberToken }),
    );
    expect(listed.body.data.map((f) => f.file_id)).toEqual([data.file_id]);
    expect(listed.body.meta).toEqual({ total: 1, limit: 50, offset: 0 });
    const byDept = ok(await call("listFiles", `/v1/files?deptid=${deptId}`, { token: account.memberToken }));
    expect(byDept.body.data.map((f) => f.file_id)).toEqual([data.file_id]);
  });

  it("puts the Content-Disposition of a unicode name with quotes in both forms", async () => {
    const name = `Prüfbericht "final" 📄 (2026).pdf`;
    const data = await upload(account.memberToken, bytesOf(10), { filename: name });
    expect(data.file_name).toBe(name);
    const got = await download(account.memberToken, data.file_id);
    const header = got.headers.get("Content-Disposition")!;
    expect(header).toBe(
      `attachment; filename="Prufbericht _final_ _ (2026).pdf"; filename*=UTF-8''Pr%C3%BCfbericht%20%22final%22%20%F0%9F%93%84%20%282026%29.pdf`,
    );
    expect(decodeURIComponent(header.split("filename*=UTF-8''")[1]!)).toBe(name);
  });
});

describe("downloads: ranges and conditional requests", () => {
  let token: string;
  let fileId: string;
  const bytes = bytesOf(10_000, 3);
  beforeAll(async () => {
    token = (await createAccount()).memberToken;
    fileId = (await upload(token, bytes, { filename: "range.bin" })).file_id;
  });

  it("answers bytes=a-b, a- and -n with 206 and Content-Range", async () => {
    const cases: Array<[string, number, number]> = [
      ["bytes=0-9", 0, 9],
      ["bytes=9990-", 9990, 9999],
      ["bytes=-25", 9975, 9999],
      ["bytes=5000-99999", 5000, 9999],
      ["bytes=-20000", 0, 9999],
    ];
    for (const [range, start, end] of cases) {
      const got = await download(token, fileId, { Range: range });
      expectStatus(got, 206, range);
      expect(got.headers.get("Content-Range"), range).toBe(`bytes ${start}-${end}/10000`);
      expect(got.headers.get("Content-Length"), range).toBe(String(end - start + 1));
      expect(got.bytes, range).toEqual(bytes.slice(start, end + 1));
    }
  });

  it("answers 416 with Content-Range for an unsatisfiable range", async () => {
    for (const range of ["bytes=10000-", "bytes=20000-30000", "bytes=-0"]) {
      const res = await readResult(
        await exports.default.fetch(
          new Request(`${BASE}/v1/files/${fileId}`, { headers: { Authorization: `Bearer ${token}`, Range: range } }),
        ),
        "downloadFile",
      );
      expectShapeB(res, 416, /not satisfiable.*10000 bytes/);
      expect(res.headers.get("Content-Range")).toBe("bytes */10000");
    }
  });

  it("serves the whole file for several ranges, another unit or an invalid range", async () => {
    for (const range of ["bytes=0-1,5-6", "items=0-5", "bytes=9-1", "bytes=x"]) {
      const got = await download(token, fileId, { Range: range });
      expectStatus(got, 200, range);
      expect(got.bytes.length, range).toBe(10_000);
    }
  });

  it("answers If-None-Match with the ETag by 304, and If-Range with another ETag by the whole file", async () => {
    const first = await download(token, fileId);
    const etag = first.headers.get("ETag")!;
    for (const match of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await download(token, fileId, { "If-None-Match": match });
      expectStatus(again, 304, match);
      expect(again.bytes.length).toBe(0);
      expect(again.headers.get("ETag")).toBe(etag);
    }
    expectStatus(await download(token, fileId, { "If-None-Match": '"other"' }), 200);
    for (const malformed of [`*, ${etag}`, `${etag}x`, etag.slice(1, -1)])
      expectStatus(await download(token, fileId, { "If-None-Match": malformed }), 400, malformed);
    const stale = await download(token, fileId, { Range: "bytes=0-9", "If-Range": '"other"' });
    expectStatus(stale, 200);
    expect(stale.bytes.length).toBe(10_000);
    const fresh = await download(token, fileId, { Range: "bytes=0-9", "If-Range": etag });
    expectStatus(fresh, 206);
  });

  it("answers HEAD with the headers only", async () => {
    const head = await download(token, fileId, {}, "HEAD");
    expectStatus(head, 200);
    expect(head.headers.get("Content-Length")).toBe("10000");
    expect(head.bytes.length).toBe(0);
    const ranged = await download(token, fileId, { Range: "bytes=0-99" }, "HEAD");
    expectStatus(ranged, 206);
    expect(ranged.headers.get("Content-Range")).toBe("bytes 0-99/10000");
  });

  it("refuses a malformed file_id with 400 and an unknown one with 404", async () => {
    expectShapeB(await call("downloadFile", "/v1/files/abc", { token }), 400, /file_id must be a file id/);
    expectShapeB(await call("downloadFile", `/v1/files/fil_${"x".repeat(200)}`, { token }), 400, /file_id/);
    expectShapeB(await call("downloadFile", "/v1/files/fil_AAAAAAAAAAAAAAAAAAAAAA", { token }), 404, /File not found/);
    expectShapeB(
      await call("getFileInfo", "/v1/files/fil_AAAAAAAAAAAAAAAAAAAAAA/info", { token }),
      404,
      /File not found/,
    );
  });
});

describe("the upload token", () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await createAccount();
  });

  async function expectNoNewFile(before: Awaited<ReturnType<typeof counters>>, objects: string[]) {
    const after = await counters(account);
    expect(after).toEqual(before);
    expect(await objectsOf(account.companyId)).toEqual(objects);
  }

  it("is required: missing, empty or malformed is 401 invalid_token with a challenge, and nothing is stored", async () => {
    const before = await counters(account);
    const objects = await objectsOf(account.companyId);
    for (const token of [undefined, "", "upt_short", `Bearer upt_${"a".repeat(43)}`, `upt_${"a".repeat(43)}!`]) {
      const res = await putBytes(token, bytesOf(100));
      expectShapeA(res, 401, "invalid_token");
      expect(res.headers.get("WWW-Authenticate"), String(token)).toMatch(
        /^UploadToken realm="uploads".*error="invalid_token"/,
      );
    }
    await expectNoNewFile(before, objects);
  });

  it("is the only credential: a bearer token does not authenticate the PUT", async () => {
    const res = await readResult(
      await exports.default.fetch(
        new Request(`${BASE}/v1/uploads`, {
          method: "PUT",
          headers: { Authorization: `Bearer ${account.ownerToken}`, "Content-Length": "3" },
          body: bytesOf(3),
        }),
      ),
      "uploadFileBytes",
    );
    expectShapeA(res, 401, "invalid_token");
    expect(res.body.error_description).toMatch(/X-Upload-Token/);
  });

  it("refuses a wrong token (right format, unknown) with 401", async () => {
    const before = await counters(account);
    const res = await putBytes(`upt_${"A".repeat(43)}`, bytesOf(100));
    expectShapeA(res, 401, "invalid_token");
    expect(res.body.error_description).toBe("The upload token is not valid");
    await expectNoNewFile(before, await objectsOf(account.companyId));
  });

  it("refuses an expired token with 401 and stores nothing", async () => {
    const { upload_token } = await openSession(account.memberToken);
    await env.DB.prepare("UPDATE upload_sessions SET expires_at = unixepoch() - 1 WHERE token_hash = ?")
      .bind(await sha256Hex(upload_token))
      .run();
    const before = await counters(account);
    const objects = await objectsOf(account.companyId);
    const res = await putBytes(upload_token, bytesOf(100));
    expectShapeA(res, 401, "invalid_token");
    expect(res.body.error_description).toMatch(/expired/);
    await expectNoNewFile(before, objects);
  });

  it("is single-use: a second PUT is 401 and does not create a second file", async () => {
    const { upload_token } = await openSession(account.memberToken);
    expectStatus(await putBytes(upload_token, bytesOf(100)), 200);
    const before = await counters(account);
    const objects = await objectsOf(account.companyId);
    const again = await putBytes(upload_token, bytesOf(200));
    expectShapeA(again, 401, "invalid_token");
    expect(again.body.error_description).toMatch(/already been used/);
    await expectNoNewFile(before, objects);
  });

  it("creates exactly one file when concurrent PUTs share one token", async () => {
    for (let round = 0; round < 5; round++) {
      const { upload_token } = await openSession(account.memberToken);
      const before = await counters(account);
      const results = await Promise.all(Array.from({ length: 4 }, (_, i) => putBytes(upload_token, bytesOf(3000 + i))));
      noServerError(...results);
      const winners = results.filter((r) => r.status === 200);
      expect(winners, JSON.stringify(results.map((r) => [r.status, r.body]))).toHaveLength(1);
      for (const loser of results.filter((r) => r.status !== 200)) expectShapeA(loser, 401, "invalid_token");
      const after = await counters(account);
      expect(after.files).toBe(before.files + 1);
      expect(after.company_kb).toBe(before.company_kb + 3);
      expect(after.reserved_kb).toBe(0);
      expect((await objectsOf(account.companyId)).length).toBe(after.files);
    }
  });

  it("stays usable after a 411 or 413 (nothing reached storage)", async () => {
    const { upload_token } = await openSession(account.memberToken);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytesOf(100));
        controller.close();
      },
    });
    expectShapeB(await putBytes(upload_token, stream), 411, /Content-Length is required/);
    expectShapeB(
      await putBytes(upload_token, bytesOf(10), { "Content-Length": String(MAX_UPLOAD_BYTES + 1) }),
      413,
      /95 MiB \(99614720 bytes\)/,
    );
    expectStatus(await putBytes(upload_token, bytesOf(100)), 200);
  });
});

describe("sizes and drive space", () => {
  it("refuses a Content-Length over 95 MiB with 413 before reading the body", async () => {
    const account = await createAccount();
    const { upload_token } = await openSession(account.memberToken);
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 65_536;
        controller.enqueue(new Uint8Array(65_536));
      },
    });
    const res = await putBytes(upload_token, stream, { "Content-Length": String(MAX_UPLOAD_BYTES + 1) });
    expectShapeB(res, 413, /exceeds the limit of 95 MiB/);
    expect(pulled).toBeLessThan(1024 * 1024);
    expect(await objectsOf(account.companyId)).toEqual([]);
  });

  it("refuses a file that does not fit the drive allocation: 400, nothing in R2, counters unchanged, token still usable", async () => {
    const account = await createAccount({}, { driveMb: 1 });
    const first = await upload(account.memberToken, bytesOf(600 * 1024));
    const before = await counters(account);
    expect(before).toMatchObject({ company_kb: 600, dept_kb: 600, files: 1, reserved_kb: 0 });
    const objects = await objectsOf(account.companyId);
    expect(objects).toHaveLength(1);

    const { upload_token } = await openSession(account.memberToken);
    const refused = await putBytes(upload_token, bytesOf(500 * 1024));
    expectShapeB(
      refused,
      400,
      /Drive space exceeded: the file needs 500 KB, but only 424 KB of the company's 1 MB drive space are free/,
    );
    expect(await counters(account)).toEqual(before);
    expect(await objectsOf(account.companyId)).toEqual(objects);

    // Exactly the free space fits; the refused token works once there is room.
    expectStatus(await putBytes(upload_token, bytesOf(424 * 1024)), 200);
    expect((await counters(account)).company_kb).toBe(1024);
    expectShapeB(await putBytes((await openSession(account.memberToken)).upload_token, bytesOf(1)), 400, /only 0 KB/);
    const del = await call("deleteFile", `/v1/files/${first.file_id}`, { token: account.memberToken });
    expectStatus(del, 200);
    expectStatus(await putBytes(upload_token, bytesOf(10)), 401); // spent by its successful upload
  });

  it("never overshoots the allocation with concurrent uploads, and keeps the counters exact", async () => {
    const account = await createAccount({}, { driveMb: 1 });
    for (let round = 0; round < 3; round++) {
      const sessions = await Promise.all(Array.from({ length: 6 }, () => openSession(account.memberToken)));
      const results = await Promise.all(sessions.map((s) => putBytes(s.upload_token, bytesOf(300 * 1024 + round))));
      noServerError(...results);
      const ok = results.filter((r) => r.status === 200);
      for (const refused of results.filter((r) => r.status !== 200)) expectShapeB(refused, 400, /Drive space exceeded/);
      const state = await counters(account);
      expect(state.company_kb).toBeLessThanOrEqual(1024);
      expect(state.company_kb).toBe(state.files_kb);
      expect(state.dept_kb).toBe(state.files_kb);
      expect(state.reserved_kb).toBe(0);
      expect((await objectsOf(account.companyId)).length).toBe(state.files);
      expect(ok.length).toBe(3);
      for (const r of ok)
        expectStatus(await call("deleteFile", `/v1/files/${r.body.data.file_id}`, { token: account.memberToken }), 200);
      expect(await counters(account)).toMatchObject({ company_kb: 0, dept_kb: 0, files: 0 });
    }
  });

  it("refuses a body shorter than its Content-Length with 400, leaving nothing behind", async () => {
    // A label for the runtime's own log lines, which the test runner prints and cannot filter.
    console.info(
      "[expected] workerd logs 'fixed-length pipe ended prematurely' and 'Network connection lost' for the aborted R2 put below.",
    );
    const account = await createAccount();
    const { upload_token } = await openSession(account.memberToken);
    const before = await counters(account);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytesOf(50));
        controller.close();
      },
    });
    const res = await putBytes(upload_token, stream, { "Content-Length": "100" });
    noServerError(res);
    expectStatus(res, 400);
    expect(await counters(account)).toEqual(before);
    expect(await objectsOf(account.companyId)).toEqual([]);
  });

  it("keeps the counters exact over uploads and deletes, and frees the R2 object", async () => {
    const account = await createAccount();
    const sizes = [1, 1024, 1025, 5000, 0];
    const ids: string[] = [];
    for (const size of sizes) ids.push((await upload(account.memberToken, bytesOf(size))).file_id);
    expect(await counters(account)).toMatchObject({
      company_kb: 1 + 1 + 2 + 5 + 1,
      dept_kb: 10,
      files_kb: 10,
      files: 5,
    });
    const keys = await objectsOf(account.companyId);
    expect(keys).toHaveLength(5);
    const deleted = await call("deleteFile", `/v1/files/${ids[3]}`, { token: account.memberToken });
    expect(deleted.body).toEqual({ success: true, msg: "File deleted" });
    expect(await counters(account)).toMatchObject({ company_kb: 5, dept_kb: 5, files: 4 });
    expect(await objectsOf(account.companyId)).toHaveLength(4);
    expectShapeB(await call("deleteFile", `/v1/files/${ids[3]}`, { token: account.memberToken }), 404);
    expectShapeB(await call("downloadFile", `/v1/files/${ids[3]}`, { token: account.memberToken }), 404);
    const company = ok(await call("getCompany", `/v1/companies/${account.companyId}`, { token: account.ownerToken }));
    expect(company.body.data.company.drive_space_used_kb).toBe(5);
    const dept = ok(await call("getDepartment", `/v1/departments/${account.deptId}`, { token: account.ownerToken }));
    expect(dept.body.data.storage_used_kb).toBe(5);
  });

  it("cancels an upload whose department is deleted while it streams: 409, nothing kept, space released", async () => {
    const account = await createAccount();
    const deptId = await createDepartment(account.companyId);
    const { upload_token } = await openSession(account.memberToken, { deptid: deptId });
    const { pending, resume } = pausedPut(upload_token, 2048);
    // Wait until the token is claimed (the space reserved), then delete the department.
    await waitForReserved(account, 4);
    expectStatus(await call("deleteDepartment", `/v1/departments/${deptId}`, { token: account.ownerToken }), 200);
    resume();
    const res = await pending;
    expectShapeB(res, 409, /cancelled while its bytes were stored/);
    expect(await counters(account)).toMatchObject({ files: 0, company_kb: 0, reserved_kb: 0 });
    expect(await objectsOf(account.companyId)).toEqual([]);
  });
});

describe("uploads whose token expired: the cron sweep gives their space back", () => {
  /** Sets a claimed session's state directly, as a Worker that died mid-stream leaves it: claimed `claimedAgo` seconds ago with `kb` reserved. */
  async function claimedLongAgo(uploadToken: string, kb: number, claimedAgo: number) {
    await env.DB.prepare("UPDATE upload_sessions SET used_at = unixepoch() - ?, reserved_kb = ? WHERE token_hash = ?")
      .bind(claimedAgo, kb, await sha256Hex(uploadToken))
      .run();
  }

  it("releases a crashed upload's space at the first sweep after its token expired, in every company, and keeps a live reservation", async () => {
    const accounts = [await createAccount({}, { driveMb: 1 }), await createAccount({}, { driveMb: 1 })];
    const probes: string[] = [];
    for (const account of accounts) {
      // All sessions opened first: opening one also runs the company's own release, and this test is about the cron.
      const [probe, crashed, live] = await Promise.all([1, 2, 3].map(() => openSession(account.memberToken)));
      probes.push(probe!.upload_token);
      // Claimed 10 s after its session opened, 600 KB; its token expired a minute ago; its Worker died.
      await claimedLongAgo(crashed!.upload_token, 600, 950);
      await expireIn(crashed!.upload_token, -60);
      // Claimed a minute ago, 300 KB, token valid for 10 more minutes: still streaming.
      await claimedLongAgo(live!.upload_token, 300, 60);
      await expireIn(live!.upload_token, 600);
    }
    for (const [i, account] of accounts.entries()) {
      expectShapeB(
        await putBytes(probes[i]!, bytesOf(400 * 1024)),
        400,
        /only 124 KB of the company's 1 MB drive space are free/,
      );
      expect(await counters(account)).toMatchObject({ reserved_kb: 900, company_kb: 0 });
    }

    await runCronSweep();

    for (const [i, account] of accounts.entries()) {
      // The crashed upload's 600 KB are back; the live upload keeps its 300 KB.
      expectStatus(await putBytes(probes[i]!, bytesOf(400 * 1024)), 200);
      expect(await counters(account)).toMatchObject({ reserved_kb: 300, company_kb: 400, dept_kb: 400, files: 1 });
      expectShapeB(
        await putBytes((await openSession(account.memberToken)).upload_token, bytesOf(400 * 1024)),
        400,
        /only 324 KB/,
      );
    }
  });

  it("keeps a released upload's bytes until the session is pruned a day after its token expired, and never a stored file's", async () => {
    const account = await createAccount();
    const stored = await upload(account.memberToken, bytesOf(3000));
    const unused = await openSession(account.memberToken);
    const { upload_token } = await openSession(account.memberToken);
    const crashed = await sessionOf(upload_token);
    await claimedLongAgo(upload_token, 50, 960);
    await expireIn(upload_token, -60);
    // Its bytes reached R2 before the Worker died (the put finished, the file row was never written).
    const key = `c/${account.companyId}/u${crashed.id}`;
    await env.FILES.put(key, bytesOf(100));

    await runCronSweep();
    // Released, but the bytes stay: an upload claimed just before its token expired may still finish.
    expect(await sessionOf(upload_token)).toEqual({ id: crashed.id, reserved_kb: -50 });
    expect(await counters(account)).toMatchObject({ reserved_kb: 0, company_kb: 3, files: 1 });
    expect(await env.FILES.head(key)).not.toBeNull();

    // A day later every one of these sessions is pruned: the released one's bytes go, the stored file's stay.
    await env.DB.prepare("UPDATE upload_sessions SET expires_at = unixepoch() - 25 * 3600 WHERE company_id = ?")
      .bind(account.companyId)
      .run();
    await runCronSweep();
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM upload_sessions WHERE company_id = ?")
        .bind(account.companyId)
        .first(),
    ).toEqual({ n: 0 });
    expect(await env.FILES.head(key)).toBeNull();
    expect(await objectsOf(account.companyId)).toHaveLength(1);
    expect((await download(account.memberToken, stored.file_id)).bytes).toEqual(bytesOf(3000));
    expectShapeA(await putBytes(upload_token, bytesOf(10)), 401, "invalid_token");
    expectShapeA(await putBytes(unused.upload_token, bytesOf(10)), 401, "invalid_token");
  });

  it("stores an upload still streaming when its token expired: its finish takes the released space back", async () => {
    const account = await createAccount({}, { driveMb: 1 });
    const { upload_token } = await openSession(account.memberToken);
    const put = pausedPut(upload_token, 300 * 1024);
    await waitForReserved(account, 600);
    await expireIn(upload_token, -1);
    await runCronSweep();
    expect(await counters(account)).toMatchObject({ reserved_kb: 0, company_kb: 0, files: 0 });

    put.resume();
    const res = await put.pending;
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data.sha256).toBe(await hexSha256(put.bytes));
    expect(await counters(account)).toMatchObject({
      reserved_kb: 0,
      company_kb: 600,
      dept_kb: 600,
      files_kb: 600,
      files: 1,
    });
    expect((await sessionOf(upload_token)).reserved_kb).toBe(0);
    expect((await download(account.memberToken, res.body.data.file_id)).bytes).toEqual(put.bytes);
  });

  it("refuses an upload that finished after its token expired once its space was taken: 409, bytes deleted, counters exact", async () => {
    const account = await createAccount({}, { driveMb: 1 });
    const { upload_token } = await openSession(account.memberToken);
    const other = await openSession(account.memberToken);
    const put = pausedPut(upload_token, 300 * 1024);
    await waitForReserved(account, 600);
    await expireIn(upload_token, -1);
    await runCronSweep();
    // The released space goes to another upload meanwhile.
    expectStatus(await putBytes(other.upload_token, bytesOf(500 * 1024)), 200);

    put.resume();
    const res = await put.pending;
    expectShapeB(
      res,
      409,
      /finished after its token expired, and the 600 KB it had reserved were given back meanwhile: only 524 KB of the company's 1 MB/,
    );
    expect(await counters(account)).toMatchObject({
      reserved_kb: 0,
      company_kb: 500,
      dept_kb: 500,
      files_kb: 500,
      files: 1,
    });
    expect(await objectsOf(account.companyId)).toHaveLength(1);
    expectShapeA(await putBytes(upload_token, bytesOf(10)), 401, "invalid_token");
  });

  it("keeps the quota and counters exact, with no orphan object, when the sweep races finishing uploads", async () => {
    const account = await createAccount({}, { driveMb: 1 });
    // Start times (ms) by round, so that the sweep lands before, between and after the others.
    const starts: Array<[sweep: number, fresh: number, late: number]> = [
      [0, 0, 0],
      [0, 20, 20],
      [0, 20, 0],
      [20, 0, 0],
      [20, 0, 20],
      [0, 0, 20],
    ];
    const after = <T>(ms: number, start: () => Promise<T>) => new Promise<void>((r) => setTimeout(r, ms)).then(start);
    for (const [sweepAt, freshAt, resumeAt] of starts) {
      const [late1, late2, fresh] = await Promise.all([1, 2, 3].map(() => openSession(account.memberToken)));
      const puts = [late1!, late2!].map((s) => pausedPut(s.upload_token, 200 * 1024));
      await waitForReserved(account, 800);
      for (const s of [late1!, late2!]) await expireIn(s.upload_token, -1);
      // The sweep, a new 400 KB upload and the two late finishes (400 KB each) race; 1024 KB hold two of them.
      const [, ...results] = await Promise.all([
        after(sweepAt, runCronSweep),
        after(freshAt, () => putBytes(fresh!.upload_token, bytesOf(400 * 1024))),
        ...puts.map((p) => after(resumeAt, async () => (p.resume(), p.pending))),
      ]);
      noServerError(...results);
      for (const r of results) expect([200, 400, 409], JSON.stringify(r.body)).toContain(r.status);
      const ok = results.filter((r) => r.status === 200);
      const state = await counters(account);
      expect(state).toMatchObject({
        reserved_kb: 0,
        company_kb: 400 * ok.length,
        dept_kb: state.files_kb,
        files: ok.length,
      });
      expect(state.company_kb).toBeLessThanOrEqual(1024);
      expect(state.files_kb).toBe(state.company_kb);
      expect(await objectsOf(account.companyId)).toHaveLength(ok.length);
      for (const r of ok)
        expectStatus(await call("deleteFile", `/v1/files/${r.body.data.file_id}`, { token: account.memberToken }), 200);
    }
  });
});

describe("session input", () => {
  let token: string;
  let companyId: number;
  beforeAll(async () => {
    const account = await createAccount();
    token = account.memberToken;
    companyId = account.companyId;
  });

  const bad: Array<[Fields, RegExp]> = [
    [{}, /filename is required/],
    [{ filename: "" }, /filename must not be empty/],
    [{ filename: "   " }, /filename must not be empty/],
    [{ filename: "a/b.pdf" }, /filename must be a file name without a path/],
    [{ filename: "C:\\Users\\x.pdf" }, /filename must be a file name without a path/],
    [{ filename: ".." }, /filename must not be \. or \.\./],
    [{ filename: "a\nb.pdf" }, /filename must not contain control characters/],
    [{ filename: "evil\u202Efdp.exe" }, /bidirectional/],
    [{ filename: `${"x".repeat(252)}.pdf` }, /filename must be at most 255 characters/],
    [{ filename: 42 }, /filename must be a string/],
    [{ filename: "a.pdf", content_type: "pdf" }, /content_type must be a media type/],
    [{ filename: "a.pdf", content_type: "text/html\r\nX-Evil: 1" }, /content_type/],
    [{ filename: "a.pdf", content_type: `a/${"b".repeat(300)}` }, /content_type must be at most 255/],
    [{ filename: "a.pdf", deptid: 0 }, /deptid must be a positive integer/],
    [{ filename: "a.pdf", folder_id: "1" }, /folder_id/],
    [{ filename: "a.pdf", size: 3 }, /Unknown field: size/],
  ];
  for (const [body, msg] of bad) {
    it(`refuses ${JSON.stringify(body).slice(0, 60)} with 400`, async () => {
      expectShapeB(await call("createUploadSession", "/v1/uploads", { token, body }), 400, msg);
    });
  }

  it("accepts 255 characters, trims and normalises the name to NFC", async () => {
    const long = `${"x".repeat(251)}.pdf`;
    const { upload_token } = await openSession(token, { filename: long });
    expect(ok(await putBytes(upload_token, bytesOf(5))).body.data.file_name).toBe(long);
    const { upload_token: t2 } = await openSession(token, { filename: "  Jose\u0301.pdf  " });
    expect(ok(await putBytes(t2, bytesOf(5))).body.data.file_name).toBe("José.pdf");
  });

  it("refuses a department or folder outside the company with 400 naming the field", async () => {
    const otherDept = await createDepartment(1);
    expectShapeB(
      await call("createUploadSession", "/v1/uploads", { token, body: { filename: "a.pdf", deptid: otherDept } }),
      400,
      new RegExp(`deptid ${otherDept} is not a department of this company`),
    );
    const folder = ok(
      await call("createFolder", "/v1/folders", {
        token: await tokenFor("demo-owner"),
        body: { folder_name: uniqueWord("F") },
      }),
    );
    const folderId = folder.body.data.folderid;
    expectShapeB(
      await call("createUploadSession", "/v1/uploads", { token, body: { filename: "a.pdf", folder_id: folderId } }),
      400,
      new RegExp(`folder_id ${folderId} is not a folder of this company`),
    );
    expectShapeB(
      await call("createUploadSession", "/v1/uploads", { token, body: { filename: "a.pdf", folder_id: 999999999 } }),
      400,
      /folder_id 999999999/,
    );
    expect(companyId).not.toBe(1);
  });

  it("refuses a PUT whose Content-Length is not a number with 400", async () => {
    const { upload_token } = await openSession(token);
    const res = await readResult(
      await exports.default.fetch(
        new Request(`${BASE}/v1/uploads`, {
          method: "PUT",
          headers: { "X-Upload-Token": upload_token, "Content-Length": "abc" },
          body: "abc",
        }),
      ),
      "uploadFileBytes",
    );
    noServerError(res);
    expect([400, 411]).toContain(res.status);
  });
});

describe("attachments", () => {
  let account: TestAccount;
  let fileId: string;
  beforeAll(async () => {
    account = await createAccount();
    fileId = (await upload(account.memberToken, bytesOf(12_697), { filename: "cert.pdf" })).file_id;
  });

  it("is idempotent: attaching twice answers 200 and keeps one attachment", async () => {
    const item = await createItem(account.memberToken);
    const path = `/v1/items/${item.item_id}/attachments`;
    expectStatus(await call("attachFile", path, { token: account.memberToken, body: { file_id: fileId } }), 201);
    const again = await call("attachFile", path, { token: account.memberToken, body: { file_id: fileId } });
    expectStatus(again, 200);
    expect(again.body).toMatchObject({
      success: true,
      msg: "File already attached",
      data: { file_id: fileId, size: "12.4 KB" },
    });
    expect(ok(await call("listAttachments", path, { token: account.memberToken })).body.data).toHaveLength(1);
  });

  it("lists attachments in the order attached; a file may be on several items", async () => {
    const item = await createItem(account.memberToken);
    const other = await createItem(account.memberToken);
    const second = (await upload(account.memberToken, bytesOf(100), { filename: "b.txt" })).file_id;
    const path = `/v1/items/${item.item_id}/attachments`;
    for (const id of [second, fileId])
      expectStatus(await call("attachFile", path, { token: account.memberToken, body: { file_id: id } }), 201);
    expectStatus(
      await call("attachFile", `/v1/items/${other.item_id}/attachments`, {
        token: account.memberToken,
        body: { file_id: fileId },
      }),
      201,
    );
    const list = ok(await call("listAttachments", path, { token: account.memberToken }));
    expect(list.body.data.map((a) => [a.file_id, a.size])).toEqual([
      [second, "100 B"],
      [fileId, "12.4 KB"],
    ]);
    expect(
      ok(await call("listAttachments", `/v1/items/${other.item_id}/attachments`, { token: account.memberToken })).body
        .data,
    ).toHaveLength(1);
    expect(
      ok(
        await call("listAttachments", `/v1/items/${(await createItem(account.memberToken)).item_id}/attachments`, {
          token: account.memberToken,
        }),
      ).body.data,
    ).toEqual([]);
  });

  it("refuses an unknown or malformed file_id with 400 and an unknown item with 404", async () => {
    const item = await createItem(account.memberToken);
    const path = `/v1/items/${item.item_id}/attachments`;
    expectShapeB(
      await call("attachFile", path, { token: account.memberToken, body: { file_id: "fil_AAAAAAAAAAAAAAAAAAAAAA" } }),
      400,
      /file_id fil_AAAAAAAAAAAAAAAAAAAAAA is not a file of this company/,
    );
    expectShapeB(
      await call("attachFile", path, { token: account.memberToken, body: { file_id: "nope" } }),
      400,
      /file_id must be a file id/,
    );
    expectShapeB(await call("attachFile", path, { token: account.memberToken, body: {} }), 400, /file_id is required/);
    expectShapeB(
      await call("attachFile", path, { token: account.memberToken, body: { file_id: 5 } }),
      400,
      /file_id must be a string/,
    );
    expectShapeB(
      await call("attachFile", "/v1/items/999999999/attachments", {
        token: account.memberToken,
        body: { file_id: fileId },
      }),
      404,
      /Item not found/,
    );
    expectShapeB(
      await call("listAttachments", "/v1/items/999999999/attachments", { token: account.memberToken }),
      404,
      /Item not found/,
    );
    expectShapeB(
      await call("listAttachments", "/v1/items/abc/attachments", { token: account.memberToken }),
      400,
      /item_id must be a positive integer/,
    );
  });

  it(`holds at most ${MAX_ATTACHMENTS_PER_ITEM} files per item`, async () => {
    const item = await createItem(account.memberToken);
    const ids: number[] = [];
    for (let i = 0; i < MAX_ATTACHMENTS_PER_ITEM; i++) {
      const publicId = `fil_cap${String(item.item_id).padStart(8, "0")}${String(i).padStart(7, "0")}`;
      const row = await env.DB.prepare(
        "INSERT INTO files (public_id, company_id, dept_id, file_name, content_type, size_bytes, sha256, r2_key, created_by) VALUES (?, ?, ?, 'x', 'a/b', 0, '', 'k', 1) RETURNING id",
      )
        .bind(publicId, account.companyId, account.deptId)
        .first<{ id: number }>();
      ids.push(row!.id);
    }
    await env.DB.batch(
      ids.map((id) =>
        env.DB.prepare("INSERT INTO item_files (item_id, file_id, company_id) VALUES (?, ?, ?)").bind(
          item.item_id,
          id,
          account.companyId,
        ),
      ),
    );
    const res = await call("attachFile", `/v1/items/${item.item_id}/attachments`, {
      token: account.memberToken,
      body: { file_id: fileId },
    });
    expectShapeB(res, 400, new RegExp(`already has ${MAX_ATTACHMENTS_PER_ITEM} attachments`));
    expect(
      ok(await call("listAttachments", `/v1/items/${item.item_id}/attachments`, { token: account.memberToken })).body
        .data,
    ).toHaveLength(MAX_ATTACHMENTS_PER_ITEM);
    await env.DB.prepare("DELETE FROM item_files WHERE item_id = ?").bind(item.item_id).run();
    await env.DB.prepare(`DELETE FROM files WHERE id IN (${ids.join(",")})`).run();
  });

  it("detaches (the file stays), refuses to delete an attached file with 409, and item deletion keeps the file", async () => {
    const id = (await upload(account.memberToken, bytesOf(3000))).file_id;
    const item = await createItem(account.memberToken);
    const path = `/v1/items/${item.item_id}/attachments`;
    await call("attachFile", path, { token: account.memberToken, body: { file_id: id } });
    expectShapeB(
      await call("deleteFile", `/v1/files/${id}`, { token: account.memberToken }),
      409,
      /attached to 1 item: detach it first/,
    );
    const detached = await call("detachFile", `${path}/${id}`, { token: account.memberToken });
    expect(detached.body).toEqual({ success: true, msg: "File detached" });
    expectShapeB(
      await call("detachFile", `${path}/${id}`, { token: account.memberToken }),
      404,
      /Attachment not found/,
    );
    expectShapeB(
      await call("detachFile", `/v1/items/999999999/attachments/${id}`, { token: account.memberToken }),
      404,
      /Item not found/,
    );
    expectStatus(await download(account.memberToken, id), 200);

    await call("attachFile", path, { token: account.memberToken, body: { file_id: id } });
    expectStatus(await call("deleteItem", `/v1/items/${item.item_id}`, { token: account.memberToken }), 200);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM item_files WHERE item_id = ?")
      .bind(item.item_id)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
    const info = ok(await call("getFileInfo", `/v1/files/${id}/info`, { token: account.memberToken }));
    expect(info.body.data.attachments).toBe(0);
    expectStatus(await call("deleteFile", `/v1/files/${id}`, { token: account.memberToken }), 200);
  });

  it("never leaves an attachment to a deleted file when attach and delete race", async () => {
    for (let round = 0; round < 6; round++) {
      const id = (await upload(account.memberToken, bytesOf(10))).file_id;
      const item = await createItem(account.memberToken);
      const [attach, del] = await Promise.all([
        call("attachFile", `/v1/items/${item.item_id}/attachments`, {
          token: account.memberToken,
          body: { file_id: id },
        }),
        call("deleteFile", `/v1/files/${id}`, { token: account.memberToken }),
      ]);
      noServerError(attach, del);
      const file = await fileRow(id);
      if (del.status === 200) {
        expect(file).toBeNull();
        expectStatus(attach, 400);
      } else {
        expectStatus(del, 409);
        expectStatus(attach, 201);
        expect(file).not.toBeNull();
      }
    }
  });

  it("counts files in the department and company holdings", async () => {
    const deptId = await createDepartment(account.companyId);
    const { file_id } = await upload(account.memberToken, bytesOf(0), { deptid: deptId });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${deptId}`, { token: account.ownerToken }),
      400,
      /still holds 1 KB of files/,
    );
    expectStatus(await call("deleteFile", `/v1/files/${file_id}`, { token: account.memberToken }), 200);
    expectStatus(await call("deleteDepartment", `/v1/departments/${deptId}`, { token: account.ownerToken }), 200);

    // A second company of the account holding one (empty) file cannot be deleted until it is gone.
    const company = ok(
      await call("createCompany", "/v1/companies", {
        token: account.ownerToken,
        body: { company_name: uniqueWord("Co"), documents_limit: 1, contacts_limit: 1, drive_space: 0.01 },
      }),
    );
    const companyId = company.body.data.company.companyid;
    const dept = await env.DB.prepare("SELECT id FROM departments WHERE company_id = ?")
      .bind(companyId)
      .first<{ id: number }>();
    await env.DB.prepare(
      "INSERT INTO files (public_id, company_id, dept_id, file_name, content_type, size_bytes, sha256, r2_key, created_by) VALUES (?, ?, ?, 'x', 'a/b', 0, '', 'k', 1)",
    )
      .bind(`fil_co${String(companyId).padStart(16, "0")}`, companyId, dept!.id)
      .run();
    expectShapeB(
      await call("deleteCompany", `/v1/companies/${companyId}`, { token: account.ownerToken }),
      400,
      /still holds 1 file/,
    );
    await env.DB.prepare("DELETE FROM files WHERE company_id = ?").bind(companyId).run();
    expectStatus(await call("deleteCompany", `/v1/companies/${companyId}`, { token: account.ownerToken }), 200);
  });
});

describe("tenancy", () => {
  let a: TestAccount;
  let b: TestAccount;
  let fileId: string;
  let itemA: DataOf<"getItem">;
  beforeAll(async () => {
    [a, b] = await Promise.all([createAccount(), createAccount()]);
    fileId = (await upload(a.memberToken, bytesOf(500), { filename: "secret.pdf" })).file_id;
    itemA = await createItem(a.memberToken);
    await call("attachFile", `/v1/items/${itemA.item_id}/attachments`, {
      token: a.memberToken,
      body: { file_id: fileId },
    });
  });

  it("hides company A's file from company B: download, info, delete are 404", async () => {
    expectShapeB(await call("downloadFile", `/v1/files/${fileId}`, { token: b.memberToken }), 404, /File not found/);
    expectShapeB(await call("getFileInfo", `/v1/files/${fileId}/info`, { token: b.memberToken }), 404);
    expectShapeB(await call("deleteFile", `/v1/files/${fileId}`, { token: b.memberToken }), 404);
    expect(ok(await call("listFiles", "/v1/files", { token: b.memberToken })).body.data).toEqual([]);
    expectStatus(await download(a.memberToken, fileId), 200);
  });

  it("refuses attaching A's file to B's item (400) and touching A's item from B (404)", async () => {
    const itemB = await createItem(b.memberToken);
    expectShapeB(
      await call("attachFile", `/v1/items/${itemB.item_id}/attachments`, {
        token: b.memberToken,
        body: { file_id: fileId },
      }),
      400,
      /not a file of this company/,
    );
    expectShapeB(
      await call("attachFile", `/v1/items/${itemA.item_id}/attachments`, {
        token: b.memberToken,
        body: { file_id: fileId },
      }),
      404,
      /Item not found/,
    );
    expectShapeB(
      await call("listAttachments", `/v1/items/${itemA.item_id}/attachments`, { token: b.memberToken }),
      404,
      /Item not found/,
    );
    expectShapeB(
      await call("detachFile", `/v1/items/${itemA.item_id}/attachments/${fileId}`, { token: b.memberToken }),
      404,
    );
    expect(
      ok(await call("listAttachments", `/v1/items/${itemA.item_id}/attachments`, { token: a.memberToken })).body.data,
    ).toHaveLength(1);
  });

  it("binds an upload token to its company: B's token uploads into B", async () => {
    const data = await upload(b.memberToken, bytesOf(10));
    expect((await fileRow(data.file_id))!.company_id).toBe(b.companyId);
    expectShapeB(await call("downloadFile", `/v1/files/${data.file_id}`, { token: a.memberToken }), 404);
  });
});

describe("scopes", () => {
  it("needs drive:write to open a session, attach and delete; drive:read to list and download", async () => {
    const account = await createAccount();
    const fileId = (await upload(account.memberToken, bytesOf(10))).file_id;
    const item = await createItem(account.memberToken);
    const read = await tokenFor("demo-owner", "drive:read items:write items:read");
    const write = await tokenFor("demo-owner", "drive:write items:read");
    const cases: Array<[string, string, string, unknown?]> = [
      ["POST", "/v1/uploads", "drive:write", { filename: "a.pdf" }],
      ["POST", `/v1/items/${item.item_id}/attachments`, "drive:write", { file_id: fileId }],
      ["DELETE", `/v1/items/${item.item_id}/attachments/${fileId}`, "drive:write"],
      ["DELETE", `/v1/files/${fileId}`, "drive:write"],
    ];
    for (const [method, path, scope, body] of cases) {
      const res = await callRaw(method, path, { token: read, body });
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe(scope);
    }
    const reads = [
      ["listAttachments", `/v1/items/${item.item_id}/attachments`],
      ["downloadFile", `/v1/files/${fileId}`],
      ["getFileInfo", `/v1/files/${fileId}/info`],
      ["listFiles", "/v1/files"],
    ] as const;
    for (const [operation, path] of reads) {
      const res = await call(operation, path, { token: write });
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("drive:read");
    }
    // items:read alone does not read attachments.
    const readonly = await call("listAttachments", `/v1/items/1/attachments`, {
      token: await tokenFor("demo-readonly"),
    });
    expectShapeA(readonly, 403, "insufficient_scope");
    // Without a bearer token at all: 401.
    expectShapeA(
      await call("createUploadSession", "/v1/uploads", { body: { filename: "a.pdf" } }),
      401,
      "invalid_token",
    );
    expectShapeA(await call("downloadFile", `/v1/files/${fileId}`), 401, "invalid_token");
  });
});

describe("OpenAPI", () => {
  it("documents PUT /v1/uploads with the upload-token scheme and a binary body, and the download as binary", async () => {
    const doc = await openApiDocument();
    expect(doc.components.securitySchemes.uploadToken).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "X-Upload-Token",
    });
    const put = doc.paths["/v1/uploads"].put;
    expect(put.security).toEqual([{ uploadToken: [] }]);
    expect(put.requestBody.content["application/octet-stream"].schema).toEqual({ type: "string", format: "binary" });
    for (const status of ["200", "400", "401", "411", "413"]) expect(put.responses[status], status).toBeDefined();
    expect(doc.paths["/v1/uploads"].post.security).toEqual([{ oauth2: ["drive:write"] }]);
    const get = doc.paths["/v1/files/{file_id}"].get;
    expect(Object.keys(get.responses)).toEqual(expect.arrayContaining(["200", "206", "304", "416"]));
    expect(doc.paths["/v1/items/{item_id}/attachments"].get.security).toEqual([{ oauth2: ["drive:read"] }]);
  });
});
