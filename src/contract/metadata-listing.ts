import type { JsonObject } from './json.js';
import type { StorageAdapter, StorageEntry } from './storage.js';

/**
 * Metadata listing: an optional capability a store may declare (`capabilities.metadataListing`)
 * by carrying `listWhereMetadata`. It is `list(prefix)` with the keys left out whose value the
 * store knows cannot match: a store that indexes its documents' metadata (postgresStorage, in a
 * column its write statements maintain) answers "the newest checkpoints whose metadata says…"
 * without the caller reading every document.
 *
 * What a value's metadata is: a value that is a JSON object with a `metadata` member that is an
 * object, and no `metadata_blob` member (metadata held in another form, as a LangGraph checkpoint
 * of a non-JSON serializer holds it), has that member as its metadata; any other JSON object
 * holds empty metadata (`{}`); a value the store cannot read as JSON (bytes that are not JSON, a
 * content-chunk envelope, which names the document's chunks, ciphertext) has unknown metadata.
 *
 * `listWhereMetadata(prefix, contains, { descending })` yields, in `list`'s order (or its reverse
 * with `descending`: a caller after the newest few stops early), every key under `prefix`
 * except those whose metadata is known and does not contain `contains` (JSON containment, as
 * PostgreSQL's `jsonb @>`: each member of `contains` is in the metadata, objects member by member,
 * arrays as subsets). It may yield more (a metadata it does not know, a containment that is not an
 * equality, a store that leaves nothing out), never less: callers read what it yields and check it
 * themselves. Metadata whose JSON revives into other values when read (an object with an `lc`
 * member, as LangChain serializes its classes) counts as unknown.
 *
 * A wrapper that changes the bytes it stores (encryptedStorage) must not declare it: the inner
 * store would answer about what it holds, not about what the wrapper's callers wrote (ciphertext
 * is no JSON, so such an answer still leaves nothing out, but it says nothing either).
 */
export interface MetadataListing extends StorageAdapter {
  listWhereMetadata(prefix: string, contains: JsonObject, options?: MetadataListingOptions): AsyncIterable<StorageEntry>;
}

/** Options of {@link MetadataListing.listWhereMetadata}. */
export interface MetadataListingOptions {
  /** Last key first (descending code-unit order). @default false */
  readonly descending?: boolean;
}

/** The store's metadata listing, when it declares one: else undefined (callers use `list` and read every value). */
export function metadataListingOf(store: StorageAdapter): MetadataListing['listWhereMetadata'] | undefined {
  const listing = (store as Partial<MetadataListing>).listWhereMetadata;
  return store.capabilities?.metadataListing === true && typeof listing === 'function' ? listing.bind(store) : undefined;
}
