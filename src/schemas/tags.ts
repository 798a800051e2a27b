import { z } from "@hono/zod-openapi";
import { searchPageEnvelope, paginationQuery, requiredText, searchQuery } from "../lib/schemas";

/** The most tags an item may carry (and the most entries `PUT /v1/items/{item_id}/tags` takes). */
export const MAX_TAGS_PER_ITEM = 20;
/** The longest tag name, in UTF-16 code units of the trimmed NFC text. */
export const MAX_TAG_LENGTH = 50;

export const TagSchema = z
  .object({
    tag_id: z.number().int().openapi({ example: 4 }),
    name: z.string().openapi({
      example: "Insurance",
      description: "As first spelled in the company (see PUT /v1/items/{item_id}/tags).",
    }),
    items_count: z.number().int().openapi({
      example: 3,
      description: "Items carrying the tag; always at least 1 in the list (unused tags are removed).",
    }),
  })
  .openapi("Tag");

const tagName = requiredText("tag", MAX_TAG_LENGTH).openapi({ example: "Insurance" });

export const SetItemTagsSchema = z
  .strictObject({
    tags: z
      .array(tagName)
      .max(MAX_TAGS_PER_ITEM, {
        error: `tags must hold at most ${MAX_TAGS_PER_ITEM} entries (an item has at most ${MAX_TAGS_PER_ITEM} tags)`,
      })
      .openapi({
        example: ["Insurance", "Car"],
        description: `The item's complete new list of tags, in order; [] removes them all. At most ${MAX_TAGS_PER_ITEM} entries, each 1 to ${MAX_TAG_LENGTH} characters once trimmed and NFC-normalised, no control characters. Entries equal case-insensitively (Unicode case folding: "Straße" = "STRASSE") collapse to the first.`,
      }),
  })
  .openapi("SetItemTags");

export const ItemTagNames = z.array(z.string()).openapi({
  example: ["Insurance", "Car"],
  description: "The item's tag names now, in the order given, each in the company's stored spelling.",
});

export const ListTagsQuery = z.object({
  ...paginationQuery(200, 200),
  q: searchQuery.openapi({
    description:
      "Substring of the tag name, compared case-insensitively (Unicode case folding); " +
      "% and _ are plain characters.",
  }),
});

export const TagListEnvelope = searchPageEnvelope(TagSchema, "TagList");

export type TagOutput = z.infer<typeof TagSchema>;
export type SetItemTagsInput = z.infer<typeof SetItemTagsSchema>;
export type ListTagsInput = z.infer<typeof ListTagsQuery>;
