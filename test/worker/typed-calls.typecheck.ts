// Compiled by `tsc` in `npm test`, never run: proves that the worker tests' calls are typed by
// operation (support/http.ts, types from support/api.ts). Each `@ts-expect-error` must meet an
// error; should the answers loosen (a `Record<string, any>` body, an `any` helper), the directive is
// unused and tsc fails.
import { call, callRaw, expectShapeA, expectShapeB, expectStatus, ok, type DataOf } from "./helpers";

export async function typedCalls(token: string) {
  const item = await call("getItem", "/v1/items/1", { token });
  // @ts-expect-error before a status check the answer may be an error, which has no data
  void item.body.data;

  expectStatus(item, 200);
  const title: string = item.body.data.title;
  // @ts-expect-error a misspelt field of a typed answer
  void item.body.data.titel;
  // @ts-expect-error a field's type: expiry_date is a string
  const expiry: number = item.body.data.expiry_date;

  const created = ok(await call("createItem", "/v1/items", { token, body: { title: "x", expiry_date: "2030-01-01" } }));
  void created.body.data.item_id;
  // @ts-expect-error a misspelt field of a 2xx answer
  void created.body.data.itemid;

  const list = ok(await call("listItems", "/v1/items?limit=1", { token }));
  void list.body.meta.total;
  // @ts-expect-error a list's entries are read by index, not as one item
  void list.body.data.title;

  const missing = await call("getItem", "/v1/items/999999999", { token });
  expectShapeB(missing, 404);
  const msg: string = missing.body.msg;
  // @ts-expect-error a Shape B error has no error code (that is Shape A)
  void missing.body.error;

  const refused = await call("listContacts", "/v1/contacts", {});
  expectShapeA(refused, 401, "invalid_token");
  const description: string = refused.body.error_description;
  // @ts-expect-error a Shape A error has no msg
  void refused.body.msg;

  // @ts-expect-error an operation that does not exist
  await call("getItems", "/v1/items/1", { token });

  const raw = await callRaw("GET", "/no/such/path");
  // @ts-expect-error an answer no operation describes is unknown until a shape check
  void raw.body.msg;

  const contact: DataOf<"getContact"> | undefined = undefined;
  // @ts-expect-error DataOf names an operation's data: a contact has no title
  void contact?.title;

  return [title, expiry, msg, description];
}
