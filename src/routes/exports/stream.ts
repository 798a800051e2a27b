import type { Context } from "hono";
import type { AppBindings } from "../../env";
import { csvRecord } from "../../lib/csv";
import type { ExportSource } from "../../records/exports";
import type { ExportFormat } from "../../schemas/exports";

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8; header=present",
  ndjson: "application/x-ndjson",
};

/**
 * The export as a response. The body is a stream that reads a page only when the client has taken
 * the previous one (one page ahead at most), so memory does not grow with the number of rows. A
 * D1 error after the first byte cannot change the status any more: the stream is errored instead,
 * which ends the transfer without its terminating chunk, so the client sees a truncated body rather
 * than a complete-looking file; the error is logged with the request id. HEAD reads no page.
 */
export function exportResponse<R>(
  c: Context<AppBindings>,
  name: string,
  format: ExportFormat,
  source: ExportSource<R>,
): Response {
  const headers = {
    "Content-Type": CONTENT_TYPES[format],
    "Content-Disposition": `attachment; filename="${name}-${source.today.replace(/-/g, "")}.${format}"`,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
  };
  if (c.req.method === "HEAD") return new Response(null, { status: 200, headers });
  const encoder = new TextEncoder();
  const line = format === "csv" ? (r: R) => csvRecord(source.csv(r)) : (r: R) => `${JSON.stringify(source.json(r))}\n`;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (format === "csv") controller.enqueue(encoder.encode(csvRecord(source.columns)));
    },
    async pull(controller) {
      try {
        const { records, last } = await source.nextPage();
        if (records.length > 0) controller.enqueue(encoder.encode(records.map(line).join("")));
        sent += records.length;
        if (last) controller.close();
      } catch (err) {
        console.error(
          JSON.stringify({
            level: "error",
            msg: "export stream failed: the transfer was cut short",
            request_id: c.get("requestId"),
            operation: c.get("operationId"),
            records_sent: sent,
            error: String((err as Error)?.stack ?? err),
          }),
        );
        controller.error(err);
      }
    },
  });
  return new Response(body, { status: 200, headers });
}
